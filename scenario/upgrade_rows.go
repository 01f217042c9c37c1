package scenario

import (
	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// upgradeCluster is a cluster of its own started on Paxos v1 that the
// paxos-upgrade fault switches to v2 during a run (each run starts on v1
// again: the run's leftover heal switches it back, recorded).
var upgradeCluster = Cluster{PaxosUpgrade: true}

// upgradeCluster41 is the same on the 4.1 line, the first with Paxos v2.
var upgradeCluster41 = Cluster{PaxosUpgrade: true, Version: "4.1"}

// upgradeRows judge the fenced lock and the register across Paxos v1 to v2
// on a running cluster, the whole path an operator takes (issue 50): the
// nodes switched one by one, live or by a rolling restart, while the
// clients run, then a Paxos repair from every node, then
// paxos_state_purging from legacy to repaired node by node the same way,
// and a Paxos repair from every node again. The first window comes 20-60 s
// in and switches the nodes over its hold; a later window finds them
// switched and only repairs. The rows run 180 s: the purging's switches
// (three more restarts, when the window restarts) come after the
// variant's, and a run ends only after the window's stop (an overrun).
var upgradeRows = []Row{
	{
		Name: "upgrade/lease-fenced/paxos-upgrade", Recipe: "lease-fenced", Faults: []string{nemesis.PaxosUpgrade},
		Cluster: upgradeCluster, Time: 180 * s, Interval: 40 * s, Seed: 9501, Want: checker.Valid, Tier: Full,
		Mechanism: "For a while some coordinators run Paxos v1 and others v2 on the same partitions: both keep their " +
			"promises and accepted proposals in the replicas' one system.paxos, and a v2 replica answers v1's messages, so a " +
			"round of either variant sees the other's ballots and the lock is granted once at a time; then the nodes move to " +
			"paxos_state_purging repaired one by one, which changes only when a node forgets Paxos state (once a Paxos repair " +
			"covered it), not what a round reads; a restarted node's unknown LWTs end info, and the fence refuses a late holder's write.",
	},
	{
		Name: "upgrade/register/paxos-upgrade", Recipe: workload.ShapeRegister, Workload: workload.ShapeRegister,
		Faults: []string{nemesis.PaxosUpgrade}, Cluster: upgradeCluster, Time: 180 * s, Interval: 40 * s, Seed: 9502,
		Want: checker.Valid, Tier: Full,
		Mechanism: "The register's SERIAL reads and conditional writes stay linearizable per key while the coordinators " +
			"switch variants one by one (a v2 round finishes a v1 proposal it finds accepted, as a v1 round does) and then " +
			"their paxos_state_purging from legacy to repaired.",
	},
	{
		Name: "upgrade-c4.1/lease-fenced/paxos-upgrade", Recipe: "lease-fenced", Faults: []string{nemesis.PaxosUpgrade},
		Cluster: upgradeCluster41, Time: 180 * s, Interval: 40 * s, Seed: 9503, Want: checker.Valid, Tier: Full,
		Mechanism: "The same path on 4.1, the release that brought Paxos v2, Paxos repair and paxos_state_purging: v1's verb " +
			"handlers and v2's share each partition's Paxos state on a replica, so the mixed period grants the lock once at a " +
			"time, and the purging's switch to repaired changes when state is forgotten, not what a round reads.",
	},
	{
		Name: "upgrade-c4.1/register/paxos-upgrade", Recipe: workload.ShapeRegister, Workload: workload.ShapeRegister,
		Faults: []string{nemesis.PaxosUpgrade}, Cluster: upgradeCluster41, Time: 180 * s, Interval: 40 * s, Seed: 9504,
		Want: checker.Valid, Tier: Full,
		Mechanism: "The register across the same path on 4.1: linearizable per key through the mixed period and the purging's switch.",
	},
}
