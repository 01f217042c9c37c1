package scenario

import (
	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/workload"
)

// The expectation table: which combinations of the axes (axes.go) are
// asserted, with which verdict and why. Each line is a row (Expect.Row):
// its settings come from the axes it names, its name from its settings.
// A family is in the order its rows were added, which docs/findings.md
// keeps. Named regression rows (shrunk schedules, rows written from one
// run) are regressions.go's.

// leaseLateWrite is what broke the published lease inside range
// movements: not Paxos, its missing fence.
const leaseLateWrite = "known weakness, no fencing token: with ranges streaming and a node faulted, a critical section's add " +
	"sent inside the lease took longer than the lease had left, and where another client was granted the lock meanwhile it " +
	"landed in that holder's term and overwrote its work (stale-holder-write, lost-add: the report's \"a write outlived its lease\"); " +
	"mutual exclusion and the lock's linearizability held in every run"

// recipeExpect are the recipes of the registry on the shared cluster and
// on clusters of their own. The durations of the known-unsafe rows are the
// shortest at which they were caught at their bar (rates.jsonl,
// docs/findings.md); the nemesis is aimed (client pause: the holder that
// is writing; client clock: a contender; coord-*: the coordinators of
// pinned clients) rather than the checker loosened.
var recipeExpect = []Expect{
	{
		Lock: "racy", Faults: noFault, Time: 15 * s, Seed: 1000, Want: checker.Invalid, Tier: Quick,
		Mechanism: "Read-then-write is no lock: two clients read the lock free within milliseconds of each other and both enter " +
			"(overlapping holds and lost adds within seconds, about 200 per run), no fault needed.",
	},
	{
		Lock: "lease", Faults: clientPause, Seed: 1001, Want: checker.Invalid, Tier: Full,
		Mechanism: "A holder stalled between its read and its write past its TTL: another client takes the lease and adds, " +
			"then the stale write lands and the other's acknowledged add is lost (lost-add, 10-90 per run).",
	},
	{
		Lock: "lease-fenced", Faults: clientPause, Seed: 1002, Want: checker.Valid, Tier: Quick,
		Mechanism: "The same stall, but the resource refuses the stale holder's write (its token is older): nothing is lost.",
	},
	{
		Lock: "lease-fenced-broken", Faults: clientPause, Time: 30 * s, Seed: 1003, Want: checker.Invalid, Tier: Full,
		Mechanism: "The control of the fenced promise: lease-fenced's tokens with a resource that accepts any token. " +
			"The paused holder's write, carrying its old token, lands after the next holder's adds and overwrites them (lost-add).",
	},
	{
		Lock: "music", Faults: clientClock, Time: 30 * s, Seed: 1004, Want: checker.Invalid, Tier: Full,
		Mechanism: "A contender whose clock is 1-30 s behind makes a time-UUID ref that sorts before the holder's, " +
			"finds itself on top and enters while the holder is inside (overlapping-holds).",
	},
	{
		Lock: "music-seq", Faults: clientClock, Seed: 1005, Want: checker.Valid, Tier: Full,
		Mechanism: "Refs from an LWT-bumped counter do not depend on clocks.",
	},
	{
		Lock: "lease-fenced", Faults: nodeFaults, Seed: 1006, Want: checker.Valid, Tier: Full,
		Mechanism: "Kills and restarts dominate the schedule; LWT timeouts become unknown outcomes (info) and fencing holds. " +
			"An add acknowledged after its own lease ended while nobody else held is a late-write finding, not a failure.",
	},
	{
		Lock: "music-seq", Faults: nodeFaults, Seed: 1007, Want: checker.Valid, Tier: Full,
		Mechanism: "Unknown ref deletions (a CAS accepted by 1 of 3) are abandoned refs: throughput drops, safety holds.",
	},
	{
		Lock: "lease-fenced", Faults: lossFault, Seed: 1008, Want: checker.Valid, Tier: Full,
		Mechanism: "5-50 % of packets dropped between nodes or from the clients: LWTs slow down and some end unknown; fencing holds.",
	},
	{
		Lock: "bakery", Faults: clientClock, Seed: 1009, Want: checker.Invalid, Tier: Full,
		Mechanism: "The published bakery's flaw (Lamport's bakery over Cassandra cells at QUORUM, client timestamps): a contender's clock stepped back between its operations writes its new choosing and number cells " +
			"under its own older tombstones (last write wins on client timestamps), so the others miss its ticket and enter while it holds, even at QUORUM.",
	},
	{
		// A window catches bakery-one in most runs, not all: 2-3 windows a run.
		// Full tier: a run on a quiet machine with three cuts dealt was valid,
		// so the quick tier waits for a rate measured on one (findings.md).
		Lock: "bakery-one", Faults: coordPartition, Time: 25 * s, Interval: 2 * s, Seed: 1010, Want: checker.Invalid, Tier: Full,
		Mechanism: "Clients pinned to coordinators and one coordinator's writes kept from the others: its tickets, written at ONE, reach no other replica, " +
			"and the others' reads at ONE miss them, so they enter without waiting (overlapping-holds, lost-add).",
	},
	{
		Lock: "bakery", Faults: coordPartition, Seed: 1011, Want: checker.Valid, Tier: Full,
		Mechanism: "QUORUM under the same cut: the cut coordinator's writes and reads time out, the other two nodes keep a quorum.",
	},
	{
		Lock: "lease", Faults: coordClock, Seed: 1012, Want: checker.Invalid, Tier: Full,
		Mechanism: "The published lease (IF NOT EXISTS USING TTL) under node clock skew: the coordinator serving a contender runs ahead by more than a lease has left, " +
			"so its IF NOT EXISTS finds the holder's lease expired and grants it again (overlapping-holds).",
	},
	{
		Lock: "lease-fenced", Faults: coordClock, Seed: 1013, Want: checker.Valid, Tier: Quick,
		Mechanism: "The same early expiry grants the lock twice, but the second grant's token is newer and the resource refuses the first holder's writes.",
	},
	{
		Lock: "lease", Faults: clientPause, Workload: workload.ShapeLeader, Seed: 1014, Want: checker.Invalid, Tier: Full,
		Mechanism: "Leaders keep terms of seconds by heartbeats (lease's Renew); a leader paused past its lease writes on after the next leader took over.",
	},
	{
		Lock: "lease-fenced", Faults: clientPause, Workload: workload.ShapeLeader, Seed: 1015, Want: checker.Valid, Tier: Full,
		Mechanism: "The paused leader's writes after the next leader's carry an older token and are refused.",
	},
	{
		Lock: "lease-fenced-broken", Faults: clientPause, Workload: workload.ShapeLeader, Time: 30 * s, Seed: 1016, Want: checker.Invalid, Tier: Full,
		Mechanism: "A paused leader resumes and writes again with its old token after the next leader's writes were acknowledged, and the resource accepts it: the token rule catches it.",
	},
	{
		Lock: "election", Faults: noFault, Workload: workload.ShapeLeader, Seed: 1017, Want: checker.Invalid, Tier: Full,
		Mechanism: "The published leader election: leaders keep their term by claiming again, and as published a re-claim does not refresh the TTL: " +
			"the claim expires under a leader that still leads, no fault needed.",
	},
	{
		Lock: "election-refresh", Faults: noFault, Workload: workload.ShapeLeader, Seed: 1018, Want: checker.Valid, Tier: Full,
		Mechanism: "The re-claim refreshes the TTL: a leader's claim lasts as long as it heartbeats.",
	},

	// Clusters of their own. Paxos v2: the fixed recipes under every node
	// fault kind.
	{
		Lock: "lease-fenced", Faults: nodeFaults, Cluster: paxosV2, Seed: 3000, Want: checker.Valid, Tier: Quick,
		Mechanism: "Paxos v2 did not differ from v1 here: unknown outcomes under partitions and kills end info the same way, and fencing holds.",
	},
	{
		Lock: "music-seq", Faults: nodeFaults, Cluster: paxosV2, Seed: 3100, Want: checker.Valid, Tier: Full,
		Mechanism: "As on Paxos v1: abandoned refs cost throughput, not safety.",
	},
	// Power loss on the lazy filesystem, the commitlog synced every 10 s
	// (periodic, Cassandra's default) or before every acknowledgement
	// (batch).
	{
		Lock: "lease-fenced", Faults: rackPowerLoss, Cluster: periodic, Seed: 4000, Want: checker.Invalid, Tier: Full,
		Mechanism: "Every replica forgets the commitlog's unsynced tail at once, so nothing is left to repair from: acknowledged adds are lost " +
			"and the fencing counter goes back, so tokens are issued again and the resource, reset the same way, accepts them.",
	},
	{
		Lock: "music-seq", Faults: rackPowerLoss, Cluster: periodic, Seed: 4100, Want: checker.Invalid, Tier: Full,
		Mechanism: "The same lost tail: acknowledged adds are undone in every run.",
	},
	{
		Lock: "lease-fenced", Faults: rackPowerLoss, Cluster: batch, Seed: 5000, Want: checker.Valid, Tier: Quick,
		Mechanism: "With commitlog_sync batch a write is acknowledged only after its segment is synced, so what the cut throws away " +
			"was never acknowledged (attempts in flight at the cut end info).",
	},
	{
		Lock: "music-seq", Faults: rackPowerLoss, Cluster: batch, Seed: 5100, Want: checker.Valid, Tier: Full,
		Mechanism: "The same: guard-counter bumps and refs survive the cut.",
	},

	// Two data centres (issue 22): clients placed in both, each through
	// its own data centre's nodes; dc-partition cuts the data centres
	// apart, both ways or one way.
	{
		Lock: "lease-fenced", Faults: dcPartition, Cluster: twoDCs, DCLocal: true, Seed: 22001, Want: checker.Invalid, Tier: Full,
		Mechanism: "LOCAL_SERIAL runs each Paxos round among the client's own data centre's replicas (2 of 2 here): during the cut each side " +
			"grants the lock and bumps the fencing counter on its own, so one token is granted in both data centres (token-not-increasing).",
	},
	{
		// Its bar is below 9: a loaded machine takes fewer locks, so fewer
		// overlaps write the resource at once (findings.md); every run holds the
		// lock in both data centres at once.
		Lock: "lease-fenced", Faults: noFault, Cluster: twoDCs, DCLocal: true, Time: 30 * s, Interval: 5 * s, Seed: 22003, Want: checker.Invalid, Catch: 8, Tier: Full,
		Mechanism: "No fault: each data centre's LOCAL_SERIAL round sees only its own replicas, and a commit reaches the other data " +
			"centre after its own LOCAL_QUORUM, so contenders in both data centres hold the lock at once (overlapping-holds) " +
			"and the fenced resource's conditional read-modify-write, also at LOCAL_SERIAL, lets a write from one data centre " +
			"overwrite an add acknowledged in the other (lost-add). Tokens still grew in grant order: the check that fails is the resource's, " +
			"and it fails only where two holders' writes meet, which a loaded machine's fewer, slower operations make rarer.",
	},
	{
		Lock: "lease-fenced", Faults: dcPartition, Cluster: twoDCs, Seed: 22002, Want: checker.Valid, Tier: Full,
		Mechanism: "SERIAL needs a quorum of all four replicas (3): during the cut neither data centre has one (2+2 has no majority side), " +
			"so every LWT on either side fails or ends unknown, and tokens keep growing.",
	},
	{
		Lock: "lease-fenced", Faults: dcPartition, Cluster: twoDCsUneven, Seed: 22004, Want: checker.Valid, Tier: Full,
		Mechanism: "SERIAL needs 3 of the 5 replicas (3 in dc1, 2 in dc2): during a cut dc1 still has its quorum and goes on " +
			"granting, dc2 cannot, both ways and one way whichever side is deaf (a round from dc2 either never reaches dc1 or " +
			"never hears back): dc1's clients are granted the lock through a cut, dc2's are not. Tokens keep growing.",
	},
	// Membership (issue 22): four nodes (RF 3) and a spare. Each window is
	// two range movements (a spare bootstraps then decommissions; a member
	// decommissions then bootstraps back from empty data) while the clients
	// run. A run deals each kind once even when its join outlasts the row's
	// time (nemesis.WithFirstRound); runs recorded before that count among
	// those without every fault (rates.jsonl).
	{
		Lock: "lease-fenced", Faults: joinLeave, Cluster: spare, Seed: 22100, Want: checker.Valid, Tier: Full,
		Mechanism: "Two range movements a window (a spare bootstraps and decommissions; a member decommissions and bootstraps back from empty data) while the clients take the lock: LWTs slow and some end unknown while ranges stream; fencing holds. Paxos v1 does not repair Paxos state on a topology change (CEP-14); losing a grant needs a proposal accepted and not committed on the replica that leaves, which this schedule did not produce. A leaving coordinator refuses requests as it shuts down (\"Server is shutting down\"): a release refused so released nothing, and the holder's next acquire renews its lease with the same token (no regression).",
	},
	{
		// Asserted at the lowest bar: the late write comes in few runs
		// (findings.md).
		Lock: "lease", Faults: joinLeave, Cluster: spare, Seed: 22200, Want: checker.Invalid, Catch: 1, Tier: Full,
		Mechanism: "The published lease under the same movements: mutual exclusion and the lock's linearizability hold, but its " +
			"missing fencing token can lose a write with no fault window open: an acquire slow enough to leave little of its " +
			"lease, then a guarded add slower than what was left, lands after the next holder's grant (stale-holder-write, the " +
			"report's \"a write outlived its lease\"). A slow request on a loaded machine, not the movement, does it: any pause " +
			"longer than the lease has left does.",
	},
	{
		Lock: "lease-fenced", Faults: joinLeave, Cluster: spareV2, Seed: 22300, Want: checker.Valid, Tier: Full,
		Mechanism: "Paxos v2 repairs the partition's Paxos state before a topology change completes: the movements slow LWTs, fencing holds.",
	},
	{
		Lock: "lease", Faults: joinLeave, Cluster: spareV2, Seed: 22400, Want: checker.Valid, Tier: Full,
		Mechanism: "The published lease on Paxos v2 under the same movements, with Paxos repair on topology change.",
	},
	{
		Lock: "lease-fenced", Faults: joinLeave, Cluster: spareV2Skip, Seed: 22500, Want: checker.Valid, Tier: Full,
		Mechanism: "Paxos v2 with skip_paxos_repair_on_topology_change: movements complete without Paxos repair first (as on v1); fencing holds where measured.",
	},
	{
		Lock: "lease", Faults: joinLeave, Cluster: spareV2Skip, Seed: 22600, Want: checker.Valid, Tier: Full,
		Mechanism: "The published lease on Paxos v2 without Paxos repair on topology change.",
	},
	// Membership under a coordinator cut (issue 22): the drawn scheduler
	// deals one window at a time, so these rows deal a schedule whose
	// coordinator cuts overlap the range movements: the joining spare's
	// bootstrap and decommission, then a member's decommission and its
	// bootstrap back, each with a coordinator of pinned clients cut off.
	{
		Lock: "lease-fenced", Faults: movementCuts, Cluster: spare, Seed: 22700, Want: checker.Valid, Tier: Full,
		Mechanism: "A coordinator cut off (one way, at the internode port) while ranges stream: its LWTs reach no other replica and end unknown, " +
			"its local replica may keep a proposal no one else saw, and the ring's replicas change under it; every later round " +
			"is a quorum of the new replicas plus the pending ones, and fencing holds where measured.",
	},
	{
		// Asserted at the lowest bar (findings.md): a rate that low still says
		// unsafe; a once-through matrix may need many tries.
		Lock: "lease", Faults: movementCuts, Cluster: spare, Seed: 22720, Want: checker.Invalid, Catch: 1, Tier: Full,
		Mechanism: "The published lease under the same cuts during the movements: invalid by its " + leaseLateWrite +
			". A late write that lands in no other holder's term breaks nothing, so a run needs a slowed add and a grant inside it.",
	},
	{
		Lock: "lease-fenced", Faults: movementCuts, Cluster: spareV2, Seed: 22740, Want: checker.Valid, Tier: Full,
		Mechanism: "Paxos v2, the same cuts during the movements (Paxos repair on topology change on): fencing holds where measured.",
	},
	{
		// Asserted at its measured bar (findings.md): the late write needs a
		// loaded replica set, and a quieter machine makes it rarer.
		Lock: "lease", Faults: movementCuts, Cluster: spareV2, Seed: 22760, Want: checker.Invalid, Catch: 3, Tier: Full,
		Mechanism: "The published lease on Paxos v2 under the same cuts during the movements: invalid by its " + leaseLateWrite +
			". The add must outlast what is left of the 3 s lease: a loaded replica set slows it that much, a quieter one " +
			"keeps it inside the lease.",
	},
	// Membership under a coordinator kill (issue 22): the same two windows,
	// a pinned client's coordinator killed and restarted inside each.
	{
		Lock: "lease-fenced", Faults: movementKills, Cluster: spare, Seed: 22860, Want: checker.Valid, Tier: Full,
		Mechanism: "A coordinator of pinned clients killed (SIGKILL) while the ring holds a moved node: its clients' LWTs in flight " +
			"end unknown and their next ones find no host until it is back (pinned clients do not fail over); a proposal it accepted " +
			"and did not commit stays in its Paxos state, and the next round's prepare on a quorum finds any that a quorum accepted. " +
			"The range movements wait for the ring to be whole; a kill that lands in a stream fails the movement (decommission " +
			"again heals a leave; a failed bootstrap starts again from empty data on 5.0, which refuses nodetool bootstrap resume, " +
			"and is resumed on 4.x; TestMembershipHeal shows both on a real cluster, 5.0.9 and 4.1.10; the stop line's " +
			"resumed says how). Fencing holds where measured.",
	},
	{
		Lock: "lease-fenced", Faults: movementKills, Cluster: spareV2, Seed: 22880, Want: checker.Valid, Tier: Full,
		Mechanism: "Paxos v2, the same kills during the movements (Paxos repair on topology change on: a movement waits for the " +
			"repair, which needs the killed node back or a quorum without it): fencing holds where measured.",
	},
	// Without Paxos repair on topology change, under the same cuts and
	// kills: a proposal a cut or killed coordinator left on a minority of
	// replicas is what the repair would settle before a range moved; the
	// fenced recipe shows whether a second grant slips through without it.
	{
		Lock: "lease-fenced", Faults: movementCuts, Cluster: spareV2Skip, Seed: 24200, Want: checker.Valid, Tier: Full,
		Mechanism: "Paxos v2 with skip_paxos_repair_on_topology_change, the same cuts during the movements: ranges move with no Paxos " +
			"repair first, as on v1; fencing holds where measured.",
	},
	{
		// A run whose join still streams at its stop on a loaded machine leaves
		// steps undealt: it counts among the runs without every fault and is run
		// again (rates.jsonl).
		Lock: "lease-fenced", Faults: movementKills, Cluster: spareV2Skip, Seed: 24300, Want: checker.Valid, Tier: Full,
		Mechanism: "Paxos v2 with skip_paxos_repair_on_topology_change, the same kills during the movements: a movement does not wait " +
			"for a Paxos repair; fencing holds where measured.",
	},
	// The published lease without Paxos repair under the same cuts and kills
	// (issue 22 asks for the lease beside the fenced recipes, with and
	// without the repair). Its v1 and v2 rows fail by a late write the
	// repair does not touch; the bars are the measured rates (findings.md).
	{
		Lock: "lease", Faults: movementCuts, Cluster: spareV2Skip, Seed: 24400, Want: checker.Invalid, Catch: 1, Tier: Full,
		Mechanism: "The published lease on Paxos v2 without Paxos repair on topology change, under the same cuts during the movements: " +
			"invalid by its " + leaseLateWrite + ", as with the repair: the repair has no part in a late write.",
	},
	{
		Lock: "lease", Faults: movementKills, Cluster: spareV2Skip, Seed: 24420, Want: checker.Invalid, Catch: 5, Tier: Full,
		Mechanism: "The published lease on Paxos v2 without Paxos repair on topology change, under the same kills during the movements: " +
			"invalid by its " + leaseLateWrite + ", as on v1 and on v2 with the repair: the repair changes nothing a late write needs.",
	},
	// The published lease under the same kills: the issue asks for it
	// beside the fenced recipe, and a lease has no token to fall back on.
	{
		Lock: "lease", Faults: movementKills, Cluster: spare, Seed: 22870, Want: checker.Invalid, Catch: 5, Tier: Full,
		Mechanism: "The published lease under the same kills during the movements: invalid by its " + leaseLateWrite +
			" (a run can hold several late writes). A killed coordinator's pinned " +
			"clients find no host until it is back, so no second grant comes from the kill itself.",
	},
	{
		Lock: "lease", Faults: movementKills, Cluster: spareV2, Seed: 22890, Want: checker.Invalid, Catch: 3, Tier: Full,
		Mechanism: "The published lease on Paxos v2 under the same kills during the movements: invalid by its " + leaseLateWrite +
			" (an add slower than what was left of the 3 s lease).",
	},
	// Replace and remove (issue 22): a member killed, then streamed back
	// in its own place (replace_address_first_boot), or removed by the
	// others (removenode) and bootstrapped back.
	{
		Lock: "lease-fenced", Faults: replaceFault, Cluster: spare, Seed: 22780, Want: checker.Valid, Tier: Full,
		Mechanism: "A member killed and replaced in its own place while the clients run: its replicas are down until the replacement " +
			"streams its ranges (RF 3, a quorum stays up); the replacement starts with no Paxos state, which a quorum of the others holds.",
	},
	{
		Lock: "lease-fenced", Faults: removeFault, Cluster: spare, Seed: 22800, Want: checker.Valid, Tier: Full,
		Mechanism: "A member killed and removed (removenode: the others stream its ranges among themselves), then bootstrapped back: " +
			"two range movements with one replica already gone.",
	},
	{
		Lock: "lease-fenced", Faults: replaceFault, Cluster: spareV2, Seed: 22820, Want: checker.Valid, Tier: Full,
		Mechanism: "Paxos v2, a member replaced in its own place.",
	},
	{
		Lock: "lease-fenced", Faults: removeFault, Cluster: spareV2, Seed: 22840, Want: checker.Valid, Tier: Full,
		Mechanism: "Paxos v2, a member removed and bootstrapped back.",
	},
}

// musicSeqMovements is the other fenced recipe under the same movements,
// cuts and kills, on Paxos v1, v2 and v2 without Paxos repair on topology
// change (issue 22 asks for the fenced recipes): music-seq's guard is a
// counter bumped by LWT, not the lease's own token, so a Paxos round lost
// in a movement would show as a guard that goes back. Its refs never
// expire, so the first holder whose add came back unknown (a cut or killed
// coordinator, a slow write while ranges stream) would hold the lock to
// the end of the run: these rows retire such a name (RetireStuck) so that
// the movements are run under holders throughout. v1 and v2 came first,
// the cluster without the repair after them.
func musicSeqMovements() []Expect {
	movements := []FaultSet{joinLeave, movementCuts, movementKills}
	paxos := map[string]string{spare.Key(): "Paxos v1", spareV2.Key(): "Paxos v2", spareV2Skip.Key(): "Paxos v2 without Paxos repair on topology change"}
	guard := map[string]string{
		spare.Key():       "music-seq's guard counter under the range movements of the lease-fenced row, on Paxos v1 (no Paxos repair on topology change).",
		spareV2.Key():     "music-seq's guard counter under the same movements on Paxos v2, with Paxos repair on topology change.",
		spareV2Skip.Key(): "music-seq's guard counter under the same movements on Paxos v2 without Paxos repair on topology change.",
	}
	words := func(f FaultSet, c Cluster) string {
		switch f.Schedule {
		case movementCuts.Schedule:
			return "music-seq under a coordinator cut inside each range movement, " + paxos[c.Key()] + "."
		case movementKills.Schedule:
			return "music-seq with a pinned coordinator killed inside each range movement, " + paxos[c.Key()] + "."
		}
		return guard[c.Key()]
	}
	es := append(cross("music-seq", movements, []Cluster{spare, spareV2}, 24000, 20, Full, checker.Valid, words),
		cross("music-seq", movements, []Cluster{spareV2Skip}, 24120, 20, Full, checker.Valid, words)...)
	for i := range es {
		es[i].RetireStuck = true
	}
	return es
}

// catalogueExpect are the catalogue's Go locks (docs/locks.md,
// scenario/locks.go), re-expressed as recipes, each under CatalogueFaults
// and what else matters for it.
var catalogueExpect = []Expect{
	{
		Lock: "caslock", Faults: noFault, Seed: 6400, Want: checker.Valid, Tier: Full,
		Mechanism: "One LWT per attempt (IF \"[lock]\" = null) decides; contenders retry every 500 ms until the holder's release or the cell's TTL.",
	},
	{
		Lock: "caslock", Faults: clientPause, Seed: 6401, Want: checker.Invalid, Tier: Quick,
		Mechanism: "caslock has no fencing: a holder stalled past twice its timeout (the cell's TTL) loses the row to a contender, " +
			"and its read-modify-write lands after the contender's acknowledged add (lost-add, stale-holder-write).",
	},
	{
		Lock: "caslock", Faults: clientClock, Seed: 6402, Want: checker.Valid, Tier: Full,
		Mechanism: "The client clock makes only the lock id (a time UUID, compared for equality): with one row, no decision reads it.",
	},
	{
		// Valid, but for the load: its measured runs include an invalid one,
		// an add a loaded machine held for seconds (findings.md,
		// docs/locks.md); caslock/coord-gc-stall holds one on demand.
		Lock: "caslock", Faults: partitionFault, Seed: 6403, Want: checker.Valid, Tier: Full,
		Load: loadBound("caslock/coord-gc-stall", lateWrites),
		Mechanism: "A cut node costs LWT time-outs: caslock returns the error after an attempted release, recorded as unknown; the row's " +
			"TTL frees it. The lock holds, but nothing fences the protected writes: a write sent inside the lease that the cut or " +
			"the machine's load slows past it lands after the next holder took the row (stale-holder-write: \"a write outlived " +
			"its lease\"), in the runs where that slowness catches a write.",
	},
	{
		Lock: "caslock", Faults: killFault, Seed: 6404, Want: checker.Valid, Tier: Full,
		Mechanism: "A killed replica leaves a quorum of two: attempts in flight end unknown and the rest go on.",
	},
	{
		// With the fault's default skew (the 3 s timeout plus 1-3 s) runs missed
		// it: the cell lives twice the timeout, 6 s, and a cycle's hold lasts
		// tens of milliseconds, so only skews past about 5 s (frac(grant second)
		// + skew + hold age >= 6 s) could see a holder's cell expired. The row
		// skews past the cell's life instead (its TTL plus 1-3 s, as the default
		// is the lease's TTL plus 1-3 s): every attempt through the skewed
		// coordinator then finds any cell expired. A window still misses when
		// the skewed contender, which now wins every attempt, re-acquires at
		// once after each release and no other client holds during its attempts:
		// 40 s gives about seven windows.
		Lock: "caslock", Faults: coordClock, Time: 40 * s, SkewMin: 7 * s, SkewMax: 9 * s, Seed: 6405, Want: checker.Invalid, Tier: Full,
		Mechanism: "caslock's cell lives twice its timeout (6 s for 3 s): a contender's coordinator running 7-9 s ahead reads the holder's " +
			"\"[lock]\" cell as expired, so IF \"[lock]\" = null applies and the row is granted twice (overlapping-holds of tens of " +
			"milliseconds). A skew between the timeout and twice it catches only a hold older than twice the timeout less the skew: " +
			"doubling the TTL narrows the window, it does not close it.",
	},
	{
		Lock: "temporal-shard", Faults: noFault, Seed: 6410, Want: checker.Valid, Tier: Full,
		Mechanism: "Every acquire steals the shard (range_id + 1 IF range_id = the one read); a stale owner's write batch fails on IF range_id = ? in the same Paxos round.",
	},
	{
		Lock: "temporal-shard", Faults: clientPause, Seed: 6411, Want: checker.Valid, Tier: Quick,
		Mechanism: "The stalled owner's write is one conditional batch with IF range_id = its own: after a steal the batch does not apply (shard ownership lost), so nothing is overwritten.",
	},
	{
		Lock: "temporal-shard", Faults: clientClock, Seed: 6412, Want: checker.Valid, Tier: Full,
		Mechanism: "Ownership is a counter in the data: no client clock is read.",
	},
	{
		Lock: "temporal-shard", Faults: partitionFault, Seed: 6413, Want: checker.Valid, Tier: Full,
		Mechanism: "Cut nodes cost time-outs (unknown steals and writes); a write that applies carries the current range id, whatever the cut.",
	},
	{
		Lock: "temporal-shard", Faults: killFault, Seed: 6414, Want: checker.Valid, Tier: Full,
		Mechanism: "As under partitions: unknown outcomes, no lost write.",
	},
	{
		Lock: "temporal-shard", Faults: coordClock, Seed: 6415, Want: checker.Valid, Tier: Full,
		Mechanism: "No TTL and no expiry: a coordinator's clock changes ballot timestamps, not what IF range_id = ? compares.",
	},
	{
		Lock: "temporal-shard", Faults: clientPause, Workload: workload.ShapeLeader, Seed: 6416, Want: checker.Valid, Tier: Full,
		Mechanism: "Shard ownership as Temporal uses it, a long-lived owner writing as it goes: a contender's steal ends the stalled owner's term in the data, and its writes after the steal do not apply.",
	},
	// Temporal keeps its state in Cassandra and claims it durable, so its
	// ownership meets the power cut of every replica at once: on
	// Cassandra's default commitlog (periodic) and on batch.
	{
		Lock: "temporal-shard", Faults: rackPowerLoss, Cluster: periodic, Seed: 6450, Want: checker.Invalid, Tier: Full,
		Mechanism: "Every replica forgets the commitlog's unsynced tail at once: acknowledged shard writes are lost, and the range id " +
			"they carried goes back, so fencing in the data is only as durable as the data.",
	},
	{
		Lock: "temporal-shard", Faults: rackPowerLoss, Cluster: batch, Seed: 6460, Want: checker.Valid, Tier: Full,
		Mechanism: "With commitlog_sync batch nothing is acknowledged before it is synced, so the cut takes only attempts in flight.",
	},
}

// JavaLocks are the catalogue's Java locks (docs/locks.md,
// plugins/java-locks): ShedLock's Cassandra provider as released, and
// Cassandra Sidecar's lease, Reaper's leader lock and Astyanax's row lock
// re-expressed, each a plug-in. Their rates are findings.md's, from
// rates.jsonl (`lockcheck matrix --rows '^(shedlock|sidecar|reaper|astyanax)/'
// --tier all --repeat 10 --record scenario/rates.jsonl`).
var JavaLocks = []JavaLock{
	{
		Name: "shedlock", StallSeed: 6540, Lease: "lockAtMostFor", Taken: "the next instance's UPDATE ... IF lockUntil < now takes the expired lock",
		Expect: []Expect{
			{
				Faults: noFault, Seed: 6500, Want: checker.Valid, Tier: Full,
				Mechanism: "ShedLock's LWTs (INSERT ... IF NOT EXISTS, UPDATE ... IF lockUntil < now) at QUORUM/SERIAL with one clock for " +
					"every client: one holder at a time.",
			},
			{
				Faults: clientPause, Seed: 6501, Want: checker.Invalid, Tier: Full,
				Mechanism: "A holder stopped past lockAtMostFor: the next instance's UPDATE ... IF lockUntil < now takes the expired lock " +
					"and adds, then the stalled holder's write lands over it (lost-add, stale-holder-write). ShedLock has no " +
					"fencing; its contract is that lockAtMostFor outlasts the task.",
			},
			{
				Faults: clientClock, Seed: 6502, Want: checker.Valid, Tier: Full,
				Mechanism: "lockcheck's client-clock sets a contender's clock behind: its UPDATE ... IF lockUntil < now finds every live " +
					"lock unexpired and waits longer, the safe direction. It takes a lock only if it was idle for longer than the " +
					"offset, and then writes a lockUntil already past for the others: not seen here (one lock, always in use).",
			},
			{
				// The shape ShedLock is made for, a scheduled task that holds the lock
				// for seconds and extends it. The cycle shape (short holds, default
				// skews of 1-30 s) did not catch it, and its row is gone: the fault
				// reached the JVM (libfaketime; the skewed client took the lock at once
				// and kept it), but ShedLock's unlock writes lockUntil = the skewed now,
				// which locks every other client out for the offset, so a fault had one
				// chance, its first take, and with holds of tens of milliseconds that
				// take came after the holder's release. Here a leader holds at every
				// step; skews of 4-10 s are all past the lease left (at most the 3 s
				// TTL), so every step can steal.
				Faults: clientClockAhead, Workload: workload.ShapeLeader, Seed: 6537, Want: checker.Invalid, Tier: Full,
				Mechanism: "A contender whose clock runs ahead of the leader's by more than the lease left reads lockUntil (the leader's " +
					"clock plus lockAtMostFor) as past, and its UPDATE ... IF lockUntil < now, now from its own clock, applies: it " +
					"leads and writes while the leader, whose next extend (IF lockedBy = its name) fails, still writes as leader " +
					"(overlapping-holds, stale-holder-write).",
			},
			{
				// Asserted valid while its invalid runs were all on a loaded
				// machine; on a machine otherwise idle it was invalid too, so it is
				// a flaw of its own, asserted at its measured rate (findings.md).
				Faults: partitionFault, Seed: 6504, Want: checker.Invalid, Catch: 1, Tier: Full,
				Mechanism: "Cut nodes make LWTs time out: ShedLock logs an insert's or update's server error and answers not locked (a " +
					"lock it may have taken stays unused until lockAtMostFor), and lets client time-outs through (unknown). The lock " +
					"fences nothing, and no load is needed: a critical section's write sent inside lockAtMostFor that the cut itself " +
					"holds up (an acquire slowed by the cut leaves little of the lease; the write waits on a cut replica or coordinator) " +
					"lands after the next instance took the lock (stale-holder-write, lost-add: the report's \"a write outlived its " +
					"lease\"), and the slowed holder's unlock (UPDATE ... IF lockUntil >= now AND lockedBy = ?, whose outcome ShedLock does " +
					"not return) still answers ok (non-linearizable: \"a release answered ok for a hold that had run out\"). " +
					"shedlock/coord-gc-stall makes the late write certain.",
			},
			{
				// Valid, but for the load: its measured runs include an invalid
				// one, a write slowed for seconds on a loaded machine (findings.md,
				// docs/locks.md); shedlock/coord-gc-stall holds one on demand.
				Faults: killFault, Seed: 6505, Want: checker.Valid, Tier: Full,
				Load: loadBound("shedlock/coord-gc-stall", lateWrites),
				Mechanism: "A killed replica leaves a quorum: attempts in flight time out (not locked, or unknown) and the rest go on. " +
					"As under partitions, the lock holds but fences nothing: a critical section's write slowed by the kill or the " +
					"machine's load past lockAtMostFor lands after the next instance took the lock (stale-holder-write: \"a write " +
					"outlived its lease\").",
			},
			{
				Faults: coordClock, Seed: 6506, Want: checker.Valid, Tier: Full,
				Mechanism: "No TTL and no server time: a coordinator's clock moves ballots, not lockUntil, which the clients write.",
			},
		},
	},
	{
		Name: "sidecar", StallSeed: 6541, Lease: "the TTL", Taken: "the row expires, another instance claims the lease",
		Expect: []Expect{
			{
				Faults: noFault, Seed: 6510, Want: checker.Valid, Tier: Full,
				Load: loadBound("sidecar/coord-net-delay", lateRenewals),
				Mechanism: "One LWT per claim decides; the holder's extend (UPDATE ... USING TTL IF owner = ?) keeps it; Sidecar has no " +
					"release, so the next holder waits out the TTL. Not on an overloaded machine, with no fault: an extend that times out " +
					"leaves the holder keeping its lease by its own reckoning past the row's whole-second expiry while another instance " +
					"claims it, which sidecar/coord-partition and sidecar/coord-net-delay make certain. The time-out comes from the " +
					"load, not from contention.",
			},
			{
				// Found from an invalid run of sidecar/none: its report named the
				// whole-second expiry, the plug-in's stderr the extend that threw just
				// before. The cut must fall on the holder's coordinator as it extends:
				// 20 s (about three cuts) missed it in some runs, 60 s deals about ten.
				Faults: coordPartition, Time: 60 * s, Seed: 6591, Want: checker.Invalid, Tier: Full,
				Mechanism: "The holder's coordinator is cut: its extend throws, and Sidecar keeps the lease until its own reckoning " +
					"(the last reply's instant plus the TTL) runs out. Cassandra expires the row in whole seconds from the replica's " +
					"write, up to a second and the reply's latency sooner, so an instance on the other side claims it while the " +
					"holder still writes (overlapping-holds, stale-holder-write, lost-add).",
			},
			{
				Faults: clientPause, Seed: 6511, Want: checker.Invalid, Tier: Full,
				Mechanism: "A holder stopped past the TTL: the row expires, another instance claims the lease and adds, then the stalled " +
					"holder's write lands (lost-add, stale-holder-write). No fencing, as its javadoc warns.",
			},
			{
				Faults: clientClock, Seed: 6512, Want: checker.Valid, Tier: Full,
				Mechanism: "Sidecar reads its wall clock only to time out a lease whose extend failed; a contender's clock behind changes " +
					"nothing it decides.",
			},
			{
				Faults: partitionFault, Time: 60 * s, Seed: 6513, Want: checker.Invalid, Tier: Full,
				Mechanism: "Sidecar counts its lease from the reply (Instant.now() plus the TTL); Cassandra counts the row's TTL in whole " +
					"seconds from the write at the replica. Partitions slow the claims and extends, so the row expires before the " +
					"holder's reckoning: a contender's claim applies while the holder still holds and writes (overlapping-holds, " +
					"stale-holder-write, lost-add).",
			},
			{
				Faults: killFault, Time: 60 * s, Seed: 6514, Want: checker.Invalid, Tier: Full,
				Mechanism: "As under partitions: a killed replica slows the LWTs, and the row, whose TTL runs from the write in whole " +
					"seconds, expires before the holder's reckoning from the reply; the next claim applies while the holder holds " +
					"(overlapping-holds).",
			},
			{
				// A fault has about one chance: the claim a contender makes through the
				// skewed coordinator writes a row that coordinator expires at its own
				// clock plus the TTL, so the others' coordinators see it live for the
				// offset longer and lock them out; the contender's first claim must land
				// inside another's hold. A valid run is one where each first claim was
				// granted in the gap between the holder's release (Sidecar's writes
				// nothing) and its next extend, so no hold overlapped. Refusals "lease
				// held by null" are Sidecar's own "owner is unknown": the claim task
				// sets its leaseholder to null when a claim throws (CAS write time-outs
				// under contention, CASWriteUnknown and WriteTimeout at SERIAL, each
				// followed for about a second by the driver's "No connection was
				// available" on the pinned coordinator), not a row without an owner. A
				// claim that threw may have applied, so the adapter answers unknown, as
				// the ShedLock and Reaper adapters do.
				Faults: coordClock, Seed: 6515, Want: checker.Invalid, Tier: Full,
				Mechanism: "The lease is a TTL the coordinator expires: a contender's coordinator running ahead by more than the lease has " +
					"left finds the row expired, and INSERT ... IF NOT EXISTS grants it again (overlapping-holds). The row that claim " +
					"writes expires by the skewed clock, locking the others out for the offset: about one chance per fault.",
			},
			{
				Faults: noFault, Workload: workload.ShapeLeader, Seed: 6516, Want: checker.Valid, Tier: Full,
				Mechanism: "The leader extends at a third of its lease; a contender's claims fail until it stops.",
			},
			{
				Faults: clientPause, Workload: workload.ShapeLeader, Seed: 6517, Want: checker.Invalid, Tier: Full,
				Mechanism: "A leader stopped past the TTL misses its extends: the row expires, a contender claims the lease and writes, " +
					"and the old leader writes on when it resumes, before its next extend tells it the lease is another's " +
					"(stale-holder-write, lost-add).",
			},
			{
				Faults: partitionFault, Workload: workload.ShapeLeader, Seed: 6518, Want: checker.Invalid, Tier: Full,
				Mechanism: "An extend slowed by the cut returns late, and Sidecar counts the lease from that reply while Cassandra counts the row's TTL in whole seconds from " +
					"the write: the row expires first and a contender's claim applies while the leader still leads (overlapping-holds, " +
					"the report's \"let the lease go before its own deadline\"), and the leader's writes land in its term.",
			},
		},
	},
	{
		Name: "reaper", StallSeed: 6542, Lease: "the TTL", Taken: "the row expires, another instance takes the lock",
		Expect: []Expect{
			{
				Faults: noFault, Seed: 6520, Want: checker.Valid, Tier: Full,
				Mechanism: "INSERT ... IF NOT EXISTS USING TTL at QUORUM decides each lead; release deletes it IF reaper_instance_id = " +
					"ours.",
			},
			{
				Faults: clientPause, Seed: 6521, Want: checker.Invalid, Tier: Full,
				Mechanism: "A leader stopped past the TTL: the row expires, another instance takes the lead and writes, then the stalled " +
					"one writes on (lost-add, stale-holder-write). Reaper keeps no clock of a lead and has no fencing.",
			},
			{
				Faults: clientClock, Seed: 6522, Want: checker.Valid, Tier: Full,
				Mechanism: "Reaper reads no client clock: the lead is a server TTL and an instance id.",
			},
			{
				Faults: partitionFault, Seed: 6523, Want: checker.Invalid, Catch: 7, Tier: Full,
				Mechanism: "Reaper keeps no clock of a lead; " +
					"lockcheck credits it with the TTL from each send, and the row, whose TTL Cassandra counts in whole seconds from the " +
					"replica's write, can expire up to a second sooner, so a take applies while the holder holds (overlapping-holds); " +
					"and a write slowed by the cut past the lease lands in the next holder's term, which nothing fences " +
					"(stale-holder-write, lost-add: the report's \"a write outlived its lease\").",
			},
			{
				// Runs before the plug-in gave each owner a Reaper instance of its own
				// are not recorded: some of their overlaps were a client's replacement
				// renewing its predecessor's lead. The bar is the measured rate
				// (findings.md): a kill must slow a renew into the last second of the
				// lease, which a drawn kill does in some runs only.
				Faults: killFault, Time: 60 * s, Seed: 6524, Want: checker.Invalid, Catch: 4, Tier: Full,
				Mechanism: "Reaper keeps no clock of a lead; lockcheck credits it with the TTL from each statement's send, yet Cassandra " +
					"counts the row's TTL in whole seconds from the replica's write, so the row can expire up to a second sooner. A kill " +
					"slows the holder's renews past that moment, and another instance's INSERT ... IF NOT EXISTS " +
					"takes the lead while it still holds (overlapping-holds). A drawn kill slows a renew into the lease's last second in " +
					"some runs only.",
			},
			{
				Faults: coordClock, Seed: 6525, Want: checker.Invalid, Tier: Full,
				Mechanism: "The lead is a TTL the coordinator expires: a contender's coordinator running ahead by more than the lead has " +
					"left finds the row expired and INSERT ... IF NOT EXISTS grants it again (overlapping-holds).",
			},
			{
				// Asserted valid while its invalid runs were all on a loaded
				// machine; on a machine otherwise idle it was invalid too, so it is
				// a flaw of its own, asserted at its measured rate (findings.md).
				// Runs before the plug-in gave each owner a Reaper instance of its
				// own are not recorded.
				Faults: noFault, Workload: workload.ShapeLeader, Seed: 6526, Want: checker.Invalid, Catch: 1, Tier: Full,
				Mechanism: "The leader renews (UPDATE ... USING TTL IF reaper_instance_id = ?) at a third of the TTL while contenders " +
					"poll INSERT ... IF NOT EXISTS. No fault and no load are needed: when a contender's take contends with a renew, " +
					"the renew can come back unknown (CASWriteUnknownException, \"proposal was not accepted by a quorum\"), which " +
					"ends the leader's work; the lease lockcheck credits from its last renew (the TTL from the send) then outlives the " +
					"row, whose TTL Cassandra counts in whole seconds from the replica's write, by up to a second, and a contender's " +
					"take applies in that second (overlapping-holds). A loaded machine makes renews time out, and " +
					"reaper/coord-net-delay/leader makes that certain.",
			},
			{
				Faults: clientPause, Workload: workload.ShapeLeader, Seed: 6527, Want: checker.Invalid, Tier: Full,
				Mechanism: "A leader stopped past the TTL: the lead expires, another instance takes it and writes, and the old leader " +
					"writes on when it resumes, before its next renew fails (stale-holder-write, lost-add).",
			},
			{
				Faults: partitionFault, Workload: workload.ShapeLeader, Seed: 6528, Want: checker.Invalid, Catch: 8, Tier: Full,
				Mechanism: "A renew that times out ends " +
					"the leader's work, as Reaper's segment runner does, but a renew that applies late leaves a lead whose row expires, in " +
					"whole seconds from the replica's write, before the TTL counted from the send: a contender takes it while the leader " +
					"still leads (overlapping-holds).",
			},
		},
	},
	{
		Name: "astyanax", StallSeed: 6543, Lease: "the lock timeout", Taken: "its column counts as stale, a contender takes the lock",
		Expect: []Expect{
			{
				Faults: noFault, Seed: 6530, Want: checker.Valid, Tier: Full,
				Mechanism: "Write the lock column, then read every lock column at LOCAL_QUORUM: two that race both see each other and both " +
					"back off (the lock is not a transaction, but quorum writes and reads intersect).",
			},
			{
				Faults: clientPause, Seed: 6531, Want: checker.Invalid, Tier: Full,
				Mechanism: "A holder stopped past the lock timeout: its column's expiry (its clock + timeout) has passed, so a contender " +
					"counts it stale, takes the lock and adds, and the stalled holder's write lands over it (lost-add, " +
					"stale-holder-write).",
			},
			{
				// Asserted safe until a run at the default skews (1-30 s) was invalid.
				// Skews past the 3 s timeout and two clients make the skewed one win
				// often enough for a rate.
				Faults: clientClock, Clients: 2, SkewMin: 4 * s, SkewMax: 10 * s, Seed: 6532, Want: checker.Invalid, Tier: Full,
				Mechanism: "A contender whose clock is behind by more than the lock timeout writes a lock column whose expiry is already " +
					"past on every other client's clock: the others count it stale as soon as it is written and walk past it, while it " +
					"counts theirs live and mostly backs off. When it does get in (its read racing another's write, or a free row), " +
					"another contender enters beside it (overlapping-holds, lost-add).",
			},
			{
				// With the default skews (1-30 s, log-uniform) a run that drew only
				// skews under the lock timeout (3 s) a contender must outrun was valid;
				// skews of 4-10 s are all past it. A run can still be valid: five
				// contenders on one row mostly livelock (each sees another's column and
				// backs off), so while the skewed client took the lock nobody else held
				// it, and it then kept it to itself, its column unexpired to the others
				// for its offset.
				Faults: clientClockAhead, Seed: 6533, Want: checker.Invalid, Tier: Full,
				Mechanism: "The lock column's value is an expiry of the holder's clock, compared with the reader's: a contender whose " +
					"clock runs ahead past it counts the holder's column stale, finds no other, and enters while the holder is " +
					"inside (overlapping-holds). Five contenders on one row mostly livelock (each backs off from another's " +
					"column), so now and then the skewed one enters with nobody inside and keeps the lock to itself, and that run " +
					"stays valid.",
			},
			{
				Faults: partitionFault, Seed: 6534, Want: checker.Valid, Tier: Full,
				Mechanism: "LOCAL_QUORUM writes and reads time out under a cut (unknown: the column may stay until its expiry); those that " +
					"succeed still intersect.",
			},
			{
				Faults: killFault, Seed: 6535, Want: checker.Valid, Tier: Full,
				Mechanism: "A killed replica leaves a quorum: LOCAL_QUORUM writes and reads go on.",
			},
			{
				Faults: coordClock, Seed: 6536, Want: checker.Valid, Tier: Full,
				Mechanism: "No server time: expiries and write timestamps are the clients'.",
			},
		},
	},
}

// registerExpect is Cassandra's LWT itself as a compare-and-set register
// (workload.ShapeRegister; issue 23), judged linearizable per key, on the
// shared cluster; each release line and Paxos variant adds its own
// (Releases). One key and five clients: the most contention. So a verdict
// on a lock can be read beside a verdict on the ground it stands on.
var registerExpect = []Expect{
	{
		Lock: workload.ShapeRegister, Faults: partitionPause, Seed: 23000, Want: checker.Valid, Tier: Full,
		Mechanism: "SERIAL reads, IF NOT EXISTS and IF value = ? on one key stay linearizable while a minority is cut off or paused: " +
			"rounds cut mid-way end unknown (WriteTimeout CAS) and show later or never, as an unknown write may.",
	},
	{
		Lock: workload.ShapeRegister, Faults: nodeFaults, Seed: 23001, Want: checker.Valid, Tier: Full,
		Mechanism: "The same under every node fault (kills and clock steps too): Paxos ballots order the rounds, not the nodes' clocks.",
	},
	{
		Lock: workload.ShapeRegister, Faults: coordPartition, Time: 60 * s, Seed: 23002, Want: checker.Valid, Tier: Full,
		Mechanism: "A coordinator cut off in the middle of its rounds (a proposal accepted by a minority) while other coordinators read and write: " +
			"with CASSANDRA-12126's fix the next round through another coordinator completes or supersedes it.",
	},
}

// Releases are the release lines the rows run on besides the shared
// cluster's (issue 23): on each, the register under every node fault per
// Paxos variant, one fenced recipe under every node fault and the
// published lease's known flaw, so that a lock's verdict on a release
// stands beside its register's on the same cluster. The known-unsafe
// variants (CASSANDRA-12126's fix off) are controls that do not fire:
// under the schedule that strands proposals (coord-partition) the
// register stays linearizable, because what the fix adds is stronger than
// linearizability with unknown outcomes (docs/notes-on-cassandra.md).
// Their rows assert what runs show, valid, so that a change there is seen.
var Releases = []Release{
	{
		Line: "", // the node image's (cluster.DefaultVersion)
		Expect: []Expect{
			{
				Lock: workload.ShapeRegister, Faults: nodeFaults, Cluster: Cluster{Paxos: PaxosV2}, Seed: 23003, Want: checker.Valid, Tier: Full,
				Mechanism: "Paxos v2 on 5.0: as v1, linearizable under every node fault.",
			},
			{
				Lock: workload.ShapeRegister, Faults: nodeFaults, Cluster: Cluster{Paxos: PaxosV2, PaxosStatePurging: purgeRepaired}, Seed: 23011, Want: checker.Valid, Tier: Full,
				Mechanism: "Paxos v2 on 5.0 with paxos_state_purging repaired (Paxos state kept until a Paxos repair covers it): linearizable under every node fault.",
			},
			{
				Lock: workload.ShapeRegister, Faults: nodeFaults, Cluster: Cluster{Paxos: PaxosV2, PaxosStatePurging: purgeGCGrace}, Seed: 23012, Want: checker.Valid, Tier: Full,
				Mechanism: "Paxos v2 on 5.0 with paxos_state_purging gc_grace (Paxos state purged in compaction past the table's gc_grace_seconds): linearizable under every node fault.",
			},
			{
				Lock: workload.ShapeRegister, Faults: coordPartition, Cluster: Cluster{Paxos: PaxosV1Unsafe}, Time: 60 * s, Seed: 23007, Want: checker.Valid, Tier: Full,
				Mechanism: "A control that does not fire: with CASSANDRA-12126's fix off, a proposal stranded on the cut coordinator's replica " +
					"can complete after a SERIAL read missed it, but its client saw a timeout, and an unknown write may take effect that late: " +
					"linearizability with unknown outcomes cannot tell (docs/notes-on-cassandra.md).",
			},
		},
	},
	{
		Line: "4.0", QuickSeed: 23201,
		Expect: []Expect{
			{
				Lock: workload.ShapeRegister, Faults: nodeFaults, Seed: 23004, Want: checker.Valid, Tier: Full,
				Mechanism: "Cassandra 4.0 (Paxos v1 only, CASSANDRA-12126 fixed): linearizable under every node fault.",
			},
			{
				Lock: workload.ShapeRegister, Faults: coordPartition, Cluster: Cluster{Paxos: PaxosV1UnsafeReads}, Time: 60 * s, Seed: 23008, Want: checker.Valid, Tier: Full,
				Mechanism: "The same control on 4.0 (-Dcassandra.unsafe.disable-serial-reads-linearizability=true: SERIAL reads only).",
			},
			{
				Lock: "lease-fenced", Faults: nodeFaults, Time: 60 * s, Seed: 23103, Want: checker.Valid, Tier: Full,
				Mechanism: "Cassandra 4.0 (Paxos v1 only): the fenced lease under every node fault.",
			},
			{
				Lock: "lease", Faults: clientPause, Seed: 23104, Want: checker.Invalid, Tier: Full,
				Mechanism: "The published lease's flaw on 4.0: a holder stalled past its TTL writes after the next holder's adds (lost-add).",
			},
		},
	},
	{
		Line: "4.1", QuickSeed: 23200,
		Expect: []Expect{
			{
				Lock: workload.ShapeRegister, Faults: nodeFaults, Seed: 23005, Want: checker.Valid, Tier: Full,
				Mechanism: "Cassandra 4.1, Paxos v1: linearizable under every node fault.",
			},
			{
				Lock: workload.ShapeRegister, Faults: nodeFaults, Cluster: Cluster{Paxos: PaxosV2}, Seed: 23006, Want: checker.Valid, Tier: Full,
				Mechanism: "Cassandra 4.1, Paxos v2 (new in 4.1): linearizable under every node fault.",
			},
			{
				Lock: "lease-fenced", Faults: nodeFaults, Time: 60 * s, Seed: 23100, Want: checker.Valid, Tier: Full,
				Mechanism: "Cassandra 4.1, Paxos v1: the fenced lease under every node fault, as on 5.0: grants and tokens are LWTs, the resource refuses an older token.",
			},
			{
				Lock: "lease", Faults: clientPause, Seed: 23101, Want: checker.Invalid, Tier: Full,
				Mechanism: "The published lease's flaw does not depend on the release: a holder stalled past its TTL writes after the next holder's adds (lost-add).",
			},
			{
				Lock: "lease-fenced", Faults: nodeFaults, Cluster: Cluster{Paxos: PaxosV2}, Time: 60 * s, Seed: 23102, Want: checker.Valid, Tier: Full,
				Mechanism: "Cassandra 4.1, Paxos v2 (its first release): the fenced lease under every node fault.",
			},
			{
				Lock: workload.ShapeRegister, Faults: nodeFaults, Cluster: Cluster{Paxos: PaxosV2, PaxosStatePurging: purgeRepaired}, Seed: 23009, Want: checker.Valid, Tier: Full,
				Mechanism: "Cassandra 4.1, Paxos v2 with paxos_state_purging repaired (Paxos state kept until a Paxos repair covers it): linearizable under every node fault. " +
					"No repair and no purge happen in the run: CASSANDRA-19617, fixed in 4.1.6, needs both (docs/notes-on-cassandra.md).",
			},
			{
				Lock: workload.ShapeRegister, Faults: nodeFaults, Cluster: Cluster{Paxos: PaxosV2, PaxosStatePurging: purgeGCGrace}, Seed: 23010, Want: checker.Valid, Tier: Full,
				Mechanism: "Cassandra 4.1, Paxos v2 with paxos_state_purging gc_grace: linearizable under every node fault.",
			},
		},
	},
	{
		// Accord (CEP-15) on 6.0-alpha2, experimental: every table created
		// on the cluster has transactional_mode full, so the register's and
		// the lease's LWTs run as Accord transactions (no Paxos state is
		// written for them), and accord-txn is a lock written as one.
		Line: "6.0-alpha",
		Expect: []Expect{
			{
				Lock: workload.ShapeRegister, Faults: noFault, Cluster: accordFull, Seed: 23400, Want: checker.Valid, Tier: Full,
				Mechanism: "Accord on 6.0-alpha2 (transactional_mode full): the register's IF NOT EXISTS, IF value = ? and SERIAL reads run as Accord transactions: linearizable.",
			},
			{
				Lock: workload.ShapeRegister, Faults: accordNodeFaults, Cluster: accordFull, Seed: 23401, Want: checker.Valid, Tier: Full,
				Mechanism: "The same under partitions and clock steps of the nodes: Accord orders transactions by its own timestamps, agreed by a quorum.",
			},
			{
				Lock: "lease-fenced", Faults: noFault, Cluster: accordFull, Seed: 23402, Want: checker.Valid, Tier: Full,
				Mechanism: "The fenced lease's conditional batch (a TTL cell and the fence bumped in one LWT) runs as an Accord transaction whose TTL'd owner " +
					"is gone at once (as the lease's row below), so holds overlap; each grant still bumps the fence, and the resource refuses an older token.",
			},
			{
				Lock: "lease-fenced", Faults: accordFaults, Cluster: accordFull, Seed: 23403, Want: checker.Valid, Tier: Full,
				Mechanism: "The same under partitions and clock steps: the resource, itself written by LWTs run by Accord, refuses an older token.",
			},
			{
				Lock: "lease", Faults: noFault, Cluster: accordFull, Seed: 23406, Want: checker.Invalid, Tier: Full,
				Mechanism: "With no fault: the lease's `INSERT ... IF NOT EXISTS USING TTL` applies, but run as an Accord transaction on 6.0-alpha2 " +
					"its TTL'd cells are gone at once (a SERIAL or QUORUM read right after finds no row), so the next contender's IF NOT EXISTS " +
					"applies too and holds overlap (docs/notes-on-cassandra.md).",
			},
			{
				Lock: "accord-txn", Faults: noFault, Cluster: accordFull, Seed: 23404, Want: checker.Valid, Tier: Full,
				Mechanism: "A lock written as one Accord transaction (LET the row; IF its expiry is past THEN set owner, expiry and fence += 1): grants and tokens from the row as it was before.",
			},
			{
				Lock: "accord-txn", Faults: accordFaults, Cluster: accordFull, Seed: 23405, Want: checker.Valid, Tier: Full,
				Mechanism: "The same under partitions, node clock steps and client clock skew: the lease is on the client's clock " +
					"(a transaction takes no TTL), so a contender running ahead may enter beside the holder, and the resource refuses the older token.",
			},
			// transactional_mode mixed_reads: the register's, the lease's
			// and the resource's LWTs and SERIAL reads still run as Accord
			// transactions (only non-SERIAL reads do not).
			{
				Lock: workload.ShapeRegister, Faults: noFault, Cluster: accordMixed, Seed: 23407, Want: checker.Valid, Tier: Full,
				Mechanism: "Accord with transactional_mode mixed_reads: the register's conditional writes and SERIAL reads run as Accord transactions " +
					"(mixed_reads changes only non-SERIAL reads, which the register does not make): linearizable.",
			},
			{
				Lock: workload.ShapeRegister, Faults: accordNodeFaults, Cluster: accordMixed, Seed: 23408, Want: checker.Valid, Tier: Full,
				Mechanism: "The same under partitions and node clock steps.",
			},
			{
				Lock: "lease-fenced", Faults: noFault, Cluster: accordMixed, Seed: 23409, Want: checker.Valid, Tier: Full,
				Mechanism: "The fenced lease under mixed_reads: its grants are LWTs run by Accord, each bumping the fence, and the resource refuses an older token.",
			},
			{
				Lock: "lease-fenced", Faults: accordFaults, Cluster: accordMixed, Seed: 23410, Want: checker.Valid, Tier: Full,
				Mechanism: "The same under partitions, node clock steps and client clock skew.",
			},
			{
				Lock: "accord-txn", Faults: noFault, Cluster: accordMixed, Seed: 23411, Want: checker.Valid, Tier: Full,
				Mechanism: "The lock written as one Accord transaction on a mixed_reads table (BEGIN TRANSACTION runs on any mode but off).",
			},
			{
				Lock: "accord-txn", Faults: accordFaults, Cluster: accordMixed, Seed: 23412, Want: checker.Valid, Tier: Full,
				Mechanism: "The same under partitions, node clock steps and client clock skew.",
			},
		},
	},
}
