// Package leaselock is a lock as a user might write one for their own
// service, to show how lockcheck tests a lock that is not its own: a row per
// lock name, taken with a lightweight transaction that expires with a TTL,
// given back with a conditional delete.
//
//	CREATE TABLE leaselock (name text PRIMARY KEY, holder text)
//	acquire  INSERT INTO leaselock (name, holder) VALUES (?, ?) IF NOT EXISTS USING TTL ?
//	release  DELETE FROM leaselock WHERE name = ? IF holder = ?
//
// It trusts its lease: a holder that stalls past the TTL still writes as
// the holder while another client holds the lock. lockcheck's client-pause
// fault shows it (leaselock_jepsen_test.go).
package leaselock

import (
	"context"
	"fmt"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/workload"
)

// Lock is one client's lease lock.
type Lock struct {
	s     *gocql.Session
	table string
	ttl   time.Duration
}

// New returns a lock on keyspace's leaselock table whose grants live ttl
// (whole seconds, at least one).
func New(s *gocql.Session, keyspace string, ttl time.Duration) *Lock {
	return &Lock{s: s, table: keyspace + ".leaselock", ttl: max(ttl.Truncate(time.Second), time.Second)}
}

// CreateTable creates the lock's table in keyspace if it does not exist.
func CreateTable(ctx context.Context, s *gocql.Session, keyspace string) error {
	if err := s.Query(`CREATE TABLE IF NOT EXISTS ` + keyspace + `.leaselock (name text PRIMARY KEY, holder text)`).ExecContext(ctx); err != nil {
		return fmt.Errorf("leaselock: %w", err)
	}
	return s.AwaitSchemaAgreement(ctx)
}

// Acquire tries every 20-40 ms until the row is ours or ctx ends.
func (l *Lock) Acquire(ctx context.Context, name, owner string) (workload.Grant, error) {
	start := time.Now()
	for {
		attempt := time.Now()
		applied, err := l.s.Query(`INSERT INTO `+l.table+` (name, holder) VALUES (?, ?) IF NOT EXISTS USING TTL ?`,
			name, owner, int(l.ttl/time.Second)).MapScanCASContext(ctx, map[string]any{})
		switch {
		case err != nil:
			// A timed-out or interrupted LWT may still apply: we cannot say
			// we hold nothing.
			return workload.Grant{}, fmt.Errorf("acquire %s: %w: %v", name, workload.ErrUnknown, err)
		case applied:
			// Valid until the TTL runs out, counted from this attempt, less a
			// second: Cassandra expires cells in whole seconds.
			deadline := attempt.Add(l.ttl - time.Second)
			return workload.Grant{Lock: name, Owner: owner, Deadline: deadline, Lease: deadline.Sub(start)}, nil
		}
		select {
		case <-ctx.Done():
			return workload.Grant{}, fmt.Errorf("acquire %s: %w: %v", name, workload.ErrNotAcquired, ctx.Err())
		case <-time.After(20*time.Millisecond + time.Duration(time.Now().UnixNano()%20)*time.Millisecond):
		}
	}
}

// Release deletes the row if it is still ours.
func (l *Lock) Release(ctx context.Context, g workload.Grant) error {
	applied, err := l.s.Query(`DELETE FROM `+l.table+` WHERE name = ? IF holder = ?`, g.Lock, g.Owner).
		MapScanCASContext(ctx, map[string]any{})
	if err != nil {
		return fmt.Errorf("release %s: %w: %v", g.Lock, workload.ErrUnknown, err)
	}
	if !applied {
		return fmt.Errorf("release %s: %w", g.Lock, workload.ErrNotHeld)
	}
	return nil
}

var _ workload.Lock = (*Lock)(nil)
