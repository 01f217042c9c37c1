package scenario

import (
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// The slowness rows (issue 48): a request made slow on demand, so that a
// verdict that hinged on the machine's load is dealt by a fault. A
// client's stall longer than the TTL (3.5-4.5 s against the 3 s TTL) makes
// the published lease's late write certain; a node's stall does when it
// stalls the node the holder's write goes through; the fenced lease stays
// valid under each kind.
var (
	// longStalls are stalls past the 3 s TTL, a window apart.
	longStalls = nemesis.Slowness{StallMin: 3500 * time.Millisecond, StallMax: 4500 * time.Millisecond, StallEvery: 2 * s}
	// rowTTLStalls are stalls past caslock's row TTL, twice its timeout (the
	// run's 3 s TTL: a 6 s row), and inside the clients' 10 s request
	// time-out, so that the held add is acknowledged, late.
	rowTTLStalls = nemesis.Slowness{StallMin: 7 * time.Second, StallMax: 8 * time.Second, StallEvery: 2 * s}
	// starved is a coordinator at 1-5 % of a core: its requests take
	// seconds, some past their lease and some past the clients' timeouts.
	starved = nemesis.Slowness{CPUMin: 0.01, CPUMax: 0.05}
	// slowSync is a disk whose every sync takes most of a lease.
	slowSync = nemesis.Slowness{DiskMin: 500 * time.Millisecond, DiskMax: 1500 * time.Millisecond}
	// lateCoordinator delays everything a holder's coordinator sends by
	// more than the Java driver's request time-out (2 s) and the node's
	// write time-out (2 s): a renew or extend through it times out at the
	// client and its Paxos round fails at the coordinator, so nothing of it
	// lands later to extend the row again.
	lateCoordinator = nemesis.NetBounds{DelayMin: 2500 * time.Millisecond, DelayMax: 3500 * time.Millisecond, Jitter: 50 * time.Millisecond,
		RateMin: nemesis.DefaultNetBounds.RateMin, RateMax: nemesis.DefaultNetBounds.RateMax}
)

// What a loaded machine's slowness shows in the catalogue's rows whose
// verdict hinges on the load (Row.Load): a write sent inside the lease that
// lands after the next grant (the lock holds, but fences nothing: no two
// holders), or a renewal that timed out while the holder kept its own
// reckoning (two holders). The resource's set then misses an element, so its
// history is not linearizable either.
var (
	lateWrites   = []string{checker.KindStaleWrite, checker.KindLostAdd, checker.KindNonLinearizable}
	lateRenewals = []string{checker.KindOverlap, checker.KindStaleWrite, checker.KindLostAdd, checker.KindNonLinearizable}
)

// loadBound is a safe row's load bound: its slowness row and kinds.
func loadBound(row string, kinds []string) *LoadBound { return &LoadBound{Row: row, Kinds: kinds} }

// The Java locks' plug-in commands of the slowness rows.
const (
	shedlockCmd = "plugins/java-locks/run shedlock"
	sidecarCmd  = "plugins/java-locks/run sidecar"
	reaperCmd   = "plugins/java-locks/run reaper"
)

var slownessRows = []Row{
	{
		Name: "lease/coord-gc-stall", Recipe: "lease", Faults: []string{nemesis.CoordGCStall}, Pin: true, Slow: longStalls,
		Time: 20 * s, Interval: 6 * s, Seed: 4810,
		Want: checker.Invalid, Unsafe: true, Tier: Full,
		Mechanism: "A stop-the-world stall past the TTL (3.5-4.5 s) of the JVM that coordinates the next holder (clients " +
			"pinned; a client's lock queries and critical section go through its coordinator), stopped between its read " +
			"and its write: the add waits in the stalled JVM, the lease runs out, a client pinned elsewhere is granted the " +
			"lock, and the add lands when the JVM resumes, after that grant (stale-holder-write, lost-add: the report's " +
			"\"the add sent at t was held in n2's stalled JVM ... and applied after the next grant\").",
	},
	{
		Name: "lease-fenced/coord-gc-stall", Recipe: "lease-fenced", Faults: []string{nemesis.CoordGCStall}, Pin: true, Slow: longStalls,
		Time: 20 * s, Interval: 6 * s, Seed: 4811,
		Want: checker.Valid, Tier: Full,
		Mechanism: "The same late add carries the stalled holder's token: the resource refuses it once the next grant's newer token wrote.",
	},
	{
		Name: "lease-fenced/gc-stall", Recipe: "lease-fenced", Faults: []string{nemesis.GCStall}, Pin: true, Slow: longStalls,
		Time: 20 * s, Interval: 6 * s, Seed: 4801,
		Want: checker.Valid, Tier: Full,
		Mechanism: "The same late add carries the stalled holder's token: the resource refuses it once the next grant's newer token wrote.",
	},
	{
		Name: "lease/client-gc-stall", Recipe: "lease", Faults: []string{nemesis.ClientGCStall}, Slow: longStalls,
		Time: 20 * s, Interval: 6 * s, Seed: 4802,
		Want: checker.Invalid, Unsafe: true, Tier: Quick,
		Mechanism: "A client's own runtime stalls between its read and its write past the TTL (3.5-4.5 s), as a GC pause " +
			"does: its write lands after the lease ran out and the next holder was granted the lock (stale-holder-write), " +
			"from stalls drawn in bursts rather than client-pause's one stall of the lease plus an extra.",
	},
	{
		Name: "lease-fenced/client-gc-stall", Recipe: "lease-fenced", Faults: []string{nemesis.ClientGCStall}, Slow: longStalls,
		Time: 20 * s, Interval: 6 * s, Seed: 4803,
		Want: checker.Valid, Tier: Full,
		Mechanism: "The stalled client's write carries its token: refused once a newer grant wrote.",
	},
	{
		Name: "lease-fenced/slow-node", Recipe: "lease-fenced", Faults: []string{nemesis.SlowNode}, Slow: starved,
		Time: 30 * s, Interval: 5 * s, Seed: 4804,
		Want: checker.Valid, Tier: Full,
		Mechanism: "A node starved to 1-5 % of a core answers seconds late; a late add of the fenced lease carries its token and is refused after a newer grant.",
	},
	{
		Name: "lease-fenced/coord-slow-node", Recipe: "lease-fenced", Faults: []string{nemesis.CoordSlowNode}, Pin: true, Slow: starved,
		Time: 30 * s, Interval: 5 * s, Seed: 4805,
		Want: checker.Valid, Tier: Full,
		Mechanism: "The starved node is the coordinator of a group of pinned clients: all their requests are seconds late, and the tokens still refuse a late add.",
	},
	{
		Name: "batch/lease-fenced/slow-disk", Recipe: "lease-fenced", Faults: []string{nemesis.SlowDisk}, Cluster: batch, Slow: slowSync,
		Time: 30 * s, Interval: 5 * s, Seed: 4806,
		Want: checker.Valid, Tier: Full,
		Mechanism: "With commitlog_sync batch every write a node acknowledges waits for its sync: a disk 0.5-1.5 s slow per sync delays " +
			"that node's Paxos rounds and writes, and the tokens refuse any add that lands late.",
	},

	// The load-only findings of the catalogue (docs/locks.md) on demand:
	// each row below is the slowness that broke its lock on a loaded
	// machine, dealt by a fault. Mechanism A: a critical section's write
	// sent inside the lease lands after the next grant (caslock and
	// ShedLock fence nothing). Mechanism B: a renew or extend that times out
	// leaves the holder trusting its own reckoning past the row's
	// whole-second expiry (Sidecar, Reaper).
	{
		Name: "caslock/coord-gc-stall", Recipe: "caslock", Faults: []string{nemesis.CoordGCStall}, Pin: true, Slow: rowTTLStalls,
		Time: 30 * s, Interval: 10 * s, Seed: 4820,
		Want: checker.Invalid, Unsafe: true, Tier: Full,
		Mechanism: "caslock/partition's late write on demand: the JVM of the next holder's coordinator stops for 7-8 s, past " +
			"the lock cell's TTL (twice caslock's timeout, 6 s here), between the holder's read and its write; the add waits in " +
			"it, the cell expires, a client pinned elsewhere takes the lock, and the add lands after that grant " +
			"(stale-holder-write, lost-add). caslock fences nothing, so nothing refuses it. A stall shorter than the cell's " +
			"TTL delays the add past the lease lockcheck credits (the timeout) but not past the lock itself: nobody else can " +
			"take it meanwhile.",
	},
	{
		Name: "shedlock/coord-gc-stall", Recipe: "shedlock", Command: shedlockCmd, Faults: []string{nemesis.CoordGCStall}, Pin: true,
		Slow: longStalls, Time: 20 * s, Interval: 6 * s, Seed: 4821,
		Want: checker.Invalid, Unsafe: true, Tier: Full,
		Mechanism: "shedlock/partition's and shedlock/kill's late write on demand: the JVM of the next holder's coordinator " +
			"stops for 3.5-4.5 s, past lockAtMostFor (the TTL), between the instance's read and its write; the add waits in " +
			"it, lockUntil passes, an instance pinned elsewhere takes the lock, and the add lands after that grant " +
			"(stale-holder-write, lost-add). ShedLock fences nothing.",
	},
	{
		// A longer run than the stall rows': each window catches the
		// holder only when the row's expiry falls early enough in its
		// second for a contender to claim it inside the holder's reckoning.
		Name: "sidecar/coord-net-delay", Recipe: "sidecar", Command: sidecarCmd, Faults: []string{nemesis.CoordNetDelay}, Pin: true,
		Net: lateCoordinator, Time: 40 * s, Interval: 6 * s, Seed: 4822,
		Want: checker.Invalid, Unsafe: true, Tier: Full,
		Mechanism: "sidecar/none's overlap on demand: everything the holder's coordinator sends waits 2.5-3.5 s, past the " +
			"driver's 2 s request time-out, so the holder's extend throws and Sidecar keeps the lease until its own " +
			"reckoning (the last reply's instant plus the TTL) runs out. Cassandra expires the row in whole seconds from " +
			"the replica's write, up to a second and the reply's latency sooner, so an instance pinned to a fast " +
			"coordinator claims it while the holder still writes (overlapping-holds, stale-holder-write).",
	},
	{
		Name: "reaper/coord-net-delay/leader", Recipe: "reaper", Command: reaperCmd, Workload: workload.ShapeLeader,
		Faults: []string{nemesis.CoordNetDelay}, Pin: true,
		Net: lateCoordinator, Time: 40 * s, Interval: 6 * s, Seed: 4823,
		Want: checker.Invalid, Unsafe: true, Tier: Full,
		Mechanism: "reaper/none/leader's overlap on demand: everything the leader's coordinator sends waits 2.5-3.5 s, past " +
			"the driver's and the node's 2 s time-outs, so the leader's renew times out and is never applied. The lead's " +
			"row, whose TTL Cassandra counts in whole seconds from the last renew's write, expires up to a second before " +
			"the lease credited from that renew's send, and a contender pinned to a fast coordinator takes the lead inside " +
			"it (overlapping-holds). A window misses when the contenders' takes fall after that second; a 40 s run deals " +
			"several.",
	},
}
