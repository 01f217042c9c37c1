package scenario

import (
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// Named regression rows, written by hand: a known flaw's smallest
// reproduction, its faults a schedule dealt as written (not drawn), so that
// it fails in seconds and stays a one-command target (`matrix --rows
// NAME`). Such a row is a Row literal: it names no axis, since its point
// is the one schedule, client count and time it was found or measured
// with.

// leaseStalls is lease/client-pause/shrunk's schedule: two stalls of the
// next holder past its lease. The rows of the same late write on other
// releases and with a resource that accepts any token deal it too.
var leaseStalls = &nemesis.Schedule{Source: "lease/client-pause, seed 1001", Steps: []nemesis.Step{
	{Kind: nemesis.ClientPause, At: nemesis.Duration(2 * s), For: nemesis.Duration(5 * s), Value: []byte(`{"ms":4700}`)},
	{Kind: nemesis.ClientPause, At: nemesis.Duration(9 * s), For: nemesis.Duration(5 * s), Value: []byte(`{"ms":4700}`)},
}}

// javaLockStall is the Java locks' quick schedule: written by hand from
// their client-pause rows (first anomaly 5.4-6.8 s, after a stall past the
// 3 s lease), not shrunk from one run.
var javaLockStall = &nemesis.Schedule{Source: "one stall past the lease, 2 s in (the Java locks' client-pause rows)", Steps: []nemesis.Step{
	{Kind: nemesis.ClientPause, At: nemesis.Duration(2 * s), For: nemesis.Duration(4700 * time.Millisecond), Value: []byte(`{"ms":4700}`)},
}}

// javaStallRow is a Java lock's quick row (JavaLock.stallRow), its known
// flaw under the schedule that shows it soonest: javaLockStall, one stall
// of a holder past the 3 s lease, 2 s in, as lease/client-pause/leader/shrunk
// found for the published lease, dealt to two clients of
// plugins/java-locks (five JVMs starting at once take much of a short run
// on a loaded machine, and a stall needs only a holder and one contender);
// lease names what the stall outlasts, and taken how the next holder gets
// the lock.
func javaStallRow(lock string, seed int64, lease, taken string) Row {
	return Row{
		Name: lock + "/client-pause/shrunk", Recipe: lock, Command: "plugins/java-locks/run " + lock, Faults: []string{nemesis.ClientPause},
		Clients: 2, Time: 10 * s, Interval: 3 * s, Seed: seed, Schedule: javaLockStall,
		Want: checker.Invalid, Unsafe: true, Tier: Quick,
		Mechanism: "A holder stalled 4.7 s, past " + lease + " (3 s), 2 s into the run: " + taken +
			" and adds, then the stalled holder's write lands over it (lost-add, stale-holder-write).",
	}
}

// Regressions are the shrunk rows of issue 21 and the regression rows
// after them.
var Regressions = []Row{
	// Shrunk regression rows (issue 21): a known flaw's smallest
	// reproduction found by `lockcheck shrink`, its faults a schedule dealt
	// as written (not drawn), so that it fails in seconds and stays a
	// one-command target (`matrix --rows NAME`).
	{
		Name: "lease/client-pause/shrunk", Recipe: "lease", Faults: []string{nemesis.ClientPause}, Time: 16 * s, Interval: 3 * s, Seed: 6000,
		// From the schedule of a lease/client-pause run (two stalls), moved to
		// the start; `lockcheck shrink` of that run then found one stall and 9 s
		// enough.
		Schedule: leaseStalls,
		Want:     checker.Invalid, Unsafe: true, Tier: Quick,
		Mechanism: "Two stalls of the next holder, 4.7 s each (its 1.7 s lease plus 3 s), 2 s and 9 s into the run: each time another " +
			"client takes the expired lease and adds, and the stalled holder's read-modify-write lands over it (stale-holder-write, lost-add).",
	},
	{
		Name: "music/client-clock/shrunk", Recipe: "music", Faults: []string{nemesis.ClientClock}, Time: 8 * s, Interval: 3 * s, Seed: 6001,
		// `lockcheck shrink` of a music/client-clock run (five skews in 30 s):
		// one skew, 8 s.
		Schedule: &nemesis.Schedule{Source: "music/client-clock, seed 1004, shrunk", Steps: []nemesis.Step{
			{Kind: nemesis.ClientClock, At: nemesis.Duration(2 * s), For: nemesis.Duration(2162 * time.Millisecond), Value: []byte(`{"client":3,"offset":"-23.038s"}`)},
		}},
		Want: checker.Invalid, Unsafe: true, Tier: Quick,
		Mechanism: "Client 3's clock set 23 s behind at its next rest, 2 s into the run: its next time-UUID ref sorts before the holder's, " +
			"it finds itself on top and enters while the holder is inside (overlapping-holds), within seconds.",
	},
	{
		Name: "lease/coord-clock/shrunk", Recipe: "lease", Faults: []string{nemesis.CoordClock}, Pin: true, Time: 14 * s, Interval: 3 * s, Seed: 6002,
		// `lockcheck shrink` of a lease/coord-clock run found one skew of n1 for
		// 1.7 s in 8 s, caught too rarely for a row, so the row keeps its 3.4 s
		// window and skews n2 the same way after it.
		Schedule: &nemesis.Schedule{Source: "lease/coord-clock, seed 1012, shrunk", Steps: []nemesis.Step{
			{Kind: nemesis.CoordClock, At: nemesis.Duration(2 * s), For: nemesis.Duration(3400 * time.Millisecond), Nodes: []string{"n1"}, Value: []byte(`{"node":"n1","offset":"+5.756s"}`)},
			{Kind: nemesis.CoordClock, At: nemesis.Duration(8 * s), For: nemesis.Duration(3400 * time.Millisecond), Nodes: []string{"n2"}, Value: []byte(`{"node":"n2","offset":"+5.756s"}`)},
		}},
		Want: checker.Invalid, Unsafe: true, Tier: Quick,
		Mechanism: "A coordinator's clock 5.8 s ahead, more than a 3 s lease has left: an IF NOT EXISTS through it finds the holder's row " +
			"already expired and grants the lock again before the holder's deadline (overlapping-holds).",
	},
	{
		Name: "bakery/client-clock/shrunk", Recipe: "bakery", Faults: []string{nemesis.ClientClock}, Clients: 2, Time: 7 * s, Interval: 3 * s, Seed: 6003,
		// `lockcheck shrink` of a bakery/client-clock run (three skews in 20 s)
		// found one skew of 737 ms by -1.188 s, 2 clients, 7 s. Under make
		// test's two streams that skew was missed: a new write is shadowed only
		// while the clock is behind by more than the time since the client's own
		// last tombstone, which load stretches. 2.5 s for 1.5 s holds up under
		// that load.
		Schedule: &nemesis.Schedule{Source: "bakery/client-clock, seed 1009, shrunk; offset widened for load", Steps: []nemesis.Step{
			{Kind: nemesis.ClientClock, At: nemesis.Duration(2 * s), For: nemesis.Duration(1500 * time.Millisecond), Value: []byte(`{"client":0,"offset":"-2.5s"}`)},
		}},
		Want: checker.Invalid, Unsafe: true, Tier: Quick,
		Mechanism: "Client 0's clock set 2.5 s behind at its next rest, 2 s into the run, with one other contender: its new choosing and " +
			"number cells land under its own older tombstones, the other misses its ticket and enters while it holds (overlapping-holds, lost-add).",
	},
	{
		Name: "lease/client-pause/leader/shrunk", Recipe: "lease", Faults: []string{nemesis.ClientPause}, Workload: workload.ShapeLeader, Time: 10 * s, Interval: 3 * s, Seed: 6004,
		// `lockcheck shrink` of a lease/client-pause/leader run (three stalls in
		// 20 s): one 4.7 s stall 2 s into the run, 2 clients, 9 s (a 2.35 s
		// stall was valid). The row keeps the 5 clients, the schedule was
		// measured with them.
		Schedule: &nemesis.Schedule{Source: "lease/client-pause/leader, seed 1014, shrunk", Steps: []nemesis.Step{
			{Kind: nemesis.ClientPause, At: nemesis.Duration(2 * s), For: nemesis.Duration(4700 * time.Millisecond), Value: []byte(`{"ms":4700}`)},
		}},
		Want: checker.Invalid, Unsafe: true, Tier: Quick,
		Mechanism: "The leader stalled 4.7 s, longer than its lease, 2 s into the run: the next leader takes over and writes, and the " +
			"stalled leader resumes and writes as leader on top of it (stale-holder-write, lost-add).",
	},
	// Issue 21's last regression rows: bakery-one's cuts moved to the
	// start; the election, which needs no fault, an empty schedule with
	// fewer clients and a shorter run; the periodic commitlog's power
	// loss, one cut.
	{
		Name: "bakery-one/coord-partition/shrunk", Recipe: "bakery-one", Faults: []string{nemesis.CoordPartition}, Pin: true,
		Time: 13 * s, Interval: 2 * s, Seed: 6005,
		// bakery-one/coord-partition showed overlapping holds before its first
		// cut: stale reads at ONE need no fault, but the cut is what makes them
		// certain. Its five windows moved to the start, one per coordinator, by
		// hand (a window catches it in most runs). On a loaded machine a run
		// deals only the first (its clients slow to come to rest, its stop
		// slow), and that one window is enough (findings.md).
		Schedule: &nemesis.Schedule{Source: "bakery-one/coord-partition, seed 1010, three windows", Steps: []nemesis.Step{
			{Kind: nemesis.CoordPartition, At: nemesis.Duration(1 * s), For: nemesis.Duration(3 * s), Value: []byte(`{"node":"n3"}`)},
			{Kind: nemesis.CoordPartition, At: nemesis.Duration(5 * s), For: nemesis.Duration(3 * s), Value: []byte(`{"node":"n2"}`)},
			{Kind: nemesis.CoordPartition, At: nemesis.Duration(9 * s), For: nemesis.Duration(3 * s), Value: []byte(`{"node":"n1"}`)},
		}},
		Want: checker.Invalid, Unsafe: true, Tier: Full,
		Mechanism: "Each coordinator in turn cut off one way for 3 s while its clients rest: their tickets, written at ONE, reach no other " +
			"replica and the others' reads at ONE miss them, so they enter without waiting (overlapping-holds, lost-add). The bakery at ONE " +
			"fails without a fault too (stale reads across coordinators), but rarely: the cut makes it certain.",
	},
	{
		Name: "election/none/leader/shrunk", Recipe: "election", Workload: workload.ShapeLeader, Clients: 2, Time: 8 * s, Interval: 3 * s, Seed: 6006,
		// election/none/leader needs no fault: the shrink is in clients
		// and time (lockcheck shrink refuses a run without fault events).
		Schedule: &nemesis.Schedule{Source: "election/none/leader, seed 1017"},
		Want:     checker.Invalid, Unsafe: true, Tier: Quick,
		Mechanism: "No fault, two clients: the leader's re-claim does not refresh its claim's TTL, so the claim expires one TTL after " +
			"the grant while the leader still leads and heartbeats; the other client claims it and both lead (overlapping-holds, lost-add).",
	},
	{
		Name: "lease-fenced-broken/client-pause/shrunk", Recipe: "lease-fenced-broken", Faults: []string{nemesis.ClientPause}, Time: 16 * s, Interval: 3 * s, Seed: 6008,
		// Not shrunk from a run: lease/client-pause/shrunk's two stalls,
		// since the flaw is the same late write and only the resource's
		// check differs, then measured. It stands in the quick tier for
		// lease-fenced-broken/client-pause (30 s, full tier).
		Schedule: leaseStalls,
		Want:     checker.Invalid, Unsafe: true, Tier: Quick,
		Mechanism: "The control of the fenced promise on lease/client-pause/shrunk's two stalls: the stalled holder's write carries " +
			"its old token, the resource accepts any token, and the write lands over the next holder's adds (lost-add).",
	},
	{
		Name: "periodic/lease-fenced/rack-power-loss/shrunk", Recipe: "lease-fenced", Faults: []string{nemesis.RackPowerLoss}, Cluster: periodic,
		Time: 10 * s, Interval: 4 * s, Seed: 6007,
		// periodic/lease-fenced/rack-power-loss (seed 4000) cuts every
		// few seconds for 30 s; one cut 2 s in, while the commitlog's
		// unsynced tail holds the run's first seconds, is the whole flaw.
		// Written by hand from that mechanism, then measured.
		Schedule: &nemesis.Schedule{Source: "periodic/lease-fenced/rack-power-loss, seed 4000, one cut", Steps: []nemesis.Step{
			{Kind: nemesis.RackPowerLoss, At: nemesis.Duration(2 * s), For: nemesis.Duration(2 * s)},
		}},
		Want: checker.Invalid, Unsafe: true, Tier: Full,
		Mechanism: "One cut of every node's power 2 s into the run, for 2 s: every replica forgets the commitlog's unsynced tail " +
			"(synced every 10 s) at once, so the adds acknowledged in it are lost and the fencing counter goes back " +
			"(lost-add, token-not-increasing, stale-holder-write).",
	},
}

// slowCoordinator is the delay of the fenced controls' coord-net-delay rows
// (lease-fenced, temporal-shard): 0.7-1.5 s on every packet the slowed
// coordinator sends, from a moment a client of it holds. Its Paxos rounds
// and writes are late and some time out; the fence refuses whatever lands
// after a newer grant. (The published lease's row, which must catch a late
// write in every run, slows a holder's coordinator from its write on:
// writeDelay.)
var slowCoordinator = nemesis.NetBounds{DelayMin: 700 * time.Millisecond, DelayMax: 1500 * time.Millisecond, Jitter: 50 * time.Millisecond,
	RateMin: nemesis.DefaultNetBounds.RateMin, RateMax: nemesis.DefaultNetBounds.RateMax}

// Added are rows written by hand after every other: a row that fits no
// axis yet, or one brought in from a branch that appended it to the old
// hand-written table (scenario/rows.go before the axes). A Row literal
// goes here unchanged, name, seed and every field as it was, so that its
// rates stay attached (this file imports what such a literal uses: time,
// checker, nemesis, workload); move it into the expectation table, or its
// lock or release line into an axis, when its family grows.
var Added = []Row{
	// Rows appended on merge go here, in the order they were added.
	{
		// Aimed at a holder's write, with delays under the node's write
		// time-out (writeDelay): begun at once, with 0.7-1.5 s, it caught
		// the lease in some runs only (a window met a write only when it
		// opened inside one).
		Name: "lease/coord-net-delay", Recipe: "lease", Faults: []string{nemesis.CoordNetDelay}, Pin: true, AimWrite: true,
		Time: 30 * s, Interval: 10 * s, Seed: 7101,
		Net: writeDelay, Want: checker.Invalid, Unsafe: true, Tier: Full,
		Mechanism: "The published lease under a slow coordinator: as the next holder sends its add's write, inside its lease, " +
			"everything its coordinator sends starts to wait 1.6-1.8 s. The write reaches that node's replica at once and the " +
			"other replicas one delay later, while the lease the holder counted runs out; its acknowledgement comes two delays " +
			"after it was sent (3.4-4.5 s after the add's invocation, with the read and the shaping's set-up), after the row's " +
			"TTL (3 s, whole seconds from the acquire's ballot) ran out and a client pinned to a fast coordinator was granted " +
			"the lock: an add acknowledged inside another's hold (stale-holder-write). Mostly the write reached a quorum " +
			"before that grant, so only its holder's knowledge came late; where the set-up under load sent it later, the next " +
			"holder's quorum read came before it reached a second replica, and that holder's newer write of the set dropped " +
			"it (lost-add). Each delay stays under the node's 2 s write time-out, so the write is acknowledged, not unknown. " +
			"A window begun at a random moment catches it rarely: a holder's critical section is a few milliseconds of its " +
			"hold, and the slowed coordinator's clients are not granted the lock again while it lasts (each Paxos round " +
			"through it takes seconds, and the fast coordinators' newer ballots preempt it). A run misses where the write " +
			"times out under load anyway, or where the window the run's end cuts short releases the acknowledgement early.",
	},
	{
		Name: "lease-fenced/coord-net-delay", Recipe: "lease-fenced", Faults: []string{nemesis.CoordNetDelay}, Pin: true, Time: 30 * s, Interval: 6 * s, Seed: 7102,
		Net: slowCoordinator, Want: checker.Valid, Tier: Full,
		Mechanism: "The same slow coordinator delivers the stale holder's write late, but its token is older than the next " +
			"holder's and the resource refuses it: nothing is lost.",
	},
	{
		Name: "lease-fenced/net-delay", Recipe: "lease-fenced", Faults: []string{nemesis.NetDelay}, Time: 20 * s, Interval: 3 * s, Seed: 7104,
		Want: checker.Valid, Tier: Full,
		Mechanism: "Chosen nodes' links to the others, or to the clients, slowed by 0.2-2 s: LWTs and writes are late and some time " +
			"out (unknown), and a late write carries an older token than the next holder's, which the resource refuses.",
	},
	{
		Name: "lease-fenced/net-rate", Recipe: "lease-fenced", Faults: []string{nemesis.NetRate}, Time: 20 * s, Interval: 3 * s, Seed: 7105,
		Want: checker.Valid, Tier: Full,
		Mechanism: "Chosen nodes' links held to 64-1024 kbit/s: the lock's small messages queue behind the others' and arrive " +
			"late; the fence refuses whatever lands after the next grant.",
	},
	// client-kill (issue 49): a holder's process dies holding the lock and its
	// client restarts 2 s later as a new owner; a lock with a TTL or a
	// takeover must free within the bound, one without stays stuck.
	{
		// The other side: a lock with no TTL keeps a killed holder's hold
		// for good, and liveness must say so (stays stuck).
		Name: "music-seq/client-kill", Recipe: "music-seq", Faults: []string{nemesis.ClientKill}, KillTarget: nemesis.KillTargetHold,
		Time: 20 * s, Interval: 5 * s, Seed: 1040, Want: checker.Valid, StaysStuck: true, Tier: Full,
		Mechanism: "The killed holder's ref stays at the top of the queue: nothing expires it and no one else may delete it, " +
			"so every later acquire waits in vain to the end of the run (stuck, client-kill). Safety holds.",
	},
	{
		Name: "caslock/client-kill", Recipe: "caslock", Faults: []string{nemesis.ClientKill}, KillTarget: nemesis.KillTargetHold,
		Time: 30 * s, Interval: 5 * s, Seed: 6420, Want: checker.Valid, FreesWithin: 10 * s, Tier: Full,
		Mechanism: "The dead holder's cell expires with its TTL (twice the timeout): a contender's next try, every 500 ms, " +
			"takes it. The killed process died between operations, so no write of it lands after.",
	},
	{
		Name: "temporal-shard/client-kill", Recipe: "temporal-shard", Faults: []string{nemesis.ClientKill}, KillTarget: nemesis.KillTargetHold,
		Time: 30 * s, Interval: 5 * s, Seed: 6421, Want: checker.Valid, FreesWithin: 5 * s, Tier: Full,
		Mechanism: "Every acquire steals the shard (range_id + 1): a dead owner holds nothing anyone waits for.",
	},
	{
		Name: "shedlock/client-kill", Recipe: "shedlock", Command: "plugins/java-locks/run shedlock", Faults: []string{nemesis.ClientKill},
		KillTarget: nemesis.KillTargetHold, Time: 30 * s, Interval: 5 * s, Seed: 6560, Want: checker.Valid, FreesWithin: 10 * s, Tier: Full,
		Mechanism: "The dead holder's row keeps lockUntil = its take plus lockAtMostFor (the run's TTL): once the contenders' " +
			"clocks pass it, `UPDATE ... IF lockUntil < :now` takes it.",
	},
	{
		Name: "sidecar/client-kill", Recipe: "sidecar", Command: "plugins/java-locks/run sidecar", Faults: []string{nemesis.ClientKill},
		KillTarget: nemesis.KillTargetHold, Time: 30 * s, Interval: 5 * s, Seed: 6561, Want: checker.Invalid, Unsafe: true, FreesWithin: 10 * s, Tier: Full,
		Mechanism: "A killed holder never gives its lease up early, so the lease it was told runs to its end, and the lease " +
			"row expires before it: the holder counts its lease from the reply (`Instant.now()` + TTL) while the row's " +
			"TTL runs from the replica's write, in whole seconds. The next claim takes the row inside the dead holder's " +
			"lease (overlapping-holds of tens of ms): a holder alive there, a paused one, would still be working. The lock " +
			"frees within the bound (liveness holds).",
	},
	{
		Name: "reaper/client-kill", Recipe: "reaper", Command: "plugins/java-locks/run reaper", Faults: []string{nemesis.ClientKill},
		KillTarget: nemesis.KillTargetHold, Time: 30 * s, Interval: 5 * s, Seed: 6562, Want: checker.Invalid, Unsafe: true, Catch: 3,
		FreesWithin: 10 * s, Tier: Full,
		Mechanism: "The dead leader's row expires with its TTL, in whole seconds from the replica's write: when that falls " +
			"before the lease counted from the take's send, the next `INSERT ... IF NOT EXISTS` takes the lead inside the dead " +
			"leader's lease (overlapping-holds of 70-150 ms), which only a holder that never lets go early shows; in some " +
			"runs only (the kill must land on a take whose write rounds down). The lock frees within the bound.",
	},
	{
		Name: "astyanax/client-kill", Recipe: "astyanax", Command: "plugins/java-locks/run astyanax", Faults: []string{nemesis.ClientKill},
		KillTarget: nemesis.KillTargetHold, Time: 30 * s, Interval: 5 * s, Seed: 6563, Want: checker.Valid, FreesWithin: 10 * s, Tier: Full,
		Mechanism: "The dead holder's lock column carries an expiry of its clock plus the TTL: once past it, the next writer's " +
			"read back counts it expired and takes the lock.",
	},
}
