// Package caslock re-expresses jroimartin/caslock, a Go row lock for
// Cassandra on lightweight transactions, as a lockcheck lock. caslock is
// not on the Go module proxy, so it is re-expressed rather than imported.
//
// Followed: github.com/jroimartin/caslock, caslock.go at commit
// 0024c8247b604e940224d5892a20839cc6e6c862. Kept as facts:
//   - the lock column is named "[lock]" (quoted) in the user's table, a
//     row per key with primary key id, and holds a time UUID made once per
//     Acquire;
//   - lock: UPDATE "ks"."t" USING TTL ? SET "[lock]" = ? WHERE id = ? IF "[lock]" = null
//     with TTL = int(seconds of twice the timeout) (the timeout is "the
//     minimum time that the rows will be locked before being automatically
//     released");
//   - not applied: SELECT COUNT(*) FROM "ks"."t" WHERE id in ? (the rows
//     must exist, else the error "key not found"), then a retry after
//     RetryTime, 500 ms, with no bound: Acquire blocks until it wins;
//   - an error of either statement releases what was taken and is
//     returned, no retry;
//   - release: UPDATE "ks"."t" SET "[lock]" = null WHERE id = ? IF "[lock]" = ?
//     and whether it applied is not looked at: a release of a lock no
//     longer held returns no error;
//   - the driver's defaults (gocql of 2015: QUORUM, the server's SERIAL,
//     no retry policy, not idempotent), as lockcheck's LWT settings are.
//
// What lockcheck maps: a lock name is one row key (caslock locks many rows
// at once; the multi-row restart when the first row's time runs short is
// not reached with one row), the timeout is the run's --ttl, the grant is
// valid for the timeout from the winning attempt's start (the promise),
// while the cell lives twice as long. lockcheck inserts the row (id only,
// no TTL) before the first lock of a name, as a caslock user's table
// already holds its rows. Acquire's loop ends when the caller's context
// does, where caslock's would go on.
package caslock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/recipe"
	"github.com/lockcheck/lockcheck/workload"
)

// LockColumn is caslock's lock column, RetryTime its wait between attempts.
const (
	LockColumn = "[lock]"
	RetryTime  = 500 * time.Millisecond
	// DefaultTimeout is the timeout when the run gives no TTL.
	DefaultTimeout = 30 * time.Second
)

// Recipes are this package's locks, for `lockcheck run --lock NAME`.
var Recipes = []recipe.Entry{
	{Name: "caslock", Promise: history.PromiseMutex, New: recipe.Constructor(New), Schema: CreateSchema,
		Does: "jroimartin/caslock (0024c82): `UPDATE ... USING TTL ? SET \"[lock]\" = ? WHERE id = ? IF \"[lock]\" = null` with TTL twice the timeout, " +
			"retry every 500 ms after a `SELECT COUNT(*)` of the rows, release `... SET \"[lock]\" = null ... IF \"[lock]\" = ?` (result not read); QUORUM, SERIAL",
		Fails: "no fencing: a holder stalled past twice its timeout writes after the next holder's writes; a contender's coordinator clock running ahead past the cell's life (twice the timeout) sees it expired and grants the row again",
	},
}

// CreateSchema creates the table caslock's rows live in (a user's table
// with the "[lock]" column added) if it does not exist.
func CreateSchema(ctx context.Context, s *gocql.Session, keyspace string) error {
	t, err := recipe.Table(keyspace, "caslock_rows")
	if err != nil {
		return err
	}
	if err := s.Query(`CREATE TABLE IF NOT EXISTS ` + t + ` (id text PRIMARY KEY, "[lock]" timeuuid)`).ExecContext(ctx); err != nil {
		return fmt.Errorf("caslock schema: %w", err)
	}
	return s.AwaitSchemaAgreement(ctx)
}

// Lock is one client's caslock.
type Lock struct {
	s       *gocql.Session
	cfg     recipe.Options
	table   string // "ks"."t", quoted as caslock's %q.%q
	timeout time.Duration

	mu   sync.Mutex
	ids  map[[2]string]gocql.UUID // (lock, owner) -> the lock id of its grant
	rows map[string]bool          // rows known to exist
}

// Option configures a Lock: the shared options of package recipe; WithTTL
// is caslock's timeout.
type Option = recipe.Option

// New returns a client's caslock.
func New(s *gocql.Session, opts ...Option) (*Lock, error) {
	o := recipe.Defaults()
	if err := recipe.Configure(&o, &struct{}{}, opts); err != nil {
		return nil, fmt.Errorf("caslock: %w", err)
	}
	if _, err := recipe.Table(o.Keyspace, "caslock_rows"); err != nil {
		return nil, fmt.Errorf("caslock: %w", err)
	}
	timeout := o.TTL
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	return &Lock{s: s, cfg: o, table: fmt.Sprintf("%q.%q", o.Keyspace, "caslock_rows"), timeout: timeout,
		ids: map[[2]string]gocql.UUID{}, rows: map[string]bool{}}, nil
}

// ttl is caslock's TTL: twice the timeout, in whole seconds (int of the
// float, truncated, as caslock's int(l.ttl.Seconds())).
func (l *Lock) ttl() int { return int((2 * l.timeout).Seconds()) }

func lwt(q *gocql.Query) *gocql.Query { return workload.LWT(q) }

// Acquire locks the row name: caslock's acquire loop for one row.
func (l *Lock) Acquire(ctx context.Context, name, owner string) (workload.Grant, error) {
	start := time.Now()
	if err := l.ensureRow(ctx, name); err != nil {
		return workload.Grant{}, err
	}
	// A time UUID per Acquire, from the client's clock.
	lockID := gocql.UUIDFromTime(l.cfg.Clock.Now())
	for {
		attempt := time.Now()
		applied, err := l.lockRow(ctx, name, lockID)
		if err != nil {
			// caslock releases what it may hold and returns the error.
			l.releaseDetached(ctx, name, lockID)
			return workload.Grant{}, fmt.Errorf("acquire %q: %w", name, workload.ClassifyLWT(err))
		}
		if applied {
			l.mu.Lock()
			l.ids[[2]string{name, owner}] = lockID
			l.mu.Unlock()
			// Valid for the timeout from the winning attempt's start: the
			// cell's TTL starts later, on the coordinator.
			deadline := attempt.Add(l.timeout)
			return workload.Grant{Lock: name, Owner: owner, Deadline: deadline, Lease: deadline.Sub(start)}, nil
		}
		if err := l.checkRows(ctx, name); err != nil {
			l.releaseDetached(ctx, name, lockID)
			return workload.Grant{}, fmt.Errorf("acquire %q: %w: %w", name, workload.ErrNotAcquired, err)
		}
		select {
		case <-ctx.Done():
			return workload.Grant{}, fmt.Errorf("acquire %q: %w: %v", name, workload.ErrNotAcquired, ctx.Err())
		case <-time.After(RetryTime):
		}
	}
}

func (l *Lock) lockRow(ctx context.Context, row string, lockID gocql.UUID) (bool, error) {
	q := fmt.Sprintf(`UPDATE %s USING TTL ? SET %q = ? WHERE id = ? IF %q = null`, l.table, LockColumn, LockColumn)
	var prev gocql.UUID
	applied, err := lwt(l.s.Query(q, l.ttl(), lockID, row)).ScanCASContext(ctx, &prev)
	if err == nil && !applied {
		l.cfg.Log.Debug("caslock: row locked by another", "row", row, "lock_id", lockID, "prev_lock_id", prev)
	}
	return applied, err
}

// checkRows is caslock's check that the rows exist before a retry.
func (l *Lock) checkRows(ctx context.Context, row string) error {
	var n int
	q := fmt.Sprintf(`SELECT COUNT(*) FROM %s WHERE id in ?`, l.table)
	if err := l.s.Query(q, []string{row}).Consistency(gocql.Quorum).ScanContext(ctx, &n); err != nil {
		return err
	}
	if n != 1 {
		return errors.New("key not found")
	}
	return nil
}

// ensureRow inserts the row's key once per client (lockcheck's set-up of
// the user's table; no TTL, and no "[lock]" cell is written).
func (l *Lock) ensureRow(ctx context.Context, row string) error {
	l.mu.Lock()
	known := l.rows[row]
	l.mu.Unlock()
	if known {
		return nil
	}
	q := fmt.Sprintf(`INSERT INTO %s (id) VALUES (?)`, l.table)
	if err := l.s.Query(q, row).Consistency(gocql.Quorum).ExecContext(ctx); err != nil {
		return fmt.Errorf("acquire %q: create row: %w: %w", row, workload.ErrNotAcquired, err)
	}
	l.mu.Lock()
	l.rows[row] = true
	l.mu.Unlock()
	return nil
}

// release is caslock's Release of one row: applied or not, no error.
func (l *Lock) release(ctx context.Context, row string, lockID gocql.UUID) error {
	q := fmt.Sprintf(`UPDATE %s SET %q = null WHERE id = ? IF %q = ?`, l.table, LockColumn, LockColumn)
	var cur gocql.UUID
	_, err := lwt(l.s.Query(q, row, lockID)).ScanCASContext(ctx, &cur)
	return err
}

// releaseDetached is the release caslock makes after an error, on a
// context of its own (the caller's may be what ended).
func (l *Lock) releaseDetached(ctx context.Context, row string, lockID gocql.UUID) {
	rctx, cancel := recipe.Detached(ctx)
	defer cancel()
	if err := l.release(rctx, row, lockID); err != nil {
		l.cfg.Log.Debug("caslock: release after an error failed", "row", row, "err", err)
	}
}

// Release unlocks g's row. As caslock's, it does not look at whether the
// row was still locked by this grant.
func (l *Lock) Release(ctx context.Context, g workload.Grant) error {
	key := [2]string{g.Lock, g.Owner}
	l.mu.Lock()
	lockID, ok := l.ids[key]
	delete(l.ids, key)
	l.mu.Unlock()
	if !ok {
		return fmt.Errorf("release %q by %q: no grant: %w", g.Lock, g.Owner, workload.ErrNotHeld)
	}
	if err := l.release(ctx, g.Lock, lockID); err != nil {
		return fmt.Errorf("release %q: %w", g.Lock, workload.ClassifyLWT(err))
	}
	return nil
}
