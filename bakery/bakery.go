package bakery

import (
	"cmp"
	"context"
	"fmt"
	"sync"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/recipe"
	"github.com/lockcheck/lockcheck/workload"
)

// Ticket is a client's place in the bakery: Lamport's (number, id).
type Ticket struct {
	Number int64
	ID     string
}

// Before is Lamport's order: (a.Number, a.ID) < (b.Number, b.ID). A zero
// number is no ticket and is never before anything.
func (a Ticket) Before(b Ticket) bool {
	if a.Number == 0 {
		return false
	}
	if b.Number == 0 {
		return true
	}
	return cmp.Or(cmp.Compare(a.Number, b.Number), cmp.Compare(a.ID, b.ID)) < 0
}

// NextNumber is the doorway's choice: 1 + the largest number taken.
func NextNumber(numbers map[string]int64) int64 {
	var m int64
	for _, n := range numbers {
		m = max(m, n)
	}
	return m + 1
}

// waitState is where the wait phase is for one other client j (Lamport's L2
// and L3).
type waitState int

const (
	waitChoosing waitState = iota // L2: wait while choosing[j]
	waitNumber                    // L3: wait while (number[j], j) < (number[i], i)
	passed
)

// waiter runs the wait phase over snapshots of the two tables. It is pure:
// the caller reads Choosing, then Numbers, and calls step with both.
type waiter struct {
	me     Ticket
	others map[string]waitState
}

// newWaiter takes the participants from the first snapshots: a client in
// neither table then will see my number when it draws its own and take a
// larger one, so it cannot enter before me.
func newWaiter(me Ticket, choosing map[string]bool, numbers map[string]int64) *waiter {
	w := &waiter{me: me, others: map[string]waitState{}}
	for id := range choosing {
		if id != me.ID {
			w.others[id] = waitChoosing
		}
	}
	for id := range numbers {
		if id != me.ID {
			w.others[id] = waitChoosing
		}
	}
	return w
}

// step advances every client it can given Choosing read before Numbers, and
// tells whether all have passed. For each j: once choosing[j] is seen false
// (or absent) it moves to L3 and stays there (Lamport does not look at
// choosing[j] again); it passes L3 when its ticket is not before mine.
func (w *waiter) step(choosing map[string]bool, numbers map[string]int64) bool {
	done := true
	for id, st := range w.others {
		if st == waitChoosing && !choosing[id] {
			st = waitNumber
		}
		if st == waitNumber && !(Ticket{numbers[id], id}).Before(w.me) {
			st = passed
		}
		w.others[id] = st
		if st != passed {
			done = false
		}
	}
	return done
}

type config struct {
	recipe.Options
	consistency gocql.Consistency
}

// Option configures a Bakery: the shared options of package recipe
// (WithKeyspace, WithClock whose readings stamp every write as CQL client
// timestamps, WithLogger, WithPoll) or WithConsistency.
type Option = recipe.Option

// WithConsistency sets the consistency of every read and write.
func WithConsistency(cl gocql.Consistency) Option {
	return recipe.Own(func(c *config) { c.consistency = cl })
}

// Bakery is Lamport's bakery algorithm over two tables (seed 003), one cell
// per client and lock:
//
//	CREATE TABLE bakery_choosing (lock text, client text, choosing boolean, PRIMARY KEY ((lock), client))
//	CREATE TABLE bakery_numbers  (lock text, client text, number bigint,    PRIMARY KEY ((lock), client))
//
// Acquire: wait until nobody is choosing (the source's first step); choosing
// = true; number = 1 + max(numbers); choosing = false; then for every other
// client j wait while choosing[j], then while (number[j], j) < (number, me).
// Release deletes both cells. Every write carries a client timestamp from
// the injectable clock; no LWT anywhere.
//
// The bakery needs only safe single-writer registers, which QUORUM reads and
// writes give while clocks move forward. "bakery-one" runs at ONE, as the
// published code did: stale reads break it. A client clock stepping back
// breaks both: its new number is shadowed by its own older tombstone.
type Bakery struct {
	s                 *gocql.Session
	cfg               config
	choosing, numbers string

	mu        sync.Mutex
	tickets   map[[2]string]Ticket // (lock, owner) -> ticket of the grant
	leftovers [][2]string          // (lock, owner) whose cells may remain
}

// New returns a bakery lock at QUORUM ("bakery"); WithConsistency(gocql.One)
// gives "bakery-one".
func New(s *gocql.Session, opts ...Option) (*Bakery, error) {
	c := config{Options: recipe.Defaults(), consistency: gocql.Quorum}
	if err := recipe.Configure(&c.Options, &c, opts); err != nil {
		return nil, fmt.Errorf("bakery: %w", err)
	}
	b := &Bakery{s: s, cfg: c, tickets: map[[2]string]Ticket{}}
	var err error
	if b.choosing, err = recipe.Table(c.Keyspace, "bakery_choosing"); err != nil {
		return nil, fmt.Errorf("bakery: %w", err)
	}
	if b.numbers, err = recipe.Table(c.Keyspace, "bakery_numbers"); err != nil {
		return nil, fmt.Errorf("bakery: %w", err)
	}
	return b, nil
}

// NewOne is the bakery at consistency ONE, as the published code ran it
// ("bakery-one"): stale reads break it.
func NewOne(s *gocql.Session, opts ...Option) (*Bakery, error) {
	return New(s, append([]Option{WithConsistency(gocql.One)}, opts...)...)
}

// Recipes are the variants of this package, for `lockcheck run --lock NAME`.
var Recipes = []recipe.Entry{
	{Name: "bakery", Promise: history.PromiseMutex, New: recipe.Constructor(New), Schema: CreateSchema,
		Does:  "seed 003: Lamport's bakery over `bakery_choosing` and `bakery_numbers`, one cell per client, QUORUM, client timestamps from the injectable clock",
		Fails: "a client clock stepping back: its new number is shadowed by its own older tombstone",
	},
	{Name: "bakery-one", Promise: history.PromiseMutex, New: recipe.Constructor(NewOne), Schema: CreateSchema,
		Does:  "the same at ONE, as the published code ran",
		Fails: "stale reads of Choosing/Numbers",
	},
}

// CreateSchema creates the two tables.
func CreateSchema(ctx context.Context, s *gocql.Session, keyspace string) error {
	ks, err := recipe.Ident(keyspace)
	if err != nil {
		return fmt.Errorf("bakery schema: %w", err)
	}
	return recipe.CreateTables(ctx, s, "bakery schema",
		`CREATE TABLE IF NOT EXISTS `+ks+`.bakery_choosing (lock text, client text, choosing boolean, PRIMARY KEY ((lock), client))`,
		`CREATE TABLE IF NOT EXISTS `+ks+`.bakery_numbers (lock text, client text, number bigint, PRIMARY KEY ((lock), client))`,
	)
}

func (b *Bakery) exec(ctx context.Context, stmt string, args ...any) error {
	err := b.s.Query(stmt, args...).Consistency(b.cfg.consistency).
		WithTimestamp(b.cfg.Clock.Now().UnixMicro()).ExecContext(ctx)
	return workload.Classify(err)
}

func (b *Bakery) readChoosing(ctx context.Context, lock string) (map[string]bool, error) {
	it := b.s.Query(`SELECT client, choosing FROM `+b.choosing+` WHERE lock = ?`, lock).
		Consistency(b.cfg.consistency).IterContext(ctx)
	out := map[string]bool{}
	var (
		id string
		c  bool
	)
	for it.Scan(&id, &c) {
		out[id] = c
	}
	if err := it.Close(); err != nil {
		return nil, workload.ClassifyRead(err)
	}
	return out, nil
}

func (b *Bakery) readNumbers(ctx context.Context, lock string) (map[string]int64, error) {
	it := b.s.Query(`SELECT client, number FROM `+b.numbers+` WHERE lock = ?`, lock).
		Consistency(b.cfg.consistency).IterContext(ctx)
	out := map[string]int64{}
	var (
		id string
		n  int64
	)
	for it.Scan(&id, &n) {
		if n != 0 {
			out[id] = n
		}
	}
	if err := it.Close(); err != nil {
		return nil, workload.ClassifyRead(err)
	}
	return out, nil
}

// Acquire takes a ticket and waits for its turn, polling with bounded
// backoff; a doorway whose writes fail is undone and tried again. The lock name is the row key; owner is the client id. When ctx
// ends first, the client's cells are deleted: ErrNotAcquired if that
// certainly worked, ErrUnknown if they may remain.
func (b *Bakery) Acquire(ctx context.Context, name, owner string) (workload.Grant, error) {
	if owner == "" {
		return workload.Grant{}, fmt.Errorf("acquire %q: empty owner: %w", name, workload.ErrNotAcquired)
	}
	b.clearLeftovers(ctx)
	var (
		me  Ticket
		err error
	)
	retry := recipe.NewPoller(b.cfg.Options).Wait
	for {
		if me, err = b.doorway(ctx, name, owner); err == nil {
			err = b.wait(ctx, name, me) // fails only when ctx ends
		}
		if err == nil || ctx.Err() != nil {
			break
		}
		// A write of the doorway failed or timed out: take the ticket
		// back and start over, rather than block the others with it.
		b.cfg.Log.Debug("bakery: doorway failed, retrying", "lock", name, "client", owner, "err", err)
		if cerr := b.clear(ctx, name, owner); cerr == nil {
			if werr := retry(ctx); werr == nil {
				continue
			}
		}
		break
	}
	if err != nil {
		if cerr := b.clear(ctx, name, owner); cerr != nil {
			b.mu.Lock()
			b.leftovers = append(b.leftovers, [2]string{name, owner})
			b.mu.Unlock()
			return workload.Grant{}, fmt.Errorf("acquire %q: %v; my ticket may remain (%v): %w", name, err, cerr, workload.ErrUnknown)
		}
		// Whatever failed, no grant was made and the cells are gone: a
		// definite failure even if a write above had an unknown outcome.
		return workload.Grant{}, fmt.Errorf("acquire %q: %w: %v", name, workload.ErrNotAcquired, err)
	}
	b.mu.Lock()
	b.tickets[[2]string{name, owner}] = me
	b.mu.Unlock()
	return workload.Grant{Lock: name, Owner: owner}, nil
}

// doorway: wait until nobody is choosing, choose, draw 1 + max, stop choosing.
func (b *Bakery) doorway(ctx context.Context, name, owner string) (Ticket, error) {
	wait := recipe.NewPoller(b.cfg.Options).Wait
	for {
		ch, err := b.readChoosing(ctx, name)
		if err == nil && !anyTrue(ch, owner) {
			break
		}
		if werr := wait(ctx); werr != nil {
			return Ticket{}, fmt.Errorf("waiting for choosers: %w", werr)
		}
	}
	if err := b.exec(ctx, `UPDATE `+b.choosing+` SET choosing = true WHERE lock = ? AND client = ?`, name, owner); err != nil {
		return Ticket{}, fmt.Errorf("choosing: %w", err)
	}
	nums, err := b.readNumbers(ctx, name)
	if err != nil {
		return Ticket{}, fmt.Errorf("numbers: %w", err)
	}
	delete(nums, owner)
	me := Ticket{Number: NextNumber(nums), ID: owner}
	if err := b.exec(ctx, `UPDATE `+b.numbers+` SET number = ? WHERE lock = ? AND client = ?`, me.Number, name, owner); err != nil {
		return Ticket{}, fmt.Errorf("number: %w", err)
	}
	if err := b.exec(ctx, `UPDATE `+b.choosing+` SET choosing = false WHERE lock = ? AND client = ?`, name, owner); err != nil {
		return Ticket{}, fmt.Errorf("done choosing: %w", err)
	}
	return me, nil
}

func anyTrue(m map[string]bool, except string) bool {
	for id, v := range m {
		if v && id != except {
			return true
		}
	}
	return false
}

func (b *Bakery) wait(ctx context.Context, name string, me Ticket) error {
	var w *waiter
	poll := recipe.NewPoller(b.cfg.Options).Wait
	for {
		// Choosing first, then Numbers: L3 for j must read number[j] after
		// having seen choosing[j] false.
		ch, err := b.readChoosing(ctx, name)
		var nums map[string]int64
		if err == nil {
			nums, err = b.readNumbers(ctx, name)
		}
		if err == nil {
			if w == nil {
				w = newWaiter(me, ch, nums)
			}
			if w.step(ch, nums) {
				return nil
			}
		}
		if werr := poll(ctx); werr != nil {
			return fmt.Errorf("waiting for my turn: %w (last read: %v)", werr, err)
		}
	}
}

// clear deletes the client's cells; nil means they are certainly gone.
func (b *Bakery) clear(ctx context.Context, name, owner string) error {
	cctx, cancel := recipe.Detached(ctx)
	defer cancel()
	err := b.exec(cctx, `DELETE FROM `+b.numbers+` WHERE lock = ? AND client = ?`, name, owner)
	if err == nil {
		err = b.exec(cctx, `DELETE FROM `+b.choosing+` WHERE lock = ? AND client = ?`, name, owner)
	}
	return err
}

// Release removes the client's number and choosing cells. ErrNotHeld when
// this instance made no grant for (lock, owner).
func (b *Bakery) Release(ctx context.Context, g workload.Grant) error {
	k := [2]string{g.Lock, g.Owner}
	b.mu.Lock()
	_, ok := b.tickets[k]
	b.mu.Unlock()
	if !ok {
		return fmt.Errorf("release %q by %q: %w", g.Lock, g.Owner, workload.ErrNotHeld)
	}
	// Deleting a cell again is harmless, so a failed delete is retried.
	err := b.exec(ctx, `DELETE FROM `+b.numbers+` WHERE lock = ? AND client = ?`, g.Lock, g.Owner)
	for try := 0; try < 3 && err != nil && ctx.Err() == nil; try++ {
		err = b.exec(ctx, `DELETE FROM `+b.numbers+` WHERE lock = ? AND client = ?`, g.Lock, g.Owner)
	}
	if err != nil {
		// A ticket left behind blocks every other client for good: the
		// next Acquire of this instance deletes it.
		b.mu.Lock()
		b.leftovers = append(b.leftovers, k)
		b.mu.Unlock()
		return fmt.Errorf("release %q: %w", g.Lock, err)
	}
	b.mu.Lock()
	delete(b.tickets, k)
	b.mu.Unlock()
	// The number is gone, so others may enter; the choosing cell is only
	// tidied (it is false already).
	if err := b.exec(ctx, `DELETE FROM `+b.choosing+` WHERE lock = ? AND client = ?`, g.Lock, g.Owner); err != nil {
		b.cfg.Log.Debug("bakery: choosing cell left behind", "lock", g.Lock, "client", g.Owner, "err", err)
	}
	return nil
}

// clearLeftovers deletes cells that earlier calls may have left behind.
func (b *Bakery) clearLeftovers(ctx context.Context) {
	b.mu.Lock()
	ks := b.leftovers
	b.leftovers = nil
	b.mu.Unlock()
	for _, k := range ks {
		err := b.clear(ctx, k[0], k[1])
		b.mu.Lock()
		if err != nil {
			b.leftovers = append(b.leftovers, k)
		} else {
			delete(b.tickets, k)
		}
		b.mu.Unlock()
	}
}

// Ticket returns the ticket behind a grant this instance made.
func (b *Bakery) Ticket(g workload.Grant) (Ticket, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.tickets[[2]string{g.Lock, g.Owner}]
	return t, ok
}
