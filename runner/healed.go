package runner

import (
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

// The note lives with the holding (exclusive.Lease.SetClean): a package's
// TestMain that healed the cluster when it took it (clustertest.Main) leaves
// the same note, so that its first run trusts that heal too. A Docker
// cluster's lease file passes the holding's last note on to the process
// that takes the cluster next (exclusive.NotedStore): a run after a run of
// another process (`lockcheck matrix`'s rows, make test's packages) trusts
// the heal its predecessor said it left, since nobody held the cluster in
// between; a process that died, or an older lockcheck, leaves no note, and
// the next run probes.

// leftHealed tells whether env's cluster is known healed and healthy at
// lease's holding: this process's previous run or heal of the holding left
// it so, or the last holder said so as it let go.
func leftHealed(env Env, lease *exclusive.Lease) bool {
	if env == nil || env.Lease() == nil || lease.Holding() == 0 {
		return false
	}
	return lease.Clean()
}

// markHealed records whether a run left env's cluster healed and healthy
// within lease's holding (ok), or forgets that it did.
func markHealed(env Env, lease *exclusive.Lease, ok bool) {
	if env == nil || env.Lease() == nil || lease.Holding() == 0 {
		return
	}
	lease.SetClean(ok)
}
