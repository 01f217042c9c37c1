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
	if err := createSchema(ctx, s, c.Keyspace()); err != nil {
		t.Fatal(err)
	}
	return s, c.Keyspace(), fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
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
	return Release(ctx, l, g)
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
