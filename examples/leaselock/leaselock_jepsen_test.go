//go:build jepsen

package leaselock_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck"
	"github.com/lockcheck/lockcheck/cluster/clustertest"
	"github.com/lockcheck/lockcheck/examples/leaselock"
	"github.com/lockcheck/lockcheck/workload"
)

// Not part of the glue: make test's packages take the shared cluster one
// at a time, each holding it for all its tests (clustertest.Main), so that
// this package's two runs go side by side and no other package's run comes
// between them. A test of your own needs no TestMain (each run takes the
// cluster itself).
func TestMain(m *testing.M) { clustertest.Main(m) }

// The glue a user writes (docs/go-api.md): the lock
// under test, made with the run's TTL (lockcheck.WithTTL), and one call per
// test. From a module of its own, the user's go.mod also needs lockcheck's
// require and replace lines (package lockcheck's doc).
var leaseLock = lockcheck.Lock{
	Name:   "leaselock",
	Schema: leaselock.CreateTable,
	New: func(c lockcheck.Client) (workload.Lock, error) {
		return leaselock.New(c.Session, c.Keyspace, c.TTL), nil
	},
}

// A lease lock that reads no client clock keeps its promise when client
// clocks jump.
//
// Both tests deal client faults only, so they run side by side on the
// shared cluster (their lock names are fresh every run).
func TestLeaseLock(t *testing.T) {
	t.Parallel()
	lockcheck.Test(t, leaseLock, lockcheck.WithTTL(5*time.Second), lockcheck.WithNemesis("client-clock"), lockcheck.WithTime(15*time.Second),
		lockcheck.WithInterval(3*time.Second), lockcheck.WithQuiet(2*time.Second))
}

// The same lock trusts its lease: a holder paused past its TTL writes after
// another took the lock. Run (not Test, which would fail) must say invalid
// once a pause was dealt. A run in which none was (on a loaded machine no
// holder entered its critical section within a window's wait, seen once in
// CI) shows nothing, and the next seed runs, three at most.
func TestLeaseLockCaughtByClientPause(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for seed := int64(1); seed <= 3; seed++ {
		res, err := lockcheck.Run(ctx, leaseLock, lockcheck.WithTTL(3*time.Second), lockcheck.WithNemesis("client-pause"), lockcheck.WithTime(15*time.Second),
			lockcheck.WithInterval(3*time.Second), lockcheck.WithQuiet(2*time.Second), lockcheck.WithSeed(seed),
			lockcheck.WithStore(t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		if res.Faults["client-pause"] == 0 {
			t.Logf("seed %d: no client pause dealt (verdict %s); report %s", seed, res.Verdict, res.Report)
			continue
		}
		if res.Verdict != lockcheck.Invalid {
			t.Fatalf("seed %d: verdict %s after %v faults, want invalid; report %s", seed, res.Verdict, res.Faults, res.Report)
		}
		t.Logf("seed %d caught: %d anomalies; report %s", seed, len(res.Check.Anomalies), res.Report)
		return
	}
	t.Fatal("no client pause dealt in three runs")
}
