package scenario

import (
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

const s = time.Second

// Clusters other than the shared one.
var (
	paxosV2  = Cluster{Paxos: "v2"}
	periodic = Cluster{LazyFS: true, Commitlog: "periodic"}
	batch    = Cluster{LazyFS: true, Commitlog: "batch"}
	// Issue 22's shapes that move: two data centres of two nodes (RF 2 in
	// each), and four nodes (RF 3) with a spare for the membership kinds.
	twoDCs       = Cluster{Nodes: 4, DCs: 2}
	spare        = Cluster{Nodes: 4, Spares: 1}
	spareV2      = Cluster{Nodes: 4, Spares: 1, Paxos: "v2"}
	spareV2Skip  = Cluster{Nodes: 4, Spares: 1, Paxos: "v2", SkipPaxosRepair: true}
	joinAndLeave = []string{nemesis.Join, nemesis.Leave}
)

// Rows are every asserted row, in the order the tests run them. The
// durations of the known-unsafe rows are the shortest at which they were
// caught in 9 or 10 of 10 runs here (rates.jsonl); the nemesis is aimed
// (client pause: the holder that is writing; client clock: a contender;
// coord-*: the coordinators of pinned clients) rather than the checker
// loosened. Adding a row: one entry here, then `go test ./scenario -update`
// to render docs/findings.md.
var Rows = []Row{
	{
		Name: "racy/none", Recipe: "racy", Time: 15 * s, Interval: 3 * s, Seed: 1000,
		Want: checker.Invalid, Unsafe: true, Tier: Quick,
		Mechanism: "Read-then-write is no lock: two clients read the lock free within milliseconds of each other and both enter " +
			"(overlapping holds and lost adds within seconds, about 200 per run), no fault needed.",
	},
	{
		Name: "lease/client-pause", Recipe: "lease", Faults: []string{nemesis.ClientPause}, Time: 20 * s, Interval: 3 * s, Seed: 1001,
		Want: checker.Invalid, Unsafe: true, Tier: Quick,
		Mechanism: "A holder stalled between its read and its write past its TTL: another client takes the lease and adds, " +
			"then the stale write lands and the other's acknowledged add is lost (lost-add, 10-90 per run).",
	},
	{
		Name: "lease-fenced/client-pause", Recipe: "lease-fenced", Faults: []string{nemesis.ClientPause}, Time: 20 * s, Interval: 3 * s, Seed: 1002,
		Want: checker.Valid, Tier: Quick,
		Mechanism: "The same stall, but the resource refuses the stale holder's write (its token is older): nothing is lost.",
	},
	{
		Name: "lease-fenced-broken/client-pause", Recipe: "lease-fenced-broken", Faults: []string{nemesis.ClientPause}, Time: 30 * s, Interval: 3 * s, Seed: 1003,
		Want: checker.Invalid, Unsafe: true, Tier: Quick,
		Mechanism: "The control of the fenced promise: lease-fenced's tokens with a resource that accepts any token. " +
			"The paused holder's write, carrying its old token, lands after the next holder's adds and overwrites them (lost-add).",
	},
	{
		Name: "music/client-clock", Recipe: "music", Faults: []string{nemesis.ClientClock}, Time: 30 * s, Interval: 3 * s, Seed: 1004,
		Want: checker.Invalid, Unsafe: true, Tier: Quick,
		Mechanism: "A contender whose clock is 1-30 s behind makes a time-UUID ref that sorts before the holder's, " +
			"finds itself on top and enters while the holder is inside (overlapping-holds).",
	},
	{
		Name: "music-seq/client-clock", Recipe: "music-seq", Faults: []string{nemesis.ClientClock}, Time: 20 * s, Interval: 3 * s, Seed: 1005,
		Want: checker.Valid, Tier: Quick,
		Mechanism: "Refs from an LWT-bumped counter do not depend on clocks.",
	},
	{
		// Faults every ~4 s so that a round of every node kind, a kill's
		// restart included, fits in 90 s even at load 25-30 (60 s did not:
		// 3 of 5 kinds at load 27).
		Name: "lease-fenced/node-faults", Recipe: "lease-fenced", Faults: NodeFaults, Time: 90 * s, Interval: 2 * s, Seed: 1006,
		Want: checker.Valid, Tier: Quick,
		Mechanism: "Kills and restarts dominate the schedule; LWT timeouts become unknown outcomes (info) and fencing holds. " +
			"An add acknowledged after its own lease ended while nobody else held is a late-write finding, not a failure.",
	},
	{
		Name: "music-seq/node-faults", Recipe: "music-seq", Faults: NodeFaults, Time: 90 * s, Interval: 2 * s, Seed: 1007,
		Want: checker.Valid, Tier: Full,
		Mechanism: "Unknown ref deletions (a CAS accepted by 1 of 3) are abandoned refs: throughput drops, safety holds.",
	},
	{
		Name: "lease-fenced/loss", Recipe: "lease-fenced", Faults: []string{nemesis.Loss}, Time: 30 * s, Interval: 3 * s, Seed: 1008,
		Want: checker.Valid, Tier: Full,
		Mechanism: "5-50 % of packets dropped between nodes or from the clients: LWTs slow down and some end unknown; fencing holds.",
	},
	{
		Name: "bakery/client-clock", Recipe: "bakery", Faults: []string{nemesis.ClientClock}, Time: 20 * s, Interval: 3 * s, Seed: 1009,
		Want: checker.Invalid, Unsafe: true, Tier: Quick,
		Mechanism: "The published bakery's flaw (Lamport's bakery over Cassandra cells at QUORUM, client timestamps): a contender's clock stepped back between its operations writes its new choosing and number cells " +
			"under its own older tombstones (last write wins on client timestamps), so the others miss its ticket and enter while it holds, even at QUORUM.",
	},
	{
		// A window catches bakery-one about 7 times in 10: 2-3 windows per run.
		Name: "bakery-one/coord-partition", Recipe: "bakery-one", Faults: []string{nemesis.CoordPartition}, Pin: true, Time: 25 * s, Interval: 2 * s, Seed: 1010,
		Want: checker.Invalid, Unsafe: true, Tier: Quick,
		Mechanism: "Clients pinned to coordinators and one coordinator's writes kept from the others: its tickets, written at ONE, reach no other replica, " +
			"and the others' reads at ONE miss them, so they enter without waiting (overlapping-holds, lost-add).",
	},
	{
		Name: "bakery/coord-partition", Recipe: "bakery", Faults: []string{nemesis.CoordPartition}, Pin: true, Time: 20 * s, Interval: 3 * s, Seed: 1011,
		Want: checker.Valid, Tier: Quick,
		Mechanism: "QUORUM under the same cut: the cut coordinator's writes and reads time out, the other two nodes keep a quorum.",
	},
	{
		Name: "lease/coord-clock", Recipe: "lease", Faults: []string{nemesis.CoordClock}, Pin: true, Time: 20 * s, Interval: 3 * s, Seed: 1012,
		Want: checker.Invalid, Unsafe: true, Tier: Quick,
		Mechanism: "The published lease (IF NOT EXISTS USING TTL) under node clock skew: the coordinator serving a contender runs ahead by more than a lease has left, " +
			"so its IF NOT EXISTS finds the holder's lease expired and grants it again (overlapping-holds).",
	},
	{
		Name: "lease-fenced/coord-clock", Recipe: "lease-fenced", Faults: []string{nemesis.CoordClock}, Pin: true, Time: 20 * s, Interval: 3 * s, Seed: 1013,
		Want: checker.Valid, Tier: Quick,
		Mechanism: "The same early expiry grants the lock twice, but the second grant's token is newer and the resource refuses the first holder's writes.",
	},
	{
		Name: "lease/client-pause/leader", Recipe: "lease", Faults: []string{nemesis.ClientPause}, Workload: workload.ShapeLeader, Time: 20 * s, Interval: 3 * s, Seed: 1014,
		Want: checker.Invalid, Unsafe: true, Tier: Quick,
		Mechanism: "Leaders keep terms of seconds by heartbeats (lease's Renew); a leader paused past its lease writes on after the next leader took over.",
	},
	{
		Name: "lease-fenced/client-pause/leader", Recipe: "lease-fenced", Faults: []string{nemesis.ClientPause}, Workload: workload.ShapeLeader, Time: 20 * s, Interval: 3 * s, Seed: 1015,
		Want: checker.Valid, Tier: Full,
		Mechanism: "The paused leader's writes after the next leader's carry an older token and are refused.",
	},
	{
		Name: "lease-fenced-broken/client-pause/leader", Recipe: "lease-fenced-broken", Faults: []string{nemesis.ClientPause}, Workload: workload.ShapeLeader, Time: 30 * s, Interval: 3 * s, Seed: 1016,
		Want: checker.Invalid, Unsafe: true, Tier: Full,
		Mechanism: "A paused leader resumes and writes again with its old token after the next leader's writes were acknowledged, and the resource accepts it: the token rule catches it.",
	},
	{
		Name: "election/none/leader", Recipe: "election", Workload: workload.ShapeLeader, Time: 20 * s, Interval: 3 * s, Seed: 1017,
		Want: checker.Invalid, Unsafe: true, Tier: Quick,
		Mechanism: "The published leader election: leaders keep their term by claiming again, and as published a re-claim does not refresh the TTL: " +
			"the claim expires under a leader that still leads, no fault needed.",
	},
	{
		Name: "election-refresh/none/leader", Recipe: "election-refresh", Workload: workload.ShapeLeader, Time: 20 * s, Interval: 3 * s, Seed: 1018,
		Want: checker.Valid, Tier: Quick,
		Mechanism: "The re-claim refreshes the TTL: a leader's claim lasts as long as it heartbeats.",
	},

	// Clusters of their own. Paxos v2: the fixed recipes under every node
	// fault kind.
	{
		Name: "v2/lease-fenced/node-faults", Recipe: "lease-fenced", Faults: NodeFaults, Cluster: paxosV2, Time: 90 * s, Interval: 2 * s, Seed: 3000,
		Want: checker.Valid, Tier: Quick,
		Mechanism: "Paxos v2 did not differ from v1 here: unknown outcomes under partitions and kills end info the same way, and fencing holds.",
	},
	{
		Name: "v2/music-seq/node-faults", Recipe: "music-seq", Faults: NodeFaults, Cluster: paxosV2, Time: 90 * s, Interval: 2 * s, Seed: 3100,
		Want: checker.Valid, Tier: Full,
		Mechanism: "As on Paxos v1: abandoned refs cost throughput, not safety.",
	},
	// Power loss on the lazy filesystem, the commitlog synced every 10 s
	// (periodic, Cassandra's default) or before every acknowledgement
	// (batch).
	{
		Name: "periodic/lease-fenced/rack-power-loss", Recipe: "lease-fenced", Faults: []string{nemesis.RackPowerLoss}, Cluster: periodic, Time: 30 * s, Interval: 4 * s, Seed: 4000,
		Want: checker.Invalid, Unsafe: true, Tier: Quick,
		Mechanism: "Every replica forgets the commitlog's unsynced tail at once, so nothing is left to repair from: acknowledged adds are lost " +
			"and the fencing counter goes back, so tokens are issued again and the resource, reset the same way, accepts them.",
	},
	{
		Name: "periodic/music-seq/rack-power-loss", Recipe: "music-seq", Faults: []string{nemesis.RackPowerLoss}, Cluster: periodic, Time: 30 * s, Interval: 4 * s, Seed: 4100,
		Want: checker.Invalid, Unsafe: true, Tier: Full,
		Mechanism: "The same lost tail: acknowledged adds are undone in every run.",
	},
	{
		Name: "batch/lease-fenced/rack-power-loss", Recipe: "lease-fenced", Faults: []string{nemesis.RackPowerLoss}, Cluster: batch, Time: 30 * s, Interval: 4 * s, Seed: 5000,
		Want: checker.Valid, Tier: Quick,
		Mechanism: "With commitlog_sync batch a write is acknowledged only after its segment is synced, so what the cut throws away " +
			"was never acknowledged (attempts in flight at the cut end info).",
	},
	{
		Name: "batch/music-seq/rack-power-loss", Recipe: "music-seq", Faults: []string{nemesis.RackPowerLoss}, Cluster: batch, Time: 30 * s, Interval: 4 * s, Seed: 5100,
		Want: checker.Valid, Tier: Full,
		Mechanism: "The same: guard-counter bumps and refs survive the cut.",
	},

	// Two data centres (issue 22): clients placed in both, each through
	// its own data centre's nodes; dc-partition cuts the data centres
	// apart, both ways or one way.
	{
		Name: "4n-2dc/lease-fenced/dc-partition/dc-local", Recipe: "lease-fenced", Faults: []string{nemesis.DCPartition}, Cluster: twoDCs, DCLocal: true,
		Time: 30 * s, Interval: 5 * s, Seed: 22001,
		Want: checker.Invalid, Unsafe: true, Tier: Full,
		Mechanism: "LOCAL_SERIAL runs each Paxos round among the client's own data centre's replicas (2 of 2 here): during the cut each side " +
			"grants the lock and bumps the fencing counter on its own, so one token is granted in both data centres (token-not-increasing).",
	},
	{
		Name: "4n-2dc/lease-fenced/dc-partition", Recipe: "lease-fenced", Faults: []string{nemesis.DCPartition}, Cluster: twoDCs,
		Time: 30 * s, Interval: 5 * s, Seed: 22002,
		Want: checker.Valid, Tier: Full,
		Mechanism: "SERIAL needs a quorum of all four replicas (3): during the cut neither data centre has one (2+2 has no majority side), " +
			"so every LWT on either side fails or ends unknown, and tokens keep growing.",
	},
	// Membership (issue 22): four nodes (RF 3) and a spare. Each window is
	// two range movements (a spare bootstraps then decommissions; a member
	// decommissions then bootstraps back from empty data) while the
	// clients run.
	{
		Name: "4n-1spare/lease-fenced/join+leave", Recipe: "lease-fenced", Faults: joinAndLeave, Cluster: spare,
		Time: 150 * s, Interval: 10 * s, Seed: 22100,
		Want: checker.Valid, Tier: Full,
		Mechanism: "Two range movements a window (a spare bootstraps and decommissions; a member decommissions and bootstraps back from empty data) while the clients take the lock: LWTs slow and some end unknown while ranges stream; fencing holds. Paxos v1 does not repair Paxos state on a topology change (CEP-14); losing a grant needs a proposal accepted and not committed on the replica that leaves, which this schedule did not produce.",
	},
	{
		Name: "4n-1spare/lease/join+leave", Recipe: "lease", Faults: joinAndLeave, Cluster: spare,
		Time: 150 * s, Interval: 10 * s, Seed: 22200,
		Want: checker.Valid, Tier: Full,
		Mechanism: "The published lease under the same movements: no second grant seen. Its known weakness is a holder stalled past its TTL, which an LWT slowed by streaming can become on a loaded machine.",
	},
	{
		Name: "4n-v2-1spare/lease-fenced/join+leave", Recipe: "lease-fenced", Faults: joinAndLeave, Cluster: spareV2,
		Time: 150 * s, Interval: 10 * s, Seed: 22300,
		Want: checker.Valid, Tier: Full,
		Mechanism: "Paxos v2 repairs the partition's Paxos state before a topology change completes: the movements slow LWTs, fencing holds.",
	},
	{
		Name: "4n-v2-1spare/lease/join+leave", Recipe: "lease", Faults: joinAndLeave, Cluster: spareV2,
		Time: 150 * s, Interval: 10 * s, Seed: 22400,
		Want: checker.Valid, Tier: Full,
		Mechanism: "The published lease on Paxos v2 under the same movements, with Paxos repair on topology change.",
	},
	{
		Name: "4n-v2-1spare-skip-repair/lease-fenced/join+leave", Recipe: "lease-fenced", Faults: joinAndLeave, Cluster: spareV2Skip,
		Time: 150 * s, Interval: 10 * s, Seed: 22500,
		Want: checker.Valid, Tier: Full,
		Mechanism: "Paxos v2 with skip_paxos_repair_on_topology_change: movements complete without Paxos repair first (as on v1); fencing holds where measured.",
	},
	{
		Name: "4n-v2-1spare-skip-repair/lease/join+leave", Recipe: "lease", Faults: joinAndLeave, Cluster: spareV2Skip,
		Time: 150 * s, Interval: 10 * s, Seed: 22600,
		Want: checker.Valid, Tier: Full,
		Mechanism: "The published lease on Paxos v2 without Paxos repair on topology change.",
	},
}
