package runner

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/exclusive"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// probedNode counts the leftover probes (HealLeftovers asks every node
// what keeps it from its known state).
type probedNode struct {
	nemesis.Node
	probes *atomic.Int32
}

func (probedNode) Capabilities() []nemesis.Capability { return nil }
func (n probedNode) Faults(context.Context) ([]string, error) {
	n.probes.Add(1)
	return nil, nil
}

// A run probes the nodes for leftovers unless the cluster is known healed:
// this process's previous run left it so within the same holding of its
// lease, or the process that held it last said so as it let go (the
// lease file's note, exclusive.NotedStore). Under one holding (a test
// binary's), the first run trusts what it found and the next only waits
// for a healthy cluster; a run that ended in an error makes the next probe
// again, unless only its lock's set-up failed (it dealt nothing); a note on
// the holding (SetClean, clustertest.Main's heal) is trusted as a run's; a
// holder that let go without a note (an older lockcheck, one that died)
// makes the next run probe.
func TestRunTrustsItsOwnHeal(t *testing.T) {
	var probes atomic.Int32
	env := leaseEnv{lease: exclusive.Local{Name: "healed", Dir: t.TempDir()}, nodes: []nemesis.Target{{Name: "n1", Node: probedNode{probes: &probes}}}}
	runWith := func(env leaseEnv, r Recipe) error {
		tc := Defaults()
		tc.Recipe, tc.Time, tc.Quiet = r, 200*time.Millisecond, 0
		_, err := Run(context.Background(), env, memStore{t.TempDir()}, tc)
		return err
	}
	run := func(env leaseEnv) error { return runWith(env, memRecipe("mutex", history.PromiseMutex, &memLocks{})) }
	step := func(what string, env leaseEnv, wantErr bool, want int32) {
		t.Helper()
		if err := run(env); (err != nil) != wantErr {
			t.Fatalf("%s: err %v", what, err)
		}
		if got := probes.Load(); got != want {
			t.Fatalf("%s: %d probes in all, want %d", what, got, want)
		}
	}
	// another is a holder that lets go without a note.
	another := func() {
		t.Helper()
		release, _, err := env.lease.TryTake(context.Background(), exclusive.Holder{Host: "elsewhere", PID: 1, Command: "an older lockcheck"})
		if err != nil || release == nil {
			t.Fatalf("another holder: %v", err)
		}
		release()
	}
	step("first run", env, false, 1)
	step("a run that took the lease afresh after a run that left it healed", env, false, 1)
	another()
	step("a run after a holder that left no note", env, false, 2)

	another()
	outer, err := exclusive.Take(context.Background(), env.lease)
	if err != nil {
		t.Fatal(err)
	}
	step("the first run of a holding", env, false, 3)
	step("the next run of the holding", env, false, 3)
	sick := env
	sick.healthy = errors.New("n2 does not see every node up")
	step("a run on a cluster that is not healthy", sick, true, 3)
	step("the run after a failed one", env, false, 4)
	step("and the one after it", env, false, 4)
	// A lock that cannot be set up fails the run after the heal, having
	// dealt nothing: the cluster is left as healed as it was.
	if err := runWith(env, failingRecipe()); err == nil {
		t.Fatal("a run whose lock cannot be set up: no error")
	}
	step("the run after a failed set-up", env, false, 4)
	// The holding's own heal (clustertest.Main's) leaves the same note.
	outer.SetClean(false)
	step("the run after the note was taken back", env, false, 5)
	outer.SetClean(true)
	step("the run after a heal noted on the holding", env, false, 5)
	outer.SetClean(false)
	outer.Release()
	step("a run after a holding that ended unclean", env, false, 6)
}

// failingRecipe is a lock whose set-up fails (a plug-in that would not
// start).
func failingRecipe() Recipe {
	return Recipe{Name: "broken", Promise: history.PromiseMutex, Setup: func(context.Context, Env, *Test) (workload.NewLockFunc, workload.Resource, func(), error) {
		return nil, nil, nil, errors.New("no such plug-in")
	}}
}
