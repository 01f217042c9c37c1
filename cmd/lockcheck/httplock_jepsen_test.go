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
	"github.com/lockcheck/lockcheck/nemesis"
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
		lock    lockService
		promise history.Promise
		want    checker.Verdict
	}{
		{"lease", lease.New(s, lease.WithKeyspace(ks)), history.PromiseMutex, checker.Invalid},
		{"lease-fenced", lease.NewFenced(s, lease.WithKeyspace(ks)), history.PromiseFenced, checker.Valid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(lockdHandler(tc.lock, slog.New(slog.DiscardHandler)))
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			out, err := runner.Run(ctx, env, runner.ReportStore{}, runner.Test{
				Recipe: runner.URLRecipe(srv.URL, tc.promise), Nemesis: []string{nemesis.ClientPause},
				Nodes: len(env.Nodes()), Clients: 5, Time: 15 * time.Second, Seed: 11, Store: t.TempDir(),
				Paxos: env.Paxos(), Interval: 3 * time.Second, Quiet: 2 * time.Second, Log: slog.New(slog.DiscardHandler),
			})
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
