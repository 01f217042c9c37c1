package scenario

import (
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/nemesis"
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
	// starved is a coordinator at 1-5 % of a core: its requests take
	// seconds, some past their lease and some past the clients' timeouts.
	starved = nemesis.Slowness{CPUMin: 0.01, CPUMax: 0.05}
	// slowSync is a disk whose every sync takes most of a lease.
	slowSync = nemesis.Slowness{DiskMin: 500 * time.Millisecond, DiskMax: 1500 * time.Millisecond}
)

var slownessRows = []Row{
	{
		Name: "lease/coord-gc-stall", Recipe: "lease", Faults: []string{nemesis.CoordGCStall}, Pin: true, Slow: longStalls,
		Time: 20 * s, Interval: 6 * s, Seed: 4810,
		Want: checker.Invalid, Unsafe: true, Catch: 1, Tier: Full,
		Mechanism: "A stop-the-world stall past the TTL (3.5-4.5 s) of the JVM that coordinates the next holder's lock queries " +
			"(clients pinned), stopped between its read and its write: when that node also coordinates the resource's " +
			"partition (the resource keeps the shared, token-aware session), the add waits in the stalled JVM, the lease runs " +
			"out, a client pinned elsewhere is granted the lock and the add lands when the JVM resumes (stale-holder-write). " +
			"When it does not, the add goes through another node and only the holder's release is late (refused: not held).",
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
}
