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

// A run probes the nodes for leftovers unless this process's previous run
// left the cluster healed within the same holding of its lease: runs that
// each take the lease afresh (another process may have run between them)
// probe every time; under one holding (a test binary's), the first probes
// and the next only waits for a healthy cluster; a run that ended in an
// error makes the next probe again.
func TestRunTrustsItsOwnHeal(t *testing.T) {
	var probes atomic.Int32
	env := leaseEnv{lease: exclusive.Local{Name: "healed", Dir: t.TempDir()}, nodes: []nemesis.Target{{Name: "n1", Node: probedNode{probes: &probes}}}}
	run := func(env leaseEnv) error {
		tc := Defaults()
		tc.Recipe, tc.Time, tc.Quiet = memRecipe("mutex", history.PromiseMutex, &memLocks{}), 200*time.Millisecond, 0
		_, err := Run(context.Background(), env, memStore{t.TempDir()}, tc)
		return err
	}
	step := func(what string, env leaseEnv, wantErr bool, want int32) {
		t.Helper()
		if err := run(env); (err != nil) != wantErr {
			t.Fatalf("%s: err %v", what, err)
		}
		if got := probes.Load(); got != want {
			t.Fatalf("%s: %d probes in all, want %d", what, got, want)
		}
	}
	step("first run", env, false, 1)
	step("a run that took the lease afresh", env, false, 2)

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
	outer.Release()
	step("a run after the holding ended", env, false, 5)
}
