//go:build jepsen

package lease_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/cluster/clustertest"
	"github.com/lockcheck/lockcheck/lease"
	"github.com/lockcheck/lockcheck/recipe"
	"github.com/lockcheck/lockcheck/workload"
	"github.com/lockcheck/lockcheck/workload/locktest"
)

func TestMain(m *testing.M) { clustertest.Main(m) }

// setup returns a session on the shared cluster with the lease schema and a
// lock-name prefix unique to this test run.
func setup(t *testing.T) (*gocql.Session, string, string) {
	// Each test contends on lock names of its own and faults nothing
	// (its clocks are the locks' own): the package's tests run side by side.
	t.Parallel()
	return locktest.Setup(t, lease.CreateSchema)
}

func TestTwoContendersExactlyOneWins(t *testing.T) {
	s, ks, prefix := setup(t)
	for _, fenced := range []bool{false, true} {
		newLock := lease.New
		if fenced {
			newLock = lease.NewFenced
		}
		a, b := locktest.New(t, newLock, s, recipe.WithKeyspace(ks), recipe.WithTTL(30*time.Second)),
			locktest.New(t, newLock, s, recipe.WithKeyspace(ks), recipe.WithTTL(30*time.Second))
		noWinner := 0
		for i := range 10 {
			name := fmt.Sprintf("%s-%v-%d", prefix, fenced, i)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			var wg sync.WaitGroup
			var errA, errB error
			wg.Go(func() { _, _, errA = a.TryAcquire(ctx, name, "a", 30*time.Second) })
			wg.Go(func() { _, _, errB = b.TryAcquire(ctx, name, "b", 30*time.Second) })
			wg.Wait()
			cancel()
			// The SERIAL read settles who holds it, even after an
			// unknown outcome (contending Paxos rounds can time out).
			h, err := a.Holder(context.Background(), name)
			if err != nil {
				t.Fatal(err)
			}
			wins, unknown := 0, 0
			for k, err := range []error{errA, errB} {
				who := []string{"a", "b"}[k]
				switch {
				case err == nil:
					wins++
					if h.Owner != who {
						t.Fatalf("fenced=%v round %d: %s won but the holder is %q", fenced, i, who, h.Owner)
					}
				case errors.Is(err, workload.ErrUnknown):
					unknown++
				case errors.Is(err, workload.ErrNotAcquired):
					// A single attempt may lose a Paxos round without a
					// holder to name (the fence row's creation contended).
					t.Logf("fenced=%v round %d: %s: %v", fenced, i, who, err)
				case !errors.Is(err, workload.ErrHeldByOther):
					t.Fatalf("fenced=%v round %d: %v", fenced, i, err)
				}
			}
			// At most one wins, and the SERIAL read agrees; an unknown
			// outcome may be the winner.
			if wins > 1 || (wins == 0 && unknown == 0 && h.Owner != "") {
				t.Fatalf("fenced=%v round %d: %d winners (a: %v, b: %v), holder %q", fenced, i, wins, errA, errB, h.Owner)
			}
			if wins == 0 && unknown == 0 {
				noWinner++
			}
			if unknown > 0 {
				t.Logf("fenced=%v round %d: unknown outcome (a: %v, b: %v), holder %q", fenced, i, errA, errB, h.Owner)
			}
		}
		if noWinner > 2 {
			t.Errorf("fenced=%v: %d of 10 rounds without a winner", fenced, noWinner)
		}
	}
}

func TestReleaseLetsTheOtherIn(t *testing.T) {
	s, ks, prefix := setup(t)
	for _, r := range lease.Recipes {
		t.Run(r.Name, func(t *testing.T) {
			t.Parallel() // each recipe hands over a lock name of its own
			a := locktest.New(t, r.New, s, recipe.WithKeyspace(ks), recipe.WithTTL(30*time.Second))
			b := locktest.New(t, r.New, s, recipe.WithKeyspace(ks), recipe.WithTTL(30*time.Second))
			if _, _, wait := locktest.Handover(t, a, b, prefix+r.Name); wait > 5*time.Second {
				t.Errorf("b got the lock %v after the release", wait)
			}
		})
	}
}

// An abandoned lease frees itself after its TTL, and never before the first
// grant's deadline.
func TestAbandonedLeaseExpires(t *testing.T) {
	s, ks, prefix := setup(t)
	for _, newLock := range []func(*gocql.Session, ...lease.Option) (*lease.Lease, error){lease.New, lease.NewFenced} {
		a := locktest.New(t, newLock, s, recipe.WithKeyspace(ks), recipe.WithTTL(3*time.Second))
		b := locktest.New(t, newLock, s, recipe.WithKeyspace(ks), recipe.WithTTL(3*time.Second))
		name := fmt.Sprintf("%s-%v", prefix, a.Fenced())
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		start := time.Now()
		ga, err := a.Acquire(ctx, name, "a")
		if err != nil {
			t.Fatal(err)
		}
		if ga.Lease <= 0 || ga.Lease > 2*time.Second || ga.Deadline.Before(start) {
			t.Fatalf("grant %+v: lease must be TTL minus the margin", ga)
		}
		gb, err := b.Acquire(ctx, name, "b")
		if err != nil {
			t.Fatalf("b never got the abandoned lease: %v", err)
		}
		took := time.Since(start)
		if time.Now().Before(ga.Deadline) {
			t.Fatalf("b got the lease %v after a's acquire, before a's deadline (%v)", took, ga.Lease)
		}
		if took > 3*time.Second+2*time.Second {
			t.Errorf("b got the lease %v after a's acquire; TTL is 3s", took)
		}
		if a.Fenced() && gb.Token <= ga.Token {
			t.Errorf("token after expiry %d, before %d: must grow", gb.Token, ga.Token)
		}
		if _, err := a.Renew(ctx, ga); !errors.Is(err, workload.ErrNotHeld) {
			t.Errorf("renew of an expired lease: %v, want ErrNotHeld", err)
		}
		t.Logf("fenced=%v: b acquired %v after a's acquire (a's lease %v)", a.Fenced(), took.Round(time.Millisecond), ga.Lease)
	}
}

func TestFencingTokensStrictlyGrow(t *testing.T) {
	s, ks, prefix := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	locks := make([]*lease.Lease, 3)
	for i := range locks {
		locks[i] = locktest.New(t, lease.NewFenced, s, recipe.WithKeyspace(ks), recipe.WithTTL(10*time.Second))
	}
	var last int64
	for i := range 15 {
		l := locks[i%len(locks)]
		g, err := l.Acquire(ctx, prefix, fmt.Sprint("c", i%len(locks)))
		if err != nil {
			t.Fatal(err)
		}
		if g.Token <= last {
			t.Fatalf("grant %d: token %d after %d", i, g.Token, last)
		}
		last = g.Token
		if i%4 == 3 { // a renewal keeps the token
			r, err := l.Renew(ctx, g)
			if err != nil || r.Token != g.Token {
				t.Fatalf("renew: %+v, %v", r, err)
			}
		}
		if err := l.Release(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
}

// The protected resource refuses the stale holder after the new one wrote.
func TestFencedResourceRefusesStaleToken(t *testing.T) {
	s, ks, prefix := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res := workload.NewCassandraResource(s, ks)
	if err := res.CreateSchema(ctx); err != nil {
		t.Fatal(err)
	}
	a := locktest.New(t, lease.NewFenced, s, recipe.WithKeyspace(ks), recipe.WithTTL(2*time.Second))
	b := locktest.New(t, lease.NewFenced, s, recipe.WithKeyspace(ks), recipe.WithTTL(2*time.Second))
	ga, err := a.Acquire(ctx, prefix, "a")
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Add(ctx, prefix, 1, ga.Token, nil); err != nil {
		t.Fatal(err)
	}
	// a stalls; its lease expires and b takes the lock.
	gb, err := b.Acquire(ctx, prefix, "b")
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Add(ctx, prefix, 2, gb.Token, nil); err != nil {
		t.Fatal(err)
	}
	err = res.Add(ctx, prefix, 3, ga.Token, nil)
	if !errors.Is(err, workload.ErrStaleToken) || errors.Is(err, workload.ErrUnknown) {
		t.Fatalf("stale holder's add: %v, want ErrStaleToken", err)
	}
	got, err := res.Read(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("set %v, want [1 2]", got)
	}
}

// Under no faults, 5 clients incrementing a counter under the lock lose no
// increment.
func TestNoLostIncrements(t *testing.T) {
	s, ks, prefix := setup(t)
	for _, r := range lease.Recipes[:2] { // lease, lease-fenced (racy is the control)
		t.Run(r.Name, func(t *testing.T) {
			locktest.NoLostIncrements(t, s, ks, prefix+r.Name, 5, 8, func() workload.Lock {
				return locktest.New(t, r.New, s, recipe.WithKeyspace(ks), recipe.WithTTL(60*time.Second))
			})
		})
	}
}

func TestElection(t *testing.T) {
	s, ks, prefix := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, refresh := range []bool{false, true} {
		e, err := lease.NewElection(s, []lease.Option{recipe.WithKeyspace(ks)}, lease.WithRefreshOnReclaim(refresh))
		if err != nil {
			t.Fatal(err)
		}
		group := fmt.Sprintf("%s-%v", prefix, refresh)
		// A 10 s term reclaimed after 5 s: about 5 s left as published, about
		// 10 s with the fix; 7 s between them leaves 2-3 s for a slow machine
		// (and TTLs read in whole seconds).
		const term = 10 * time.Second
		tok, err := e.TryClaim(ctx, group, "user1", term)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.TryClaim(ctx, group, "user2", term); !errors.Is(err, workload.ErrHeldByOther) {
			t.Fatalf("second identity claimed: %v", err)
		}
		time.Sleep(term / 2)
		if _, err := e.TryClaim(ctx, group, "user1", term); err != nil {
			t.Fatalf("re-entrant claim: %v", err)
		}
		st, err := e.Status(ctx, group)
		if err != nil || st.Leader != "user1" {
			t.Fatalf("status %+v, %v", st, err)
		}
		// As published the re-entrant claim leaves the old term running
		// out; with the fix it starts a new one.
		if refresh && st.TimeLeft < 7*time.Second {
			t.Errorf("refresh on reclaim: %v left of %v", st.TimeLeft, term)
		}
		if !refresh && st.TimeLeft > 7*time.Second {
			t.Errorf("as published the reclaim must not refresh: %v left", st.TimeLeft)
		}
		if _, err := e.Heartbeat(ctx, tok); err != nil {
			t.Fatal(err)
		}
		if err := e.Relinquish(ctx, tok); err != nil {
			t.Fatal(err)
		}
		if st, err := e.Status(ctx, group); err != nil || st.Leader != "" {
			t.Fatalf("after relinquish: %+v, %v", st, err)
		}
	}
}

func TestHolderReadsWriteTime(t *testing.T) {
	s, ks, prefix := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l := locktest.New(t, lease.NewFenced, s, recipe.WithKeyspace(ks), recipe.WithTTL(20*time.Second))
	before := time.Now()
	g, err := l.Acquire(ctx, prefix, "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.SetValue(ctx, g, "10.0.0.1:7000"); err != nil {
		t.Fatal(err)
	}
	h, err := l.Holder(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if h.Owner != "a" || h.Value != "10.0.0.1:7000" || h.Fence != g.Token || h.TTL <= 15*time.Second {
		t.Fatalf("holder %+v", h)
	}
	// writetime is the Paxos ballot on the coordinator's clock: near ours.
	if d := h.WriteTime.Sub(before); d < -2*time.Second || d > 10*time.Second {
		t.Errorf("writetime %v is %v from the acquire", h.WriteTime, d)
	}
	if np := h.NextPoll(20 * time.Second); np.Before(h.WriteTime.Add(19 * time.Second)) {
		t.Errorf("next poll %v", np)
	}
}
