package scenario

import (
	"encoding/json"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// The ticket rows (issue 50): a known Cassandra bug shown black-box, a row
// named after its ticket on the buggy release and one on the fixed
// release, with the same seed's schedule and clients, as etcd's
// robustness suite keeps a target per reproduced bug. The clients are the
// register's with deletes; the steps are an operator's (maintenance),
// the clients' quiet (client-hold) and a node down (kill); the verdict is
// the register check's, from the history alone.

// registerTable is the register's table (register.Table; the scenario
// table imports no lock package), whose gc_grace_seconds and compaction
// the schedule sets.
const registerTable = "lwt_register"

// c19617Cluster is what CASSANDRA-19617 needs of a cluster: Paxos v2,
// paxos_state_purging repaired (Paxos state purged in compaction once a
// Paxos repair covered it) and no Paxos cache (a node reads its Paxos
// state from its SSTables, as compaction left them).
func c19617Cluster(release string) Cluster {
	return Cluster{Paxos: PaxosV2, PaxosStatePurging: purgeRepaired, NoPaxosCache: true, Version: release}
}

// maintain is a maintenance step on nodes: value is its start value.
func maintain(v string, nodes ...string) nemesis.Step {
	return nemesis.Step{Kind: nemesis.Maintenance, Nodes: nodes, Value: json.RawMessage(v)}
}

// after makes st follow step's end by at, inside the windows open then.
func after(st nemesis.Step, step int, at time.Duration) nemesis.Step {
	st.After, st.At, st.Overlap = &nemesis.Follow{Step: step, Phase: nemesis.Ended}, nemesis.Duration(at), true
	return st
}

// c19617Schedule plays the fixing commit's test (CasWriteTest
// testStaleCommitInSystemPaxos) with an operator's tools, on whatever the
// clients wrote (docs/notes-on-cassandra.md, "CASSANDRA-19617"): n3 keeps
// its Paxos SSTables apart (autocompaction off) and flushes them at 8 s
// (mark "before": the last commit of every key written so far); the
// clients go on 6 s after it, deleting some keys, then stop (client-hold).
// Once Paxos's purge grace (60 s) has passed, a Paxos repair; every node
// flushes; n3 compacts only the Paxos SSTables newer than the mark, which
// purges the later commits and leaves the marked ones; n1 and n2 compact
// all theirs away; every node compacts the register's table, whose
// tombstones are past its gc_grace_seconds (5 s, set at the start), and
// the table gets its default gc_grace_seconds back. n2 is killed, and the
// clients go on through n1 and n3.
var c19617Schedule = &nemesis.Schedule{Source: "written by hand from CASSANDRA-19617's fixing commit's test (issue 50)", Steps: []nemesis.Step{
	maintain(`{"gc_grace":5,"op":"gc-grace","table":"`+registerTable+`"}`, "n1"),
	maintain(`{"op":"autocompaction-off","table":"system.paxos"}`, "n3"),
	{Kind: nemesis.Maintenance, At: nemesis.Duration(8 * s), Nodes: []string{"n3"},
		Value: json.RawMessage(`{"mark":"before","op":"flush","table":"system.paxos"}`)},
	// 6 s after the mark's flush has returned, not at a time: a nodetool
	// call takes 5-11 s on a loaded machine, and its flush switches the
	// memtable near its end.
	{Kind: nemesis.ClientHold, At: nemesis.Duration(6 * s), For: nemesis.Duration(150 * s),
		After: &nemesis.Follow{Step: 3, Phase: nemesis.Ended}},
	{Kind: nemesis.Maintenance, At: nemesis.Duration(65 * s), Overlap: true, Nodes: []string{"n1"},
		After: &nemesis.Follow{Step: 4, Phase: nemesis.Started}, Value: json.RawMessage(`{"op":"repair-paxos"}`)},
	after(maintain(`{"op":"flush","table":"system.paxos"}`, "n1", "n2", "n3"), 5, 0),
	after(maintain(`{"op":"flush","table":"`+registerTable+`"}`, "n1", "n2", "n3"), 6, 0),
	after(maintain(`{"newer_than":"before","op":"compact","table":"system.paxos"}`, "n3"), 7, 0),
	after(maintain(`{"op":"compact","table":"system.paxos"}`, "n1", "n2"), 8, 0),
	after(maintain(`{"op":"compact","table":"`+registerTable+`"}`, "n1", "n2", "n3"), 9, 0),
	// gc_grace_seconds back to its default before a node goes down: with
	// 5 s, the deletes n2 misses would be purged (and their hints, whose
	// TTL is the table's gc_grace, dropped) before it is back, and the
	// values they deleted would come back from n2 on any release.
	after(maintain(`{"gc_grace":864000,"op":"gc-grace","table":"`+registerTable+`"}`, "n1"), 10, 0),
	func() nemesis.Step {
		st := after(nemesis.Step{Kind: nemesis.Kill, Nodes: []string{"n2"}}, 11, 2*s)
		st.For = nemesis.Duration(60 * s)
		return st
	}(),
}}

// c19617Row is the row on one release: the bug's (back) or the fix's. The
// two rows share their seed (the ticket's rows may: Check), so that their
// runs deal the same clients' draws.
func c19617Row(release string, seed int64, back bool) Row {
	r := Row{
		Recipe: workload.ShapeRegister, Workload: workload.ShapeRegister, Deletes: true, Ticket: "CASSANDRA-19617",
		Faults: c19617Schedule.Kinds(), Schedule: c19617Schedule, Cluster: c19617Cluster(release),
		Time: 180 * s, Interval: 10 * s, Locks: 40, Seed: seed, Tier: Full,
	}
	if back {
		r.Want, r.Unsafe = checker.Invalid, true
		r.Mechanism = "CASSANDRA-19617 on " + release + ": once the repair's low bound has passed a key's delete by the purge " +
			"grace, n3's compaction of its newer Paxos SSTables purges the delete's commit and leaves the older write's in " +
			"the SSTable it kept; n1 and n2 hold no Paxos state for the key and the table's tombstone is purged. With n2 " +
			"down, the next round through n1 and n3 finds n3's stale commit newer than anything n1 has and commits it again: " +
			"the deleted value comes back (a SERIAL read sees it, an insert IF NOT EXISTS is refused by it), which no order " +
			"of the register's operations explains (non-linearizable)."
	} else {
		r.Want = checker.Valid
		r.Mechanism = "The same schedule on " + release + ", which has the fix: a Paxos round ignores a commit older than " +
			"the Paxos repair's low bound (a commit a purge may have outlived), so n3's stale commit is never committed again " +
			"and every key reads as its last write left it."
	}
	r.Name = r.canonicalName()
	return r
}

// ticketRows: CASSANDRA-19617 on 4.1.5, the last release with the bug,
// and 4.1.6, the first with the fix; the same seed's clients and steps.
var ticketRows = []Row{
	c19617Row("4.1.5", 19617, true),
	c19617Row("4.1.6", 19617, false),
}
