// Package faultcap names what a node backend can do for the fault kinds: the
// capabilities a kind needs (nemesis.Kind.Needs) and a node declares
// (Capabilities() of cluster.Node and sshnode.Node). It is a leaf, so that
// the backends and the nemesis share one vocabulary without importing each
// other: a kind a node cannot serve is refused before the run, in one line
// that quotes the capability's doc.
package faultcap

import "slices"

// Capability is something a node backend can do for the fault kinds.
type Capability string

// The capabilities. Each has its doc in docs: what it lets a node do and how
// a node gets it (the refusal's line and docs/faults.md say it).
const (
	IPTables   Capability = "iptables"
	Clock      Capability = "clock"
	Signals    Capability = "signals"
	Restart    Capability = "restart"
	Power      Capability = "power"
	Membership Capability = "membership"
	// NetDelay and NetRate are the shaping of a node's links (Shape): added
	// latency with jitter, and a bandwidth limit. A backend declares them
	// after probing the node's kernel (netem, or NFQUEUE with the shaper
	// binary for delay; HTB for rate).
	NetDelay Capability = "net-delay"
	NetRate  Capability = "net-rate"
	// CPU, Stall and DiskLatency are the slowness of a node's own
	// resources: a CPU quota, JVM stalls the node times itself, and a slow
	// disk under its data (the lazy filesystem).
	CPU         Capability = "cpu"
	Stall       Capability = "stall"
	DiskLatency Capability = "disk-latency"
	// Restore is a snapshot of the node's data taken and later put back
	// while Cassandra is down, as an operator restores a node from its
	// backup: it needs the node's data directories and its process.
	Restore Capability = "restore"
	// PaxosUpgrade is switching a node's paxos_variant from v1 to v2 and
	// then its paxos_state_purging from legacy to repaired while it runs
	// (cassandra.yaml and its StorageProxy and StorageService MBeans, or a
	// restart) and repairing Paxos: a one-way change an operator makes
	// once, so a node offers it only on a cluster started to be upgraded.
	PaxosUpgrade Capability = "paxos-upgrade"
	// Maintenance is an operator's routine work on a node: nodetool flush,
	// compact (all of a table's SSTables or chosen ones), repair
	// --paxos-only, autocompaction off and on, and a table's
	// gc_grace_seconds, with the node's SSTables listed. It needs nodetool
	// and the data directory's listing on the node.
	Maintenance Capability = "maintenance"
)

var docs = map[Capability]string{
	IPTables: "iptables as root (a Docker node always, paused too; a host over SSH as root or with sudo -n)",
	Clock:    "move the Cassandra JVM's clock (libfaketime in a Docker node, paused too; over SSH libfaketime on the JVM, or --ssh-clock-step)",
	Signals:  "freeze and resume the node or its JVM (SIGSTOP/SIGCONT; a Docker node also docker pause)",
	Restart:  "kill Cassandra and start it again (a Docker node always; a host over SSH with --ssh-start-cmd)",
	Power:    "cut the node's power, losing its unsynced writes (a cluster of `lockcheck cluster up --lazyfs`)",
	Membership: "bootstrap, decommission, replace and remove nodes (a Docker cluster with a spare node: " +
		"`cluster up --nodes 4 --spares 1`)",
	NetDelay: "delay the packets a node sends to chosen peers, with jitter (tc netem where the kernel has it; " +
		"else, in a Docker node, lockcheck-shaper over iptables' NFQUEUE, beside this lockcheck or LOCKCHECK_SHAPER_BIN)",
	CPU:         "throttle the node's processes to a share of one core (a cgroup CPU quota: docker update on a Docker node)",
	Stall:       "stop the Cassandra JVM for a stall the node times itself (SIGSTOP, and SIGCONT from the node after it: a Docker node)",
	DiskLatency: "delay each write and fsync of the node's data (its lazy filesystem: a cluster of `lockcheck cluster up --lazyfs`)",
	Restore: "snapshot the node's data (nodetool snapshot) and later put the snapshot back into its data directories " +
		"while Cassandra is down (a Docker node)",
	PaxosUpgrade: "switch paxos_variant from v1 to v2, repair Paxos, switch paxos_state_purging from legacy to repaired and repair " +
		"again (a Docker cluster of 4.1 or later started on v1 with `lockcheck cluster up --paxos-upgrade`; the next run's heal " +
		"switches it back)",
	Maintenance: "flush, compact (all of a table's SSTables, or chosen ones by name), repair Paxos, switch autocompaction and " +
		"set a table's gc_grace_seconds (nodetool and a listing of the data directory: a Docker node)",
	NetRate: "limit the bandwidth of what a node sends to chosen peers (tc htb as root: a Docker node always, a host over SSH as root or with sudo -n)",
}

// Doc says what c lets a node do and how a node gets it ("" for a
// capability nothing declares).
func Doc(c Capability) string { return docs[c] }

// All are every declared capability: Baseline's first, then the others by
// name (the fault reference's order).
func All() []Capability {
	out := slices.Clone(Baseline)
	var rest []Capability
	for c := range docs {
		if !slices.Contains(out, c) {
			rest = append(rest, c)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

// Baseline are the capabilities every node backend lockcheck ships can
// offer (a Docker node always, a host over SSH when set up for them): `all`
// is the kinds that need no more than these and no pins.
var Baseline = []Capability{IPTables, Clock, Signals, Restart}

// Missing are the capabilities of need that have lacks.
func Missing(need, have []Capability) []Capability {
	var out []Capability
	for _, c := range need {
		if !slices.Contains(have, c) {
			out = append(out, c)
		}
	}
	return out
}
