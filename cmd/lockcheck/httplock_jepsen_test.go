//go:build jepsen

package main

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster/clustertest"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/lease"
	"github.com/lockcheck/lockcheck/lockd"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/recipe"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/workload/locktest"
)

// A REST lock service under the harness through --lock-url's driver: lockd
// over seed 004's lease (IF NOT EXISTS + TTL, no token) is caught under
// client-pause, lockd over lease-fenced is not. The harness's client pauses
// between its grant and its write, as for built-in recipes. 15 s each.
func TestLockdUnderNemesis(t *testing.T) {
	s, ks, _ := locktest.Setup(t, lease.CreateSchema)
	env := runner.ClusterEnv{Cluster: clustertest.Get(t)}
	for _, tc := range []struct {
		name    string
		lock    lockd.Service
		promise history.Promise
		want    checker.Verdict
	}{
		{"lease", locktest.New(t, lease.New, s, recipe.WithKeyspace(ks)), history.PromiseMutex, checker.Invalid},
		{"lease-fenced", locktest.New(t, lease.NewFenced, s, recipe.WithKeyspace(ks)), history.PromiseFenced, checker.Valid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // client-pause strikes only the clients: the two runs share the cluster
			srv := httptest.NewServer(lockd.Handler(tc.lock, slog.New(slog.DiscardHandler)))
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			rt := runner.Defaults()
			rt.Recipe, rt.Nemesis, rt.Time, rt.Seed, rt.Store = runner.URLRecipe(srv.URL, tc.promise), []string{nemesis.ClientPause}, 15*time.Second, 11, t.TempDir()
			rt.Clients, rt.Interval, rt.Quiet, rt.Log = 5, 3*time.Second, 2*time.Second, slog.New(slog.DiscardHandler)
			out, err := runner.Run(ctx, env, runner.ReportStore{}, rt)
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			t.Logf("lockd over %s under client-pause: %s, %d ops, faults %v, %d anomalies; %s",
				tc.name, out.Verdict, out.Ops, out.Faults, len(out.Result.Anomalies), out.Dir)
			if out.Verdict != tc.want {
				t.Errorf("verdict %s, want %s; report %s", out.Verdict, tc.want, out.Dir)
			}
			if out.Faults[nemesis.ClientPause] == 0 || out.Ops < 100 {
				t.Errorf("%d client pauses, %d ops: the run did not exercise the lock", out.Faults[nemesis.ClientPause], out.Ops)
			}
		})
	}
}
