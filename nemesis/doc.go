// Package nemesis injects faults: partitions, packet loss, node and JVM
// pauses, crashes, node clock skew, client pauses and client clock skew. Each
// fault kind is a Kind (one file each) listed in the table of kinds.go; the
// scheduler deals kinds from a seeded deck; Heal and the kinds' Resets bring
// nodes and clients back to a known state. Every fault is recorded in the
// history with the vocabulary of package history (history.StartF, StopF).
package nemesis
