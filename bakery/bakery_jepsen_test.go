//go:build jepsen

package bakery_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/bakery"
	"github.com/lockcheck/lockcheck/cluster/clustertest"
	"github.com/lockcheck/lockcheck/workload"
)

func TestMain(m *testing.M) { clustertest.Main(m) }

func setup(t *testing.T) (*gocql.Session, string, string) {
	t.Helper()
	c := clustertest.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := c.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := bakery.CreateSchema(ctx, s, c.Keyspace()); err != nil {
		t.Fatal(err)
	}
	return s, c.Keyspace(), fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
}

func TestOneHolderAndReleaseLetsTheOtherIn(t *testing.T) {
	s, ks, prefix := setup(t)
	for _, r := range bakery.Recipes {
		t.Run(r.Name, func(t *testing.T) {
			name := prefix + r.Name
			a, b := r.New(s, bakery.WithKeyspace(ks)), r.New(s, bakery.WithKeyspace(ks))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			ga, err := a.Acquire(ctx, name, "a")
			if err != nil {
				t.Fatal(err)
			}
			short, cancelShort := context.WithTimeout(ctx, time.Second)
			_, err = b.Acquire(short, name, "b")
			cancelShort()
			if !errors.Is(err, workload.ErrNotAcquired) || errors.Is(err, workload.ErrUnknown) {
				t.Fatalf("b while a holds: %v, want ErrNotAcquired (its ticket deleted)", err)
			}
			got := make(chan error, 1)
			go func() {
				g, err := b.Acquire(ctx, name, "b")
				if err == nil {
					err = b.Release(ctx, g)
				}
				got <- err
			}()
			time.Sleep(200 * time.Millisecond)
			if err := a.Release(ctx, ga); err != nil {
				t.Fatal(err)
			}
			if err := <-got; err != nil {
				t.Fatalf("b after release: %v", err)
			}
			if err := a.Release(ctx, ga); !errors.Is(err, workload.ErrNotHeld) {
				t.Errorf("second release: %v, want ErrNotHeld", err)
			}
		})
	}
}

func TestTwoContendersExactlyOneWins(t *testing.T) {
	s, ks, prefix := setup(t)
	for i := range 5 {
		name := fmt.Sprintf("%s-%d", prefix, i)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		a, b := bakery.New(s, bakery.WithKeyspace(ks)), bakery.New(s, bakery.WithKeyspace(ks))
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
	ctx := context.Background()
	if err := s.Query(`CREATE TABLE IF NOT EXISTS ` + ks + `.test_counter (name text PRIMARY KEY, n bigint)`).ExecContext(ctx); err != nil {
		t.Fatal(err)
	}
	name := prefix
	const clients, each = 5, 6
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		l := bakery.New(s, bakery.WithKeyspace(ks))
		wg.Go(func() {
			for range each {
				if err := increment(ctx, s, ks, l, name, fmt.Sprint("c", c)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var n int64
	if err := s.Query(`SELECT n FROM `+ks+`.test_counter WHERE name = ?`, name).Consistency(gocql.Quorum).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != clients*each {
		t.Fatalf("counter %d after %d increments", n, clients*each)
	}
}

func increment(ctx context.Context, s *gocql.Session, ks string, l workload.Lock, name, owner string) error {
	g, err := l.Acquire(ctx, name, owner)
	if err != nil {
		return err
	}
	var n int64
	err = s.Query(`SELECT n FROM `+ks+`.test_counter WHERE name = ?`, name).Consistency(gocql.Quorum).ScanContext(ctx, &n)
	if err != nil && !errors.Is(err, gocql.ErrNotFound) {
		return err
	}
	if err := s.Query(`UPDATE `+ks+`.test_counter SET n = ? WHERE name = ?`, n+1, name).Consistency(gocql.Quorum).ExecContext(ctx); err != nil {
		return err
	}
	return l.Release(ctx, g)
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
	a := bakery.New(s, bakery.WithKeyspace(ks), bakery.WithClock(&clk))
	b := bakery.New(s, bakery.WithKeyspace(ks))
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
	short, cancelShort := context.WithTimeout(ctx, 3*time.Second)
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
