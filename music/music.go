package music

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/recipe"
	"github.com/lockcheck/lockcheck/workload"
)

// Ref is a lock reference: a place in a key's queue. The queue is ordered
// by UUID's time (music) or by Seq (music-seq).
type Ref struct {
	Key  string
	UUID gocql.UUID // music
	Seq  int64      // music-seq: also the fencing token
	// ID (music-seq) tells this attempt's row from another client's that
	// got the same number after this attempt's outcome was unknown.
	ID string
}

func (r Ref) String() string {
	if r.Seq > 0 {
		return fmt.Sprintf("%s#%d", r.Key, r.Seq)
	}
	return r.Key + "#" + r.UUID.String()
}

type config struct {
	recipe.Options
	consistency gocql.Consistency
	defaultCL   bool
}

// Option configures a Music lock: the shared options of package recipe
// (WithKeyspace, WithClock for the client clock time-UUID refs are made
// from, WithLogger, WithPoll) or WithConsistency.
type Option = recipe.Option

// WithConsistency sets the consistency of acquireLock's read of the queue's
// top. Default ONE for music (the source calls a non-serial read enough and
// names none), QUORUM for music-seq.
func WithConsistency(cl gocql.Consistency) Option {
	return recipe.Own(func(c *config) { c.consistency, c.defaultCL = cl, false })
}

// Music is MUSIC's locking service on Cassandra LWTs (seed 001):
//
//	CREATE TABLE music_locks (key text, ref timeuuid, PRIMARY KEY ((key), ref))   -- ascending
//	createLockRef  INSERT INTO music_locks (key, ref) VALUES (?, <time UUID from the client clock>) IF NOT EXISTS
//	acquireLock    SELECT ref FROM music_locks WHERE key = ? LIMIT 1    (top of queue == my ref?)
//	releaseLock    DELETE FROM music_locks WHERE key = ? AND ref = ? IF EXISTS
//	criticalGet/Put: acquireLock, then read/write music_values at QUORUM
//
// As published the queue's order is the clients' clocks: a client whose
// clock is behind makes a ref that sorts before the holder's, finds itself on
// top and enters while the holder is inside. A stale read of the top (the
// default consistency ONE) is a second way in.
//
// music-seq (NewSeq) is the fix of MUSIC's later versions: refs are numbers
// from a per-key guard bumped by LWT in the same Paxos round that inserts the
// ref, so the order is the order of the Paxos rounds, not of clocks, and the
// ref doubles as a fencing token; the top is read at QUORUM.
//
//	CREATE TABLE music_seq (key text, ref bigint, guard bigint, owner text, PRIMARY KEY ((key), ref))
//	init           INSERT INTO music_seq (key, ref, guard) VALUES (?, 0, 0) IF NOT EXISTS  (the guard row)
//	createLockRef  BEGIN BATCH
//	                 UPDATE music_seq SET guard = g+1 WHERE key = ? AND ref = 0 IF guard = g
//	                 INSERT INTO music_seq (key, ref, owner) VALUES (?, g+1, <attempt id>)
//	               APPLY BATCH
//	acquireLock    SELECT ref FROM music_seq WHERE key = ? AND ref > 0 LIMIT 1
//	releaseLock    DELETE FROM music_seq WHERE key = ? AND ref = ? IF owner = <attempt id>
//
// A Music is safe for concurrent use; make one per client. It remembers the
// ref behind each grant it made, for Release.
type Music struct {
	s      *gocql.Session
	cfg    config
	seq    bool
	locks  string // qualified lock table
	values string

	mu        sync.Mutex
	refs      map[[2]string]Ref // (lock, owner) -> ref of the grant
	guards    map[string]int64  // last guard seen per key (seq)
	leftovers []Ref             // refs that may remain after an unknown delete
}

// New returns the lock as published ("music").
func New(s *gocql.Session, opts ...Option) (*Music, error) { return newMusic(s, false, opts) }

// NewSeq returns the fixed lock ("music-seq").
func NewSeq(s *gocql.Session, opts ...Option) (*Music, error) { return newMusic(s, true, opts) }

func newMusic(s *gocql.Session, seq bool, opts []Option) (*Music, error) {
	c := config{Options: recipe.Defaults(), consistency: gocql.One, defaultCL: true}
	if err := recipe.Configure(&c.Options, &c, opts); err != nil {
		return nil, fmt.Errorf("music: %w", err)
	}
	if seq && c.defaultCL {
		c.consistency = gocql.Quorum
	}
	locks, values := "music_locks", "music_values"
	if seq {
		locks = "music_seq"
	}
	m := &Music{s: s, cfg: c, seq: seq, refs: map[[2]string]Ref{}, guards: map[string]int64{}}
	var err error
	if m.locks, err = recipe.Table(c.Keyspace, locks); err != nil {
		return nil, fmt.Errorf("music: %w", err)
	}
	if m.values, err = recipe.Table(c.Keyspace, values); err != nil {
		return nil, fmt.Errorf("music: %w", err)
	}
	return m, nil
}

// Recipes are the variants of this package, for `lockcheck run --lock NAME`.
var Recipes = []recipe.Entry{
	{Name: "music", Promise: history.PromiseMutex, New: recipe.Constructor(New), Schema: CreateSchema,
		Does:  "seed 001: a queue `(key, ref timeuuid)` per key, ref from the client clock inserted `IF NOT EXISTS`, acquire = \"is the top row mine?\" read at ONE by default (the source asks only for a non-serial read), release `DELETE ... IF EXISTS`; `CriticalGet`/`CriticalPut`",
		Fails: "a client whose clock is behind sorts first and enters while the holder is inside; a stale top at ONE",
	},
	{Name: "music-seq", Promise: history.PromiseFenced, New: recipe.Constructor(NewSeq), Schema: CreateSchema,
		Does:  "refs numbered from a per-key guard row bumped by LWT in the same conditional batch that inserts the ref; top read at QUORUM; the ref is the token",
		Fails: "— (order no longer depends on clocks)",
	},
}

// CreateSchema creates the tables of both variants and the values table.
func CreateSchema(ctx context.Context, s *gocql.Session, keyspace string) error {
	ks, err := recipe.Ident(keyspace)
	if err != nil {
		return fmt.Errorf("music schema: %w", err)
	}
	return recipe.CreateTables(ctx, s, "music schema",
		`CREATE TABLE IF NOT EXISTS `+ks+`.music_locks (key text, ref timeuuid, PRIMARY KEY ((key), ref)) WITH CLUSTERING ORDER BY (ref ASC)`,
		`CREATE TABLE IF NOT EXISTS `+ks+`.music_seq (key text, ref bigint, guard bigint, owner text, PRIMARY KEY ((key), ref)) WITH CLUSTERING ORDER BY (ref ASC)`,
		`CREATE TABLE IF NOT EXISTS `+ks+`.music_values (key text PRIMARY KEY, value text)`,
	)
}

// CreateLockRef appends a new ref to key's queue. An error wrapping
// ErrUnknown means the ref may exist; the returned Ref is then the one that
// was attempted.
func (m *Music) CreateLockRef(ctx context.Context, key string) (Ref, error) {
	if m.seq {
		return m.createSeq(ctx, key)
	}
	ref := Ref{Key: key, UUID: gocql.UUIDFromTime(m.cfg.Clock.Now())}
	applied, err := workload.LWT(m.s.Query(`INSERT INTO `+m.locks+` (key, ref) VALUES (?, ?) IF NOT EXISTS`, key, ref.UUID)).
		MapScanCASContext(ctx, map[string]any{})
	if err != nil {
		return ref, fmt.Errorf("createLockRef %q: %w", key, workload.ClassifyLWT(err))
	}
	if !applied { // a time UUID collision: certainly not ours
		return Ref{}, fmt.Errorf("createLockRef %q: ref %v exists: %w", key, ref.UUID, workload.ErrNotAcquired)
	}
	return ref, nil
}

func (m *Music) createSeq(ctx context.Context, key string) (Ref, error) {
	m.mu.Lock()
	g, known := m.guards[key]
	m.mu.Unlock()
	cur := map[string]any{}
	if !known {
		applied, err := workload.LWT(m.s.Query(`INSERT INTO `+m.locks+` (key, ref, guard) VALUES (?, 0, 0) IF NOT EXISTS`, key)).
			MapScanCASContext(ctx, cur)
		if err != nil {
			// The guard row grants nothing: even unknown, no ref of ours exists.
			return Ref{}, fmt.Errorf("createLockRef %q: guard: %w: %w", key, workload.ErrNotAcquired, err)
		}
		if !applied {
			g, _ = cur["guard"].(int64)
		}
	}
	for range 8 {
		clear(cur)
		ref := Ref{Key: key, Seq: g + 1, ID: attemptID()}
		b := m.s.Batch(gocql.LoggedBatch).
			Query(`UPDATE `+m.locks+` SET guard = ? WHERE key = ? AND ref = 0 IF guard = ?`, g+1, key, g).
			Query(`INSERT INTO `+m.locks+` (key, ref, owner) VALUES (?, ?, ?)`, key, g+1, ref.ID)
		applied, iter, err := workload.LWTBatch(b).MapExecCASContext(ctx, cur)
		if iter != nil {
			iter.Close()
		}
		if err != nil {
			return ref, fmt.Errorf("createLockRef %q: %w", key, workload.ClassifyLWT(err))
		}
		if applied {
			m.learn(key, g+1)
			return ref, nil
		}
		g, _ = cur["guard"].(int64)
		m.learn(key, g)
	}
	return Ref{}, fmt.Errorf("createLockRef %q: guard kept moving: %w", key, workload.ErrNotAcquired)
}

func (m *Music) learn(key string, g int64) {
	m.mu.Lock()
	m.guards[key] = g
	m.mu.Unlock()
}

// AcquireLock tells whether ref is on top of its key's queue, reading the top
// at the configured consistency.
func (m *Music) AcquireLock(ctx context.Context, ref Ref) (bool, error) {
	var err error
	if m.seq {
		var top int64
		err = m.s.Query(`SELECT ref FROM `+m.locks+` WHERE key = ? AND ref > 0 LIMIT 1`, ref.Key).
			Consistency(m.cfg.consistency).ScanContext(ctx, &top)
		if err == nil {
			return top == ref.Seq, nil
		}
	} else {
		var top gocql.UUID
		err = m.s.Query(`SELECT ref FROM `+m.locks+` WHERE key = ? LIMIT 1`, ref.Key).
			Consistency(m.cfg.consistency).ScanContext(ctx, &top)
		if err == nil {
			return top == ref.UUID, nil
		}
	}
	if errors.Is(err, gocql.ErrNotFound) {
		return false, nil
	}
	return false, fmt.Errorf("acquireLock %v: %w", ref, workload.ClassifyRead(err))
}

// ReleaseLock deletes ref from its queue; ErrNotHeld when it is not there.
func (m *Music) ReleaseLock(ctx context.Context, ref Ref) error {
	q := m.s.Query(`DELETE FROM `+m.locks+` WHERE key = ? AND ref = ? IF EXISTS`, ref.Key, ref.UUID)
	if m.seq {
		q = m.s.Query(`DELETE FROM `+m.locks+` WHERE key = ? AND ref = ? IF owner = ?`, ref.Key, ref.Seq, ref.ID)
	}
	applied, err := workload.LWT(q).MapScanCASContext(ctx, map[string]any{})
	if err != nil {
		return fmt.Errorf("releaseLock %v: %w", ref, workload.ClassifyLWT(err))
	}
	if !applied {
		return fmt.Errorf("releaseLock %v: %w", ref, workload.ErrNotHeld)
	}
	return nil
}

// CriticalGet reads key's value if ref holds the lock (ErrNotHeld otherwise).
func (m *Music) CriticalGet(ctx context.Context, ref Ref) (string, error) {
	if ok, err := m.AcquireLock(ctx, ref); err != nil || !ok {
		return "", notHeld("criticalGet", ref, err)
	}
	var v *string
	err := m.s.Query(`SELECT value FROM `+m.values+` WHERE key = ?`, ref.Key).Consistency(gocql.Quorum).ScanContext(ctx, &v)
	if errors.Is(err, gocql.ErrNotFound) || (err == nil && v == nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("criticalGet %v: %w", ref, workload.ClassifyRead(err))
	}
	return *v, nil
}

// CriticalPut writes key's value if ref holds the lock (ErrNotHeld otherwise).
// Like the source, the check and the write are two requests.
func (m *Music) CriticalPut(ctx context.Context, ref Ref, value string) error {
	if ok, err := m.AcquireLock(ctx, ref); err != nil || !ok {
		return notHeld("criticalPut", ref, err)
	}
	err := m.s.Query(`UPDATE `+m.values+` SET value = ? WHERE key = ?`, value, ref.Key).Consistency(gocql.Quorum).ExecContext(ctx)
	if err != nil {
		return fmt.Errorf("criticalPut %v: %w", ref, workload.Classify(err))
	}
	return nil
}

func notHeld(op string, ref Ref, err error) error {
	if err != nil {
		return fmt.Errorf("%s %v: %w", op, ref, err)
	}
	return fmt.Errorf("%s %v: not on top: %w", op, ref, workload.ErrNotHeld)
}

// Acquire is createLockRef, then acquireLock polled with bounded backoff
// until the ref is on top (Listing 1 of the source). The lock name is the
// key. A createLockRef with an unknown outcome (common when Paxos rounds on
// the key contend) is retried with a new ref; the old one may appear later,
// so it is deleted once the new ref exists (a "ghost" ahead of us would
// block the queue). When ctx ends first, every ref of this acquire is
// deleted: ErrNotAcquired if that certainly worked, ErrUnknown if a ref may
// remain (it would block the queue, and this client could be taken for its
// holder).
func (m *Music) Acquire(ctx context.Context, name, owner string) (workload.Grant, error) {
	var (
		ref    Ref
		err    error
		ghosts []Ref
	)
	m.dropLeftovers(ctx)
	wait := recipe.NewPoller(m.cfg.Options).Wait
	for {
		ref, err = m.CreateLockRef(ctx, name)
		if err == nil {
			break
		}
		if errors.Is(err, workload.ErrUnknown) && ref != (Ref{}) {
			ghosts = append(ghosts, ref)
		}
		if werr := wait(ctx); werr != nil {
			return workload.Grant{}, m.giveUp(ctx, name, ghosts, err)
		}
	}
	ghosts = m.dropAll(ctx, ghosts)
	wait = recipe.NewPoller(m.cfg.Options).Wait
	for {
		top, err := m.AcquireLock(ctx, ref)
		if err == nil && top {
			m.mu.Lock()
			m.refs[[2]string{name, owner}] = ref
			m.leftovers = append(m.leftovers, ghosts...) // behind us now; deleted later
			m.mu.Unlock()
			return workload.Grant{Lock: name, Owner: owner, Token: ref.Seq}, nil
		}
		if werr := wait(ctx); werr != nil {
			return workload.Grant{}, m.giveUp(ctx, name, append(ghosts, ref), err)
		}
	}
}

// giveUp deletes the refs of an acquire that ends without the lock.
func (m *Music) giveUp(ctx context.Context, name string, refs []Ref, last error) error {
	if left := m.dropAll(ctx, refs); len(left) > 0 {
		m.mu.Lock()
		m.leftovers = append(m.leftovers, left...)
		m.mu.Unlock()
		return fmt.Errorf("acquire %q: gave up, %d ref(s) may remain (last: %v): %w", name, len(left), last, workload.ErrUnknown)
	}
	return fmt.Errorf("acquire %q: %w (last: %v)", name, workload.ErrNotAcquired, last)
}

// dropAll deletes refs and returns those that may remain.
func (m *Music) dropAll(ctx context.Context, refs []Ref) []Ref {
	var left []Ref
	for _, r := range refs {
		if m.drop(ctx, r) != nil {
			left = append(left, r)
		}
	}
	return left
}

// drop deletes a ref after the caller gave up; nil means it is certainly gone.
func (m *Music) drop(ctx context.Context, ref Ref) error {
	cctx, cancel := recipe.Detached(ctx)
	defer cancel()
	err := m.ReleaseLock(cctx, ref)
	if errors.Is(err, workload.ErrNotHeld) {
		return nil
	}
	if err != nil {
		m.cfg.Log.Warn("music: could not delete an abandoned ref", "ref", ref.String(), "err", err)
	}
	return err
}

// Release releases the grant's ref; ErrNotHeld when this instance holds no
// ref for (lock, owner) or the ref is gone.
func (m *Music) Release(ctx context.Context, g workload.Grant) error {
	k := [2]string{g.Lock, g.Owner}
	m.mu.Lock()
	ref, ok := m.refs[k]
	m.mu.Unlock()
	if !ok {
		return fmt.Errorf("release %q by %q: %w", g.Lock, g.Owner, workload.ErrNotHeld)
	}
	err := m.ReleaseLock(ctx, ref)
	// An unknown delete is tried again: the row is ours alone, so "not
	// there" after an unknown outcome means the first delete applied.
	for try := 0; try < 3 && errors.Is(err, workload.ErrUnknown) && ctx.Err() == nil; try++ {
		if err = m.ReleaseLock(ctx, ref); errors.Is(err, workload.ErrNotHeld) {
			err = nil
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case err == nil || errors.Is(err, workload.ErrNotHeld):
		delete(m.refs, k)
	case errors.Is(err, workload.ErrUnknown):
		// Left in the queue it would block every other client for good
		// (refs never expire): the next Acquire deletes it.
		m.leftovers = append(m.leftovers, ref)
	}
	return err
}

// dropLeftovers deletes refs that earlier calls may have left in queues.
func (m *Music) dropLeftovers(ctx context.Context) {
	m.mu.Lock()
	refs := m.leftovers
	m.leftovers = nil
	m.mu.Unlock()
	if len(refs) == 0 {
		return
	}
	left := m.dropAll(ctx, refs)
	m.mu.Lock()
	m.leftovers = append(m.leftovers, left...)
	for k, r := range m.refs {
		if !slices.Contains(left, r) && slices.Contains(refs, r) {
			delete(m.refs, k)
		}
	}
	m.mu.Unlock()
}

// Ref returns the ref behind a grant this instance made.
func (m *Music) Ref(g workload.Grant) (Ref, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.refs[[2]string{g.Lock, g.Owner}]
	return r, ok
}

func attemptID() string {
	u, err := gocql.RandomUUID()
	if err != nil {
		return gocql.TimeUUID().String()
	}
	return u.String()
}
