//go:build jepsen

package leaselock_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck"
	"github.com/lockcheck/lockcheck/examples/leaselock"
	"github.com/lockcheck/lockcheck/workload"
)

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
func TestLeaseLock(t *testing.T) {
	lockcheck.Test(t, leaseLock, lockcheck.WithTTL(5*time.Second), lockcheck.WithNemesis("client-clock"), lockcheck.WithTime(15*time.Second),
		lockcheck.WithInterval(3*time.Second), lockcheck.WithQuiet(2*time.Second))
}

// The same lock trusts its lease: a holder paused past its TTL writes after
// another took the lock. Run (not Test, which would fail) must say invalid.
func TestLeaseLockCaughtByClientPause(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := lockcheck.Run(ctx, leaseLock, lockcheck.WithTTL(3*time.Second), lockcheck.WithNemesis("client-pause"), lockcheck.WithTime(15*time.Second),
		lockcheck.WithInterval(3*time.Second), lockcheck.WithQuiet(2*time.Second), lockcheck.WithSeed(1),
		lockcheck.WithStore(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != lockcheck.Invalid || res.Faults["client-pause"] == 0 {
		t.Fatalf("verdict %s after %v faults, want invalid; report %s", res.Verdict, res.Faults, res.Report)
	}
	t.Logf("caught: %d anomalies; report %s", len(res.Check.Anomalies), res.Report)
}
