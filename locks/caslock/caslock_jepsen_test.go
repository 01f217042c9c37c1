//go:build jepsen

package caslock_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/cluster/clustertest"
	"github.com/lockcheck/lockcheck/locks/caslock"
	"github.com/lockcheck/lockcheck/recipe"
	"github.com/lockcheck/lockcheck/workload"
	"github.com/lockcheck/lockcheck/workload/locktest"
)

func TestMain(m *testing.M) { clustertest.Main(m) }

// The basic contract, exclusion of a read-modify-write, and caslock's TTL:
// the "[lock]" cell lives twice the timeout.
func TestCaslock(t *testing.T) {
	s, ks, prefix := locktest.Setup(t, caslock.CreateSchema)
	newLockTTL := func(ttl time.Duration) *caslock.Lock {
		return locktest.New(t, caslock.New, s, recipe.WithKeyspace(ks), recipe.WithTTL(ttl))
	}
	// The handover's lease fits b's three tries of up to 5 s while a holds.
	a, b := newLockTTL(20*time.Second), newLockTTL(20*time.Second)
	ga, gb, _ := locktest.Handover(t, a, b, prefix+"-handover")
	// The lease counts from the acquire's invocation; the grant is valid
	// for the timeout from the winning attempt, so at least the timeout.
	if ga.Lease < 20*time.Second || gb.Lease < 20*time.Second {
		t.Errorf("leases %v, %v: want at least the timeout (20 s)", ga.Lease, gb.Lease)
	}
	// The TTL check: a 5 s timeout, a cell of just under 10 s.
	short := newLockTTL(5 * time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	before := time.Now()
	g, err := short.Acquire(ctx, prefix+"-ttl", "a")
	if err != nil {
		t.Fatal(err)
	}
	if g.Deadline.Before(before.Add(5*time.Second)) || g.Deadline.After(time.Now().Add(5*time.Second)) {
		t.Errorf("deadline %v after the call: want the timeout from the winning attempt", g.Deadline.Sub(before))
	}
	var ttl int
	if err := s.Query(`SELECT ttl("[lock]") FROM "`+ks+`".caslock_rows WHERE id = ?`, prefix+"-ttl").ScanContext(ctx, &ttl); err != nil {
		t.Fatal(err)
	}
	if ttl <= 5 || ttl > 10 {
		t.Errorf("the lock cell's TTL is %d s, want twice the 5 s timeout (just under 10)", ttl)
	}
	if err := locktest.Release(ctx, short, g); err != nil {
		t.Fatal(err)
	}

	// caslock has no fence: a lease shorter than a slow increment on a
	// loaded machine would lose one by design, not by a fault.
	locktest.NoLostIncrements(t, s, ks, prefix+"-counter", 3, 4, func() workload.Lock { return newLockTTL(20 * time.Second) })
}
