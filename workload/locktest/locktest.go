// Package locktest holds checks that the recipes' integration tests share.
package locktest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/cluster/clustertest"
	"github.com/lockcheck/lockcheck/workload"
)

var schemaMu sync.Mutex

// Setup returns a session on the shared jepsen cluster with a recipe's
// schema created, its keyspace, and a lock-name prefix unique to this test.
func Setup(t *testing.T, createSchema func(context.Context, *gocql.Session, string) error) (*gocql.Session, string, string) {
	t.Helper()
	c := clustertest.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := c.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	// Tests that run side by side create their schema one at a time: two
	// CREATE TABLE IF NOT EXISTS of one table at once, through two
	// coordinators, can leave two table ids for one name.
	schemaMu.Lock()
	err = createSchema(ctx, s, c.Keyspace())
	schemaMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	return s, c.Keyspace(), fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
}

// New makes a lock with a recipe package's constructor (or an Entry's New),
// failing the test when the constructor refuses its options. It is generic
// in the option type so that this package need not import package recipe,
// which imports workload.
func New[L, O any](t testing.TB, newLock func(*gocql.Session, ...O) (L, error), s *gocql.Session, opts ...O) L {
	t.Helper()
	l, err := newLock(s, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Handover checks the lock's basic contract on lock `name` between two
// clients: b cannot take it while a holds it (a definite ErrNotAcquired when
// b gives up), b gets it once a releases, and a second release by a is
// ErrNotHeld. It returns both grants and how long b waited after the release.
func Handover(t *testing.T, a, b workload.Lock, name string) (ga, gb workload.Grant, wait time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ga, err := a.Acquire(ctx, name, "a")
	if err != nil {
		t.Fatal(err)
	}
	// b gives up while a holds. On a loaded machine one Paxos round can
	// outlast b's deadline, and an attempt cut off in flight is rightly
	// unknown; so b tries again, and one of three tries must end in a
	// definite ErrNotAcquired (make test's rehearsal saw three 3 s tries all
	// cut off). Every try ends a second before a's grant does: past it a
	// grant to b is what the lock promises, not a fault (CI saw caslock,
	// 5 s lease, grant b on its second try, 5 to 10 s after a's grant).
	for try := 1; ; try++ {
		budget := 5 * time.Second
		if !ga.Deadline.IsZero() {
			left := time.Until(ga.Deadline)
			if budget = min(budget, left-time.Second); budget < time.Second {
				t.Fatalf("b while a holds, try %d: a's grant ends in %v, too soon to ask again; give the test a longer TTL", try, left.Round(time.Millisecond))
			}
		}
		short, cancelShort := context.WithTimeout(ctx, budget)
		_, err = b.Acquire(short, name, "b")
		cancelShort()
		if errors.Is(err, workload.ErrNotAcquired) && !errors.Is(err, workload.ErrUnknown) {
			break
		}
		if !errors.Is(err, workload.ErrUnknown) || try == 3 {
			t.Fatalf("b while a holds, try %d: %v, want ErrNotAcquired (and its attempt cleaned up)", try, err)
		}
		t.Logf("b while a holds, try %d: %v (an attempt cut off by the deadline; trying again)", try, err)
	}
	type result struct {
		g   workload.Grant
		err error
	}
	got := make(chan result, 1)
	go func() {
		g, err := b.Acquire(ctx, name, "b")
		got <- result{g, err}
	}()
	time.Sleep(200 * time.Millisecond)
	// b polls meanwhile: a's release CAS contends with b's and can end
	// unknown ("accepted by 1 but not a quorum"); Release settles it.
	if err := Release(ctx, a, ga); err != nil {
		t.Fatal(err)
	}
	released := time.Now()
	r := <-got
	if r.err != nil {
		t.Fatalf("b after release: %v", r.err)
	}
	wait = time.Since(released)
	if err := a.Release(ctx, ga); !errors.Is(err, workload.ErrNotHeld) {
		t.Errorf("second release: %v, want ErrNotHeld", err)
	}
	if err := Release(ctx, b, r.g); err != nil {
		t.Errorf("b's release: %v", err)
	}
	return ga, r.g, wait
}

// NoLostIncrements has `clients` clients, each with its own Lock from
// newLock, increment a counter row at QUORUM under lock `name`, `each` times
// apiece, and fails t unless the counter ends at clients*each: a lock that
// lets two clients in at once loses increments.
func NoLostIncrements(t *testing.T, s *gocql.Session, ks, name string, clients, each int, newLock func() workload.Lock) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := s.Query(`CREATE TABLE IF NOT EXISTS ` + ks + `.test_counter (name text PRIMARY KEY, n bigint)`).ExecContext(ctx); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		l := newLock()
		owner := fmt.Sprint("c", c)
		wg.Go(func() {
			for range each {
				if err := increment(ctx, s, ks, l, name, owner); err != nil {
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
	if err := s.Query(`SELECT n FROM `+ks+`.test_counter WHERE name = ?`, name).Consistency(gocql.Quorum).ScanContext(ctx, &n); err != nil {
		t.Fatal(err)
	}
	if n != int64(clients*each) {
		t.Fatalf("counter %d after %d increments", n, clients*each)
	}
}

func increment(ctx context.Context, s *gocql.Session, ks string, l workload.Lock, name, owner string) error {
	g, err := acquire(ctx, l, name, owner)
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
	return Release(ctx, l, g)
}

// acquire retries an acquire whose outcome is unknown (contending Paxos
// rounds, a proposal accepted by fewer than a quorum): it may have applied,
// so the owner's hold is released first, as a client that lost the answer
// would, before it asks again.
func acquire(ctx context.Context, l workload.Lock, name, owner string) (workload.Grant, error) {
	var err error
	for range 5 {
		var g workload.Grant
		if g, err = l.Acquire(ctx, name, owner); !errors.Is(err, workload.ErrUnknown) {
			return g, err
		}
		if rerr := Release(ctx, l, workload.Grant{Lock: name, Owner: owner}); rerr != nil && !errors.Is(rerr, workload.ErrNotHeld) {
			return workload.Grant{}, fmt.Errorf("after an unknown acquire (%w), release: %w", err, rerr)
		}
	}
	return workload.Grant{}, err
}

// Release retries a release whose outcome is unknown (contending Paxos
// rounds): not held after an unknown outcome means the first one applied.
func Release(ctx context.Context, l workload.Lock, g workload.Grant) error {
	err := l.Release(ctx, g)
	for range 5 {
		if !errors.Is(err, workload.ErrUnknown) {
			break
		}
		if err = l.Release(ctx, g); errors.Is(err, workload.ErrNotHeld) {
			return nil
		}
	}
	return err
}
