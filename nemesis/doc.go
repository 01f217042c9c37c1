// Package nemesis injects faults: partitions, node and JVM pauses, crashes,
// node clock skew, client pauses and client clock skew; it schedules them and
// heals everything at the end of a run. Every fault is recorded in the history.
package nemesis
