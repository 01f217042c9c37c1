// Package accordtxn is a lock written as Accord transactions (CEP-15,
// Cassandra 6.0): one BEGIN TRANSACTION ... COMMIT TRANSACTION reads the
// lock's row (LET), and when the lease it holds has run out writes the new
// owner, the new expiry and the next fencing token, all in one
// transaction; the statement's SELECT returns the row as it was before, so
// the client knows whether it won and with which token.
//
// What Cassandra 6.0-alpha2 dictates (docs/notes-on-cassandra.md, "Accord
// on 6.0-alpha2"), and so the shape of this recipe:
//   - a table takes transactions only when its transactional_mode is not
//     off: the recipe runs on a cluster started with --accord (the
//     default_transactional_mode of every new table); elsewhere every
//     statement is refused, and so is every acquire;
//   - an update inside a transaction may not carry a TTL ("Updates within
//     transactions may not specify custom ttls"), so the lease is a column,
//     expires, in milliseconds of the client's clock, and not a cell's TTL:
//     a contender whose clock runs ahead sees a live lease expired. The
//     promise is fenced: the token keeps a stale holder out of the
//     resource;
//   - bind markers in a transaction were refused through gocql ("Invalid
//     amount of bind variables"), so the statements carry literals, quoted
//     by literal (the names and owners are lockcheck's own);
//   - `fence += 1` on a bigint column is allowed in a transaction;
//     arithmetic on a LET reference (`cur.fence + 1`) is not.
package accordtxn

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/recipe"
	"github.com/lockcheck/lockcheck/workload"
)

// Table is the lock table; DefaultTTL the lease when the run gives none.
const (
	Table      = "accord_locks"
	DefaultTTL = 10 * time.Second
)

// Recipes are this package's locks, for `lockcheck run --lock NAME`.
var Recipes = []recipe.Entry{
	{Name: "accord-txn", Promise: history.PromiseFenced, New: recipe.Constructor(New), Schema: CreateSchema,
		Does: "an Accord transaction (Cassandra 6.0, `--accord`): `BEGIN TRANSACTION LET cur = (SELECT owner, fence, expires ...); SELECT cur.owner, cur.fence, cur.expires; " +
			"IF cur.expires < now THEN UPDATE ... SET owner = ?, expires = now + TTL, fence += 1 ...; END IF COMMIT TRANSACTION`, the expiry on the client's clock (no TTL in a transaction); " +
			"release sets expires to 0 when owner and fence still match",
		Fails: "holds overlap when a holder stalls past its lease or a contender's clock runs ahead (the lease is on the client's clock); the resource refuses the stale holder by its token",
	},
}

// CreateSchema creates the lock table if it does not exist. Its
// transactional_mode is the cluster's default (--accord): the recipe's
// statements are refused on a table whose mode is off.
func CreateSchema(ctx context.Context, s *gocql.Session, keyspace string) error {
	t, err := recipe.Table(keyspace, Table)
	if err != nil {
		return err
	}
	return recipe.CreateTables(ctx, s, "accord-txn schema",
		`CREATE TABLE IF NOT EXISTS `+t+` (name text PRIMARY KEY, owner text, fence bigint, expires bigint)`)
}

// Lock is one client's transactional lock.
type Lock struct {
	s     *gocql.Session
	cfg   recipe.Options
	table string
	ttl   time.Duration

	mu   sync.Mutex
	rows map[string]bool // lock rows known to exist
}

// Option configures a Lock: the shared options of package recipe; WithTTL
// is the lease.
type Option = recipe.Option

// New returns a client's lock.
func New(s *gocql.Session, opts ...Option) (*Lock, error) {
	o := recipe.Defaults()
	if err := recipe.Configure(&o, &struct{}{}, opts); err != nil {
		return nil, fmt.Errorf("accord-txn: %w", err)
	}
	t, err := recipe.Table(o.Keyspace, Table)
	if err != nil {
		return nil, fmt.Errorf("accord-txn: %w", err)
	}
	ttl := o.TTL
	if ttl == 0 {
		ttl = DefaultTTL
	}
	return &Lock{s: s, cfg: o, table: t, ttl: ttl, rows: map[string]bool{}}, nil
}

// literal quotes s as a CQL text literal.
func literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// createStmt creates name's row (owner empty, token 0, expired) unless it
// exists: a transaction of its own, since 6.0-alpha2 has no ELSE.
func (l *Lock) createStmt(name string) string {
	n := literal(name)
	return `BEGIN TRANSACTION
  LET cur = (SELECT fence FROM ` + l.table + ` WHERE name = ` + n + `);
  IF cur IS NULL THEN
    INSERT INTO ` + l.table + ` (name, owner, fence, expires) VALUES (` + n + `, '', 0, 0);
  END IF
COMMIT TRANSACTION`
}

// acquireStmt takes name for owner when its lease ran out before now (ms
// of the client's clock), until expires.
func (l *Lock) acquireStmt(name, owner string, now, expires int64) string {
	n := literal(name)
	return `BEGIN TRANSACTION
  LET cur = (SELECT owner, fence, expires FROM ` + l.table + ` WHERE name = ` + n + `);
  SELECT cur.owner, cur.fence, cur.expires;
  IF cur.expires < ` + strconv.FormatInt(now, 10) + ` THEN
    UPDATE ` + l.table + ` SET owner = ` + literal(owner) + `, expires = ` + strconv.FormatInt(expires, 10) + `, fence += 1 WHERE name = ` + n + `;
  END IF
COMMIT TRANSACTION`
}

// releaseStmt ends owner's lease of name if its grant (token) still holds it.
func (l *Lock) releaseStmt(name, owner string, token int64) string {
	n := literal(name)
	return `BEGIN TRANSACTION
  LET cur = (SELECT owner, fence FROM ` + l.table + ` WHERE name = ` + n + `);
  SELECT cur.owner, cur.fence;
  IF cur.owner = ` + literal(owner) + ` AND cur.fence = ` + strconv.FormatInt(token, 10) + ` THEN
    UPDATE ` + l.table + ` SET expires = 0 WHERE name = ` + n + `;
  END IF
COMMIT TRANSACTION`
}

// txn runs a transaction at lockcheck's LWT settings (no driver retry: a
// retried transaction may have applied).
func (l *Lock) txn(q string) *gocql.Query { return workload.LWT(l.s.Query(q)) }

// classify: a transaction refused before it ran (syntax, invalid) failed;
// anything else may have applied.
func classify(err error) error {
	if isType[*gocql.RequestErrSyntax](err) || isType[*gocql.RequestErrInvalid](err) {
		return fmt.Errorf("cassandra: %w", err)
	}
	return workload.ClassifyLWT(err)
}

func isType[T error](err error) bool {
	var t T
	return errors.As(err, &t)
}

// Acquire takes name for owner, retrying while another holds it, until ctx
// ends.
func (l *Lock) Acquire(ctx context.Context, name, owner string) (workload.Grant, error) {
	start := time.Now()
	if err := l.ensureRow(ctx, name); err != nil {
		return workload.Grant{}, err
	}
	poll := recipe.NewPoller(l.cfg)
	for {
		attempt := time.Now()
		now := l.cfg.Clock.Now()
		exp := now.Add(l.ttl)
		var prevOwner string
		var prevFence, prevExpires int64
		err := l.txn(l.acquireStmt(name, owner, now.UnixMilli(), exp.UnixMilli())).ScanContext(ctx, &prevOwner, &prevFence, &prevExpires)
		if err != nil {
			return workload.Grant{}, fmt.Errorf("acquire %q: %w", name, classify(err))
		}
		if prevExpires < now.UnixMilli() {
			// The row before the transaction: the update ran, the token is
			// the next one. Valid for the lease from the attempt's start.
			deadline := attempt.Add(l.ttl)
			return workload.Grant{Lock: name, Owner: owner, Token: prevFence + 1, Deadline: deadline, Lease: deadline.Sub(start)}, nil
		}
		l.cfg.Log.Debug("accord-txn: held by another", "lock", name, "holder", prevOwner, "fence", prevFence)
		if err := poll.Wait(ctx); err != nil {
			return workload.Grant{}, fmt.Errorf("acquire %q: %w: %w (held by %q)", name, workload.ErrNotAcquired, err, prevOwner)
		}
	}
}

// ensureRow creates name's row once per client.
func (l *Lock) ensureRow(ctx context.Context, name string) error {
	l.mu.Lock()
	known := l.rows[name]
	l.mu.Unlock()
	if known {
		return nil
	}
	if err := l.txn(l.createStmt(name)).ExecContext(ctx); err != nil {
		// The row has no owner yet: creating it takes nothing.
		return fmt.Errorf("acquire %q: create row: %w: %w", name, workload.ErrNotAcquired, err)
	}
	l.mu.Lock()
	l.rows[name] = true
	l.mu.Unlock()
	return nil
}

// Release ends g's lease if it still holds the lock.
func (l *Lock) Release(ctx context.Context, g workload.Grant) error {
	var owner string
	var fence int64
	if err := l.txn(l.releaseStmt(g.Lock, g.Owner, g.Token)).ScanContext(ctx, &owner, &fence); err != nil {
		return fmt.Errorf("release %q: %w", g.Lock, classify(err))
	}
	if owner != g.Owner || fence != g.Token {
		return fmt.Errorf("release %q by %q: held by %q with token %d: %w", g.Lock, g.Owner, owner, fence, workload.ErrNotHeld)
	}
	return nil
}
