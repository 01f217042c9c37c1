//go:build jepsen

package bakery_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/bakery"
	"github.com/lockcheck/lockcheck/cluster/clustertest"
	"github.com/lockcheck/lockcheck/recipe"
	"github.com/lockcheck/lockcheck/workload"
	"github.com/lockcheck/lockcheck/workload/locktest"
)

func TestMain(m *testing.M) { clustertest.Main(m) }

func setup(t *testing.T) (*gocql.Session, string, string) {
	// Each test contends on lock names of its own and faults nothing
	// (its clocks are the locks' own): the package's tests run side by side.
	t.Parallel()
	return locktest.Setup(t, bakery.CreateSchema)
}

func TestOneHolderAndReleaseLetsTheOtherIn(t *testing.T) {
	s, ks, prefix := setup(t)
	for _, r := range bakery.Recipes {
		t.Run(r.Name, func(t *testing.T) {
			locktest.Handover(t, locktest.New(t, r.New, s, recipe.WithKeyspace(ks)), locktest.New(t, r.New, s, recipe.WithKeyspace(ks)), prefix+r.Name)
		})
	}
}

func TestTwoContendersExactlyOneWins(t *testing.T) {
	s, ks, prefix := setup(t)
	for i := range 5 {
		name := fmt.Sprintf("%s-%d", prefix, i)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		a, b := locktest.New(t, bakery.New, s, recipe.WithKeyspace(ks)), locktest.New(t, bakery.New, s, recipe.WithKeyspace(ks))
		var (
			wg     sync.WaitGroup
			mu     sync.Mutex
			inside int
			most   int
		)
		for _, c := range []struct {
			l  *bakery.Bakery
			id string
		}{{a, "a"}, {b, "b"}} {
			wg.Go(func() {
				g, err := c.l.Acquire(ctx, name, c.id)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				inside++
				most = max(most, inside)
				mu.Unlock()
				time.Sleep(300 * time.Millisecond)
				mu.Lock()
				inside--
				mu.Unlock()
				if err := c.l.Release(ctx, g); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		cancel()
		if most != 1 {
			t.Fatalf("round %d: %d clients inside at once", i, most)
		}
	}
}

func TestNoLostIncrements(t *testing.T) {
	s, ks, prefix := setup(t)
	locktest.NoLostIncrements(t, s, ks, prefix, 5, 6, func() workload.Lock {
		return locktest.New(t, bakery.New, s, recipe.WithKeyspace(ks))
	})
}

// The documented flaw: a client whose clock steps back writes its new
// ticket under its own older tombstone (last write wins on client
// timestamps), so the ticket is invisible and another client enters while it
// holds the lock, even at QUORUM.
func TestClockStepBackShadowsTicket(t *testing.T) {
	s, ks, prefix := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var clk workload.SkewClock
	a := locktest.New(t, bakery.New, s, recipe.WithKeyspace(ks), recipe.WithClock(&clk))
	b := locktest.New(t, bakery.New, s, recipe.WithKeyspace(ks))
	g, err := a.Acquire(ctx, prefix, "a")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, g); err != nil { // tombstones at the machine's time
		t.Fatal(err)
	}
	clk.SetOffset(-10 * time.Second)
	ga, err := a.Acquire(ctx, prefix, "a")
	if err != nil {
		t.Fatal(err)
	}
	// b gets in at once under the flaw; the bound only stops a hang.
	short, cancelShort := context.WithTimeout(ctx, 10*time.Second)
	gb, err := b.Acquire(short, prefix, "b")
	cancelShort()
	if err != nil {
		t.Fatalf("b was kept out while a's ticket sits under a's own tombstone (the flaw should show): %v", err)
	}
	if err := b.Release(ctx, gb); err != nil {
		t.Error(err)
	}
	_ = a.Release(ctx, ga)
}
