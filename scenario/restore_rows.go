package scenario

import (
	"encoding/json"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// The restore rows (issue 50): a node restored from an old snapshot, as an
// operator restoring from a backup does, under the fenced lock and under
// Cassandra's LWT itself (the register). A restored node forgets what it
// acknowledged since its snapshot, Paxos state included; what Cassandra
// still guarantees then is docs/notes-on-cassandra.md's.

// restoreQuorum restores two of the three replicas from snapshots taken
// together: a quorum of the keyspace goes back at once. A window of 12 s
// from 3 s in (the snapshots, then writes the two nodes acknowledge), and
// their restore: both stop, so the cluster has no quorum until they are
// back (a minute on a loaded machine), then the clients run on against
// them for the rest of the run.
var restoreQuorum = &nemesis.Schedule{Source: "written by hand: two of three replicas restored together (issue 50)", Steps: []nemesis.Step{
	{Kind: nemesis.Restore, At: nemesis.Duration(3 * time.Second), For: nemesis.Duration(12 * time.Second), Nodes: []string{"n1", "n2"},
		Value: json.RawMessage(`{"snapshot":"` + nemesis.RestorePrefix + `quorum"}`)},
}}

// restoreQuorumAlone restores the same two replicas while the third is
// down: killed 5 s after the snapshots (what the clients write from then
// on reaches only the two), and started a minute later, after the two are
// back with their old state. Until then the quorum the cluster has is the
// two restored nodes.
var restoreQuorumAlone = &nemesis.Schedule{Source: "written by hand: two of three replicas restored while the third is down (issue 50)", Steps: []nemesis.Step{
	{Kind: nemesis.Restore, At: nemesis.Duration(3 * time.Second), For: nemesis.Duration(15 * time.Second), Nodes: []string{"n1", "n2"},
		Value: json.RawMessage(`{"snapshot":"` + nemesis.RestorePrefix + `alone"}`)},
	{Kind: nemesis.Kill, At: nemesis.Duration(5 * time.Second), For: nemesis.Duration(60 * time.Second), Nodes: []string{"n3"}, Overlap: true,
		After: &nemesis.Follow{Step: 1, Phase: nemesis.Started}},
}}

// A restore window's stop takes as long as a node's restart (up to a
// minute on a loaded machine), so the rows run long enough that clients
// work against the restored node after it is back: 90 s with a window
// every 10 s (the first window's node is back well before the end; a later
// window may end with the run, and then shows nothing).
var restoreRows = []Row{
	{
		Name: "lease-fenced/restore", Recipe: "lease-fenced", Faults: []string{nemesis.Restore}, Time: 90 * s, Interval: 10 * s, Seed: 5060,
		Want: checker.Valid, Tier: Full,
		Mechanism: "One replica of three restored from its snapshot (Paxos state included) forgets the grants, renewals and " +
			"fencing-counter increments it acknowledged since. With nothing else faulted each of them had reached the two " +
			"other replicas too, so every quorum after the restore holds a replica with the newer state: a round's prepare " +
			"re-sends the newest commit to the restored node and its QUORUM read repairs it, and no token goes back " +
			"(quorum intersection). A write the restored node had shared with one other replica only (the third down, or " +
			"dropping it) would be left on one replica, which a quorum can miss.",
	},
	{
		Name: "register/restore", Recipe: workload.ShapeRegister, Workload: workload.ShapeRegister, Faults: []string{nemesis.Restore},
		Time: 90 * s, Interval: 10 * s, Seed: 23060, Want: checker.Valid, Tier: Full,
		Mechanism: "The register under the same restores: a SERIAL read or a conditional write counts a quorum, which holds a " +
			"replica that kept the newer state; the restored node's older state is repaired, never read as current.",
	},
	{
		Name: "lease-fenced/restore/shrunk", Recipe: "lease-fenced", Faults: []string{nemesis.Restore}, Schedule: restoreQuorum,
		Time: 100 * s, Interval: 10 * s, Seed: 5061, Want: checker.Valid, Tier: Full,
		Mechanism: "Two replicas of three restored together while the third stays up: the two do not come back at the same " +
			"instant, and each comes back to a cluster whose other live replica is the third, which holds the newer state. " +
			"The first Paxos rounds on the lock after the restore count it: their prepare re-sends its most recent commit to " +
			"the replica behind and their QUORUM read repairs it, so by the time the two old replicas could answer a round " +
			"alone the lock's partition is up to date again. A partition no round touches between the two comebacks would " +
			"keep the old state on a quorum (the restore+kill row makes the third replica unavailable instead).",
	},
	{
		Name: "register/restore/shrunk", Recipe: workload.ShapeRegister, Workload: workload.ShapeRegister, Faults: []string{nemesis.Restore},
		Schedule: restoreQuorum, Time: 100 * s, Interval: 10 * s, Seed: 23061, Want: checker.Valid, Tier: Full,
		Mechanism: "The register under the same two restores: its one key is read and written by every round, so the third " +
			"replica repairs the first restored node back before the second is back.",
	},
	{
		Name: "lease-fenced/restore+kill/overlapping", Recipe: "lease-fenced", Faults: []string{nemesis.Restore, nemesis.Kill}, Schedule: restoreQuorumAlone,
		Time: 130 * s, Interval: 10 * s, Seed: 5062, Want: checker.Invalid, Unsafe: true, Tier: Full,
		Mechanism: "Two replicas of three restored while the third is down: when the two are back the only quorum is theirs, " +
			"and both hold the lock row and the fencing counter as they were at the snapshots. The next grants are handed " +
			"tokens the clients had already been handed before the restore (token-not-increasing), the resource, restored " +
			"the same way, has forgotten the newer tokens and accepts the reissued ones (stale-holder-write), and the adds " +
			"acknowledged since the snapshots are gone (lost-add). The report names the restore as the likely cause of each. " +
			"Not a Cassandra bug: an acknowledged write is promised to a quorum, and a quorum was rolled back.",
	},
	{
		Name: "register/restore+kill/overlapping", Recipe: workload.ShapeRegister, Workload: workload.ShapeRegister, Faults: []string{nemesis.Restore, nemesis.Kill},
		Schedule: restoreQuorumAlone, Time: 130 * s, Interval: 10 * s, Seed: 23062, Want: checker.Invalid, Unsafe: true, Tier: Full,
		Mechanism: "Cassandra's LWT itself under the same restore: once the two restored replicas are back, SERIAL reads and " +
			"conditional writes of the quorum they form see the register's value at the snapshots, so values written and " +
			"acknowledged since are gone (non-linearizable). " +
			"A quorum rolled back breaks Paxos's premise (acceptors never forget), which no Cassandra release claims to survive.",
	},
}
