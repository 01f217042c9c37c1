package lease

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

// HeldError says who holds the lock; it wraps workload.ErrHeldByOther.
type HeldError struct {
	Lock, Holder string
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("lock %q held by %q", e.Lock, e.Holder)
}

func (e *HeldError) Unwrap() error { return workload.ErrHeldByOther }

// Lease is the lock of "Consensus on Cassandra" (seed 000):
//
//	CREATE TABLE leases (name text PRIMARY KEY, owner text, value text) WITH default_time_to_live = 180
//	acquire  INSERT INTO leases (name, owner) VALUES (?, ?) IF NOT EXISTS USING TTL ?
//	renew    UPDATE leases USING TTL ? SET owner = ? WHERE name = ? IF owner = ?
//	release  DELETE FROM leases WHERE name = ? IF owner = ?
//	read     SELECT owner, value, writetime(owner), ttl(owner) FROM leases WHERE name = ?  (SERIAL)
//
// As published it is unsafe: a holder that stalls past its TTL still believes
// it holds the lock while another client takes it.
//
// Fenced (NewFenced, "lease-fenced") is the smallest fix: a fence column
// without TTL in the same row, bumped in the same Paxos round as the grant (a
// conditional batch on one partition), so every grant carries a token larger
// than all earlier ones, and a resource that refuses older tokens
// (workload.Resource) refuses the stale holder's writes:
//
//	CREATE TABLE leases_fenced (name text PRIMARY KEY, owner text, value text, fence bigint)
//	init     INSERT INTO leases_fenced (name, fence) VALUES (?, 0) IF NOT EXISTS   (first use of a name)
//	acquire  BEGIN BATCH
//	           UPDATE leases_fenced USING TTL ? SET owner = ? WHERE name = ? IF owner = null AND fence = ?
//	           UPDATE leases_fenced SET fence = ? WHERE name = ?
//	         APPLY BATCH
//	renew    UPDATE leases_fenced USING TTL ? SET owner = ? WHERE name = ? IF owner = ? AND fence = ?
//	release  DELETE owner FROM leases_fenced WHERE name = ? IF owner = ? AND fence = ?
//
// A Lease is safe for concurrent use; make one per client.
type Lease struct {
	s      *gocql.Session
	cfg    config
	fenced bool
	table  string // keyspace-qualified, quoted

	mu     sync.Mutex
	fences map[string]int64 // last fence seen per lock name (fenced only)
}

// New returns the lease lock as published ("lease").
func New(s *gocql.Session, opts ...Option) (*Lease, error) { return newLease(s, false, "leases", opts) }

// NewFenced returns the fenced lease lock ("lease-fenced").
func NewFenced(s *gocql.Session, opts ...Option) (*Lease, error) {
	return newLease(s, true, "leases_fenced", opts)
}

func newLease(s *gocql.Session, fenced bool, table string, opts []Option) (*Lease, error) {
	c, qt, err := newConfig(table, opts)
	if err != nil {
		return nil, err
	}
	return &Lease{s: s, cfg: c, fenced: fenced, fences: map[string]int64{}, table: qt}, nil
}

// lwt is workload.LWT with the lease's consistency levels set after it
// (LWT sets QUORUM and SERIAL): the commit's (WithConsistency) and
// LOCAL_SERIAL/LOCAL_QUORUM under recipe.WithDCLocal.
func (l *Lease) lwt(q *gocql.Query) *gocql.Query {
	return workload.LWT(q).Consistency(l.cfg.commit()).SerialConsistency(l.cfg.Serial())
}

// lwtBatch is lwt for the fenced grant's conditional batch.
func (l *Lease) lwtBatch(b *gocql.Batch) *gocql.Batch {
	return workload.LWTBatch(b).Consistency(l.cfg.commit()).SerialConsistency(l.cfg.Serial())
}

// Recipes are the variants of this package, for `lockcheck run --lock NAME`.
var Recipes = []recipe.Entry{
	{Name: "lease", Promise: history.PromiseMutex, New: recipe.Constructor(New), Schema: CreateSchema, DCLocal: true,
		Does:  "seed 000: `INSERT ... IF NOT EXISTS USING TTL`, renew `UPDATE ... IF owner=?`, release `DELETE ... IF owner=?`, holder read at SERIAL with `writetime(owner)`",
		Fails: "a holder that stalls past its TTL keeps writing after another took the lease; node clock skew ends a lease early",
	},
	{Name: "lease-fenced", Promise: history.PromiseFenced, New: recipe.Constructor(NewFenced), Schema: CreateSchema, DCLocal: true,
		Does:  "the same plus a `fence` column without TTL bumped in the same Paxos round (conditional batch); grants carry the token",
		Fails: "holds may overlap; the resource refuses the stale holder",
	},
	{Name: "racy", Promise: history.PromiseMutex, New: recipe.Constructor(NewRacy), Schema: CreateSchema,
		Does:  "the control: read the holder at QUORUM, then write it without LWT",
		Fails: "always (two readers both see it free); a checker that passes it is broken",
	},
	{Name: "election", Promise: history.PromiseMutex, New: recipe.Constructor(NewElectionLock), Schema: CreateSchema,
		Does:  "seed 002's leadership election as a lock (`lease.ElectionLock`): the group is the lock, a claim (`INSERT ... IF NOT EXISTS USING TTL`) a grant; no `Renew`, so a leader keeps its term by claiming again",
		Fails: "a re-claim by the leader returns a fresh-looking token without refreshing the TTL: the row expires under a leader that still writes (leader workload, no fault needed)",
	},
	{Name: "election-refresh", Promise: history.PromiseMutex, New: recipe.Constructor(NewElectionLockRefresh), Schema: CreateSchema,
		Does:  "the same with `WithRefreshOnReclaim(true)`: a re-claim heartbeats",
		Fails: "—",
	},
	// The control of the fenced promise: lease-fenced's grants and tokens,
	// but a resource that accepts any token. A stale holder's write lands;
	// the checker must judge it invalid, as racy proves the mutex checks.
	{Name: "lease-fenced-broken", Promise: history.PromiseFenced, New: recipe.Constructor(NewFenced), Schema: CreateSchema, DCLocal: true,
		Resource: []workload.ResourceOption{workload.AcceptAnyToken()},
		Does:     "the fenced promise's control: `lease-fenced`'s grants and tokens over a resource that accepts any token (`workload.AcceptAnyToken`, the entry's `Resource` option)",
		Fails:    "a stale holder's write lands (under client-pause); a checker that passes it cannot judge fencing",
	},
}

// CreateSchema creates the tables of every variant of this package
// (leases, leases_fenced, leases_racy, leadership_election) if they do not
// exist. ttl is the published tables' default_time_to_live; statements set
// their own TTL anyway.
func CreateSchema(ctx context.Context, s *gocql.Session, keyspace string) error {
	ks, err := recipe.Ident(keyspace)
	if err != nil {
		return err
	}
	stmts := []string{
		`CREATE TABLE IF NOT EXISTS ` + ks + `.leases (name text PRIMARY KEY, owner text, value text) WITH default_time_to_live = 180`,
		// No default TTL: the fence must outlive every lease.
		`CREATE TABLE IF NOT EXISTS ` + ks + `.leases_fenced (name text PRIMARY KEY, owner text, value text, fence bigint)`,
		`CREATE TABLE IF NOT EXISTS ` + ks + `.leases_racy (name text PRIMARY KEY, owner text, value text) WITH default_time_to_live = 180`,
		`CREATE TABLE IF NOT EXISTS ` + ks + `.leadership_election ("group" text PRIMARY KEY, leader_id text)`,
	}
	return recipe.CreateTables(ctx, s, "lease schema", stmts...)
}

// Fenced tells whether grants carry fencing tokens.
func (l *Lease) Fenced() bool { return l.fenced }

// TTL is the lease's time to live as the server applies it.
func (l *Lease) TTL() time.Duration { return time.Duration(ttlSeconds(l.cfg.TTL)) * time.Second }

// Acquire polls with bounded backoff until the lease is granted or ctx ends:
// after a miss it waits with a QUORUM read of the holder until the lease
// looks free, then tries the LWT again.
//
// An attempt with an unknown outcome (CAS timeout or CAS unknown, common
// when rounds contend) does not end the acquire: the next attempt settles
// it, since a lease found held by owner is renewed and granted. If ctx ends
// while an attempt may still be pending, Acquire deletes what it can and
// returns ErrUnknown: a Paxos proposal accepted by a minority can be
// completed by any later round, so nothing it did can prove we hold nothing.
func (l *Lease) Acquire(ctx context.Context, name, owner string) (workload.Grant, error) {
	start := time.Now()
	p := recipe.NewPoller(l.cfg.Options)
	var pending error // the last unknown outcome, while unsettled
	for first := true; ; first = false {
		var err error
		// Poll with a plain read, not a Paxos round: pollers' LWTs on the
		// lock's partition would contend with the holder's release and
		// renewals (CAS contention timeouts, unknown outcomes). The LWT
		// decides; the read only says when to try it.
		// An attempt started on a context already done cannot be answered
		// and would count as unknown: give up definitely instead.
		if ctx.Err() == nil && (first || !l.heldByOther(ctx, name, owner)) {
			var g workload.Grant
			g, _, err = l.TryAcquire(ctx, name, owner, l.cfg.TTL)
			switch {
			case err == nil:
				g.Lease = g.Deadline.Sub(start) // counted from the acquire's invocation
				return g, nil
			case errors.Is(err, workload.ErrUnknown):
				pending = err
			case !errors.Is(err, workload.ErrHeldByOther) && ctx.Err() == nil:
				// A definite failure (unavailable, SERIAL read timeout): poll again.
				l.cfg.Log.Debug("lease acquire attempt failed", "lock", name, "owner", owner, "err", err)
			}
		}
		if werr := p.Wait(ctx); werr != nil {
			if pending != nil {
				l.cleanup(ctx, name, owner)
				return workload.Grant{}, fmt.Errorf("acquire %q: gave up with an attempt unsettled: %w", name, pending)
			}
			return workload.Grant{}, fmt.Errorf("acquire %q: %w (last attempt: %v)", name, workload.ErrNotAcquired, err)
		}
	}
}

// heldByOther reads the holder at QUORUM; a failed read says no (try the LWT).
func (l *Lease) heldByOther(ctx context.Context, name, owner string) bool {
	var h *string
	err := l.s.Query(`SELECT owner FROM `+l.table+` WHERE name = ?`, name).Consistency(l.cfg.Quorum()).ScanContext(ctx, &h)
	return err == nil && h != nil && *h != "" && *h != owner
}

// cleanup deletes a lease whose acquire had an unknown outcome, so that it
// does not block others for a whole TTL. It cannot make the outcome known: a
// delayed Paxos round of the acquire may still apply after it.
func (l *Lease) cleanup(ctx context.Context, name, owner string) {
	cctx, cancel := recipe.Detached(ctx)
	defer cancel()
	if err := l.ReleaseOwner(cctx, name, owner); err != nil && !errors.Is(err, workload.ErrNotHeld) &&
		!errors.Is(err, workload.ErrHeldByOther) {
		l.cfg.Log.Debug("lease cleanup after unknown acquire", "lock", name, "owner", owner, "err", err)
	}
}

// TryAcquire makes one attempt (no polling) with the given TTL. renewed is
// true when owner already held the lease and it was renewed. A lease held by
// another owner returns a *HeldError (wrapping ErrHeldByOther).
func (l *Lease) TryAcquire(ctx context.Context, name, owner string, ttl time.Duration) (g workload.Grant, renewed bool, err error) {
	if owner == "" {
		return g, false, fmt.Errorf("acquire %q: empty owner: %w", name, workload.ErrNotAcquired)
	}
	start := time.Now()
	var cur map[string]any
	if l.fenced {
		g, cur, err = l.tryFenced(ctx, name, owner, ttl)
	} else {
		g, cur, err = l.tryPlain(ctx, name, owner, ttl)
	}
	if err != nil || g.Owner != "" {
		if err == nil {
			v := validity(ttl, l.cfg.margin)
			g.Deadline, g.Lease = start.Add(v), v
		}
		return g, false, err
	}
	holder, _ := cur["owner"].(string)
	if holder != owner {
		return g, false, &HeldError{Lock: name, Holder: holder}
	}
	// Ours already: renew it so that the deadline counts from now.
	fence, _ := cur["fence"].(int64)
	g, err = l.renew(ctx, workload.Grant{Lock: name, Owner: owner, Token: fence}, ttl, nil)
	if errors.Is(err, workload.ErrNotHeld) {
		return workload.Grant{}, false, acquireMiss(name, err)
	}
	return g, err == nil, err
}

// notHeldError is a renew's miss: who held the lease instead ("" = nobody).
type notHeldError struct {
	Lock, Owner, Holder string
}

func (e *notHeldError) Error() string {
	return fmt.Sprintf("renew %q by %q: holder %q: %v", e.Lock, e.Owner, e.Holder, workload.ErrNotHeld)
}

func (e *notHeldError) Unwrap() error { return workload.ErrNotHeld }

// acquireMiss is a re-entrant acquire whose renew missed: the lease expired
// or moved between the two rounds, a definite miss. When another owner took
// it, the miss names that holder (*HeldError), as a first round would have.
func acquireMiss(name string, err error) error {
	var nh *notHeldError
	if errors.As(err, &nh) && nh.Holder != "" && nh.Holder != nh.Owner {
		return &HeldError{Lock: name, Holder: nh.Holder}
	}
	return fmt.Errorf("acquire %q: %w (%v)", name, workload.ErrNotAcquired, err)
}

// tryPlain returns a grant with Owner set when applied, else the current row.
func (l *Lease) tryPlain(ctx context.Context, name, owner string, ttl time.Duration) (workload.Grant, map[string]any, error) {
	cur := map[string]any{}
	applied, err := l.lwt(l.s.Query(`INSERT INTO `+l.table+` (name, owner) VALUES (?, ?) IF NOT EXISTS USING TTL ?`,
		name, owner, ttlSeconds(ttl))).MapScanCASContext(ctx, cur)
	if err != nil {
		return workload.Grant{}, nil, fmt.Errorf("acquire %q: %w", name, workload.ClassifyLWT(err))
	}
	if applied {
		return workload.Grant{Lock: name, Owner: owner}, nil, nil
	}
	return workload.Grant{}, cur, nil
}

func (l *Lease) tryFenced(ctx context.Context, name, owner string, ttl time.Duration) (workload.Grant, map[string]any, error) {
	l.mu.Lock()
	fence, known := l.fences[name]
	l.mu.Unlock()
	cur := map[string]any{}
	if !known {
		applied, err := l.lwt(l.s.Query(`INSERT INTO `+l.table+` (name, fence) VALUES (?, 0) IF NOT EXISTS`, name)).MapScanCASContext(ctx, cur)
		if err != nil {
			// Creating the row grants nothing, so even an unknown outcome
			// of it leaves the lock certainly not acquired.
			return workload.Grant{}, nil, fmt.Errorf("acquire %q: init fence: %w: %w", name, workload.ErrNotAcquired, err)
		}
		if !applied {
			if o, _ := cur["owner"].(string); o != "" {
				return workload.Grant{}, cur, nil
			}
			fence, _ = cur["fence"].(int64)
		}
	}
	// A few rounds at most: a mismatch on the fence alone teaches us the
	// current fence, so the next round usually applies.
	for range 3 {
		clear(cur)
		b := l.s.Batch(gocql.LoggedBatch).
			Query(`UPDATE `+l.table+` USING TTL ? SET owner = ? WHERE name = ? IF owner = null AND fence = ?`,
				ttlSeconds(ttl), owner, name, fence).
			Query(`UPDATE `+l.table+` SET fence = ? WHERE name = ?`, fence+1, name)
		applied, iter, err := l.lwtBatch(b).MapExecCASContext(ctx, cur)
		if iter != nil {
			iter.Close()
		}
		if err != nil {
			return workload.Grant{}, nil, fmt.Errorf("acquire %q: %w", name, workload.ClassifyLWT(err))
		}
		if applied {
			l.learn(name, fence+1)
			return workload.Grant{Lock: name, Owner: owner, Token: fence + 1}, nil, nil
		}
		f, _ := cur["fence"].(int64)
		l.learn(name, f)
		if o, _ := cur["owner"].(string); o != "" {
			return workload.Grant{}, cur, nil
		}
		fence = f
	}
	return workload.Grant{}, nil, fmt.Errorf("acquire %q: fence kept moving: %w", name, workload.ErrNotAcquired)
}

// learn records the fence a Paxos round reported: authoritative, so it
// replaces whatever was cached (even a larger value, after a truncation).
func (l *Lease) learn(name string, fence int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fences[name] = fence
}

// Renew extends a held lease by the configured TTL; the returned grant has
// the new deadline and Lease counted from the renew's invocation. A lease no
// longer held returns ErrNotHeld.
func (l *Lease) Renew(ctx context.Context, g workload.Grant) (workload.Grant, error) {
	return l.renew(ctx, g, l.cfg.TTL, nil)
}

// SetValue stores value (e.g. a leader's address) with the lease, renewing it.
func (l *Lease) SetValue(ctx context.Context, g workload.Grant, value string) (workload.Grant, error) {
	return l.renew(ctx, g, l.cfg.TTL, &value)
}

func (l *Lease) renew(ctx context.Context, g workload.Grant, ttl time.Duration, value *string) (workload.Grant, error) {
	start := time.Now()
	set, args := `SET owner = ?`, []any{ttlSeconds(ttl), g.Owner}
	if value != nil {
		set, args = `SET owner = ?, value = ?`, append(args, *value)
	}
	cond := ` WHERE name = ? IF owner = ?`
	args = append(args, g.Lock, g.Owner)
	if l.fenced {
		cond += ` AND fence = ?`
		args = append(args, g.Token)
	}
	cur := map[string]any{}
	applied, err := l.lwt(l.s.Query(`UPDATE `+l.table+` USING TTL ? `+set+cond, args...)).MapScanCASContext(ctx, cur)
	if err != nil {
		return g, fmt.Errorf("renew %q: %w", g.Lock, workload.ClassifyLWT(err))
	}
	if !applied {
		h, _ := cur["owner"].(string)
		return g, &notHeldError{Lock: g.Lock, Owner: g.Owner, Holder: h}
	}
	v := validity(ttl, l.cfg.margin)
	g.Deadline, g.Lease = start.Add(v), v
	return g, nil
}

// Release gives the lease up; a lease not held by g (expired, taken by
// another, or fenced with another token) returns ErrNotHeld.
func (l *Lease) Release(ctx context.Context, g workload.Grant) error {
	q := `DELETE FROM ` + l.table + ` WHERE name = ? IF owner = ?`
	args := []any{g.Lock, g.Owner}
	if l.fenced {
		// Keep the fence: only the owner goes.
		q = `DELETE owner FROM ` + l.table + ` WHERE name = ? IF owner = ? AND fence = ?`
		args = append(args, g.Token)
	}
	cur := map[string]any{}
	applied, err := l.lwt(l.s.Query(q, args...)).MapScanCASContext(ctx, cur)
	if err != nil {
		return fmt.Errorf("release %q: %w", g.Lock, workload.ClassifyLWT(err))
	}
	if !applied {
		return fmt.Errorf("release %q by %q: holder %v: %w", g.Lock, g.Owner, cur["owner"], workload.ErrNotHeld)
	}
	return nil
}

// ReleaseOwner releases whatever grant owner holds on name (the REST
// service's DELETE, which has no token). It returns ErrNotHeld when nobody
// holds the lease and a *HeldError when another owner does.
func (l *Lease) ReleaseOwner(ctx context.Context, name, owner string) error {
	q := `DELETE FROM ` + l.table + ` WHERE name = ? IF owner = ?`
	if l.fenced {
		q = `DELETE owner FROM ` + l.table + ` WHERE name = ? IF owner = ?`
	}
	cur := map[string]any{}
	applied, err := l.lwt(l.s.Query(q, name, owner)).MapScanCASContext(ctx, cur)
	if err != nil {
		return fmt.Errorf("release %q: %w", name, workload.ClassifyLWT(err))
	}
	if applied {
		return nil
	}
	if h, _ := cur["owner"].(string); h != "" {
		return &HeldError{Lock: name, Holder: h}
	}
	return fmt.Errorf("release %q: %w", name, workload.ErrNotHeld)
}

// Holder is a lease as a SERIAL read sees it.
type Holder struct {
	Lock, Owner, Value string // Owner "" = free
	// WriteTime is writetime(owner): the Paxos ballot of the last grant or
	// renewal, on the coordinator's clock.
	WriteTime time.Time
	// TTL is ttl(owner): the seconds left as the replica counts them.
	TTL   time.Duration
	Fence int64 // fenced only
}

// NextPoll is when the lease expires by the published rule (writetime + TTL),
// the time a waiting client should poll again; zero when free.
func (h Holder) NextPoll(ttl time.Duration) time.Time {
	if h.Owner == "" {
		return time.Time{}
	}
	return h.WriteTime.Add(time.Duration(ttlSeconds(ttl)) * time.Second)
}

// Holder reads the lease at SERIAL.
func (l *Lease) Holder(ctx context.Context, name string) (Holder, error) {
	cols := `owner, value, writetime(owner), ttl(owner)`
	if l.fenced {
		cols += `, fence`
	}
	var (
		owner, value *string
		wt           *int64
		ttl          *int
		fence        *int64
	)
	dest := []any{&owner, &value, &wt, &ttl}
	if l.fenced {
		dest = append(dest, &fence)
	}
	err := l.s.Query(`SELECT `+cols+` FROM `+l.table+` WHERE name = ?`, name).
		Consistency(l.cfg.Serial()).ScanContext(ctx, dest...)
	h := Holder{Lock: name}
	if errors.Is(err, gocql.ErrNotFound) {
		return h, nil
	}
	if err != nil {
		return h, fmt.Errorf("read %q: %w", name, workload.ClassifyRead(err))
	}
	if owner != nil {
		h.Owner = *owner
	}
	if value != nil {
		h.Value = *value
	}
	if wt != nil {
		h.WriteTime = time.UnixMicro(*wt)
	}
	if ttl != nil {
		h.TTL = time.Duration(*ttl) * time.Second
	}
	if fence != nil {
		h.Fence = *fence
	}
	return h, nil
}
