package runner

import (
	"sync"

	"github.com/lockcheck/lockcheck/exclusive"
)

// A run starts by healing what an earlier run left (HealLeftovers: every
// node kind's reset probed on every node, a dozen docker execs a node, 3-8
// s of every run on a loaded machine), because a process killed mid-run
// leaves its faults in place. Within one holding of the cluster's lease by
// this process (a test binary's package holds it for all its tests,
// clustertest.Main), no other process ran on the cluster: when this
// process's previous run there ended healed and healthy, the next finds
// what it left and only waits until the cluster is healthy (which still
// notices a partition no leftover names). Code of this process that faults
// the cluster outside Run heals what it injects, as the jepsen tests do.

// healedIn maps a cluster's lease key to the holding (exclusive.Lease.Holding)
// in which a run of this process last left it healed and healthy.
var healedIn sync.Map

// leftHealed tells whether this process's last run on env's cluster left it
// healed and healthy within lease's holding.
func leftHealed(env Env, lease *exclusive.Lease) bool {
	if env == nil || env.Lease() == nil || lease.Holding() == 0 {
		return false
	}
	h, ok := healedIn.Load(env.Lease().Key())
	return ok && h.(uint64) == lease.Holding()
}

// markHealed records whether a run left env's cluster healed and healthy
// within lease's holding (ok), or forgets that it did.
func markHealed(env Env, lease *exclusive.Lease, ok bool) {
	if env == nil || env.Lease() == nil || lease.Holding() == 0 {
		return
	}
	if ok {
		healedIn.Store(env.Lease().Key(), lease.Holding())
	} else {
		healedIn.Delete(env.Lease().Key())
	}
}
