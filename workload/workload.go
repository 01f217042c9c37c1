package workload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/spec"
)

// Recorder receives every operation; history.Writer implements it. Append
// stamps Index and Time and returns the stamped op.
type Recorder interface {
	Append(op history.Op) (history.Op, error)
}

// NewLockFunc makes the Lock of one client. Each client has its own clock
// (so that the nemesis can skew one client) and may have its own session.
type NewLockFunc func(client int, clock Clock) (Lock, error)

// Classifier maps an operation's error to its history type: history.Fail
// when the operation certainly did not take effect, history.Info when the
// outcome is unknown.
type Classifier func(error) history.Type

// DefaultClassifier maps errors with ClassifyOutcome (the table of
// cqlerr.go; the definite sentinels of lock.go are failures, anything it
// cannot tell is unknown), and a write refused for its stale token to a
// failure: the resource wrote nothing.
func DefaultClassifier(err error) history.Type {
	if errors.Is(err, ErrStaleToken) && !errors.Is(err, ErrUnknown) {
		return history.Fail
	}
	if ClassifyOutcome(err) == Failed {
		return history.Fail
	}
	return history.Info
}

// Option configures a Workload.
type Option func(*config)

type config struct {
	clients        int
	locks          []string
	seed           int64
	acquireTimeout time.Duration
	opTimeout      time.Duration
	holdMax        time.Duration
	thinkMax       time.Duration
	stagger        time.Duration
	pinned         bool
	retireStuck    bool
	deletes        bool
	shape          string
	term           time.Duration
	classify       Classifier
	log            *slog.Logger
}

// DefaultClients is the number of clients of a workload made without
// WithClients: a run's (spec.Defaults).
const DefaultClients = spec.DefaultClients

// WithClients sets the number of concurrent clients (default DefaultClients).
func WithClients(n int) Option { return func(c *config) { c.clients = n } }

// WithLocks sets the lock names the clients contend for (default "l0").
func WithLocks(names ...string) Option { return func(c *config) { c.locks = names } }

// WithSeed seeds every random choice of the clients (default 1).
func WithSeed(s int64) Option { return func(c *config) { c.seed = s } }

// WithAcquireTimeout bounds one Acquire (default 5s): an acquire that times
// out is recorded with the lock's own classification of the error.
func WithAcquireTimeout(d time.Duration) Option { return func(c *config) { c.acquireTimeout = d } }

// WithOpTimeout bounds add, release and read (default 10s).
func WithOpTimeout(d time.Duration) Option { return func(c *config) { c.opTimeout = d } }

// WithHold sets the longest random hold after the critical section (default 50ms).
func WithHold(max time.Duration) Option { return func(c *config) { c.holdMax = max } }

// WithThink sets the longest random pause between a release and the next
// acquire (default 20ms).
func WithThink(max time.Duration) Option { return func(c *config) { c.thinkMax = max } }

// WithStagger spreads the clients' starts over [0, d) (default 200ms).
func WithStagger(d time.Duration) Option { return func(c *config) { c.stagger = d } }

// WithPinnedLocks makes client i use only lock i mod len(locks) (no random
// choice): with as many locks as clients, nobody contends, which is how the
// throughput benchmark measures the harness rather than the lock's queue.
func WithPinnedLocks() Option { return func(c *config) { c.pinned = true } }

// WithClassifier sets how errors map to fail or info (default DefaultClassifier).
func WithClassifier(f Classifier) Option { return func(c *config) { c.classify = f } }

// WithDeletes makes the register's clients delete keys too (DELETE ... IF
// value = ?, history.FRegDelete), as often as they insert: a key then goes
// back to no row, which a stale write re-applied after a purge shows
// (CASSANDRA-19617). Without it the register inserts, compares-and-sets
// and reads, as its rows were measured.
func WithDeletes() Option { return func(c *config) { c.deletes = true } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// Stats are running counts of completed client operations.
type Stats struct {
	OK, Fail, Info int64
	Acquired       int64
}

// Workload runs concurrent clients that loop acquire -> add -> hold -> release
// on a Lock, recording every operation.
type Workload struct {
	cfg     config
	newLock NewLockFunc
	res     Resource
	rec     Recorder

	clocks []*SkewClock
	ctl    *Control     // the client faults' door (Control)
	elem   atomic.Int64 // last element added: elements are unique in a run
	ok     atomic.Int64
	fail   atomic.Int64
	info   atomic.Int64
	acq    atomic.Int64

	procs *processes
	names *lockNames
	// noLease: a grant without a lease was seen, so the lock never frees
	// itself (an unknown acquire may hold it for good).
	noLease atomic.Bool
}

// New makes a workload. newLock is called once per client when Run starts.
func New(newLock NewLockFunc, res Resource, rec Recorder, opts ...Option) (*Workload, error) {
	cfg := config{
		clients:        DefaultClients,
		locks:          []string{"l0"},
		seed:           1,
		acquireTimeout: spec.DefaultAcquireTimeout,
		opTimeout:      10 * time.Second,
		holdMax:        50 * time.Millisecond,
		thinkMax:       20 * time.Millisecond,
		stagger:        200 * time.Millisecond,
		shape:          ShapeCycle,
		term:           DefaultTerm,
		classify:       DefaultClassifier,
		log:            slog.Default(),
	}
	for _, o := range opts {
		o(&cfg)
	}
	switch {
	case newLock == nil || res == nil || rec == nil:
		return nil, errors.New("workload: lock, resource and recorder are required")
	case cfg.clients < 1:
		return nil, fmt.Errorf("workload: clients must be >= 1, got %d", cfg.clients)
	case len(cfg.locks) == 0:
		return nil, errors.New("workload: no lock names")
	case cfg.acquireTimeout <= 0 || cfg.opTimeout <= 0:
		return nil, errors.New("workload: timeouts must be positive")
	case !slices.Contains(Shapes, cfg.shape):
		return nil, fmt.Errorf("workload: unknown shape %q (want one of %v)", cfg.shape, Shapes)
	case cfg.term <= 0:
		return nil, errors.New("workload: the leader's term must be positive")
	}
	w := &Workload{cfg: cfg, newLock: newLock, res: res, rec: rec, names: newLockNames(cfg.locks)}
	w.clocks = make([]*SkewClock, cfg.clients)
	w.procs = newProcesses(cfg.clients)
	for i := range w.clocks {
		w.clocks[i] = &SkewClock{}
	}
	w.ctl = newControl(w.clocks, cfg.log)
	return w, nil
}

// Clients is the number of clients.
func (w *Workload) Clients() int { return w.cfg.clients }

// Locks are the lock names used so far: the configured ones and any that
// replaced a stuck one (WithRetireStuckLocks).
func (w *Workload) Locks() []string { return w.names.all() }

// Clock is client i's clock.
func (w *Workload) Clock(i int) *SkewClock { return w.clocks[i] }

// Process is client i's current process number.
func (w *Workload) Process(i int) int {
	return w.procs.of(i)
}

// Stats returns the running counts.
func (w *Workload) Stats() Stats {
	return Stats{OK: w.ok.Load(), Fail: w.fail.Load(), Info: w.info.Load(), Acquired: w.acq.Load()}
}

// Run runs the clients until ctx is done, then waits for each to finish its
// operation in flight and release what it holds. Operations run under their
// own timeouts, not ctx, so that no operation is cut off unrecorded.
func (w *Workload) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make([]error, w.cfg.clients)
	for i := range w.cfg.clients {
		lock, err := w.newLock(i, w.clocks[i])
		if err != nil {
			return fmt.Errorf("workload: client %d: %w", i, err)
		}
		w.ctl.setLock(i, lock)
		wg.Go(func() { errs[i] = w.client(ctx, i, lock) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (w *Workload) rng(i int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(w.cfg.seed), uint64(i)+1))
}

func randDur(r *rand.Rand, max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	return time.Duration(r.Int64N(int64(max)))
}

func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// client is one client's loop.
func (w *Workload) client(ctx context.Context, i int, lock Lock) error {
	r := w.rng(i)
	sleep(ctx, randDur(r, w.cfg.stagger))
	for ctx.Err() == nil {
		w.ctl.rest(ctx, i)
		k := r.IntN(len(w.cfg.locks))
		if w.cfg.pinned {
			k = i % len(w.cfg.locks)
		}
		name := w.names.slot(k)
		var err error
		if w.cfg.shape == ShapeLeader {
			err = w.lead(ctx, i, lock, name, r)
		} else {
			err = w.cycle(ctx, i, lock, name, randDur(r, w.cfg.holdMax))
		}
		var killed clientKilled
		if errors.As(err, &killed) {
			if lock, err = w.restart(ctx, i, lock, killed.r); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		think := randDur(r, w.cfg.thinkMax)
		sleep(ctx, think)
	}
	return nil
}

// cycle is one acquire -> add -> hold -> release. It returns an error only
// when the history cannot be written.
func (w *Workload) cycle(ctx context.Context, i int, lock Lock, name string, hold time.Duration) error {
	proc, g, ok, err := w.begin(ctx, i, lock, name)
	if err != nil || !ok {
		return err
	}
	t, err := w.write(ctx, i, proc, lock, g)
	if err != nil || t == history.Info {
		return err
	}
	if t == history.OK {
		sleep(ctx, hold)
	}
	return w.release(ctx, i, lock, g)
}

// write runs one critical section as the holder of g. When its outcome is
// unknown the client went on under a new process, but the grant belongs to
// the old one, whose add may still be in flight: a release by the new
// process would be a release by a non-holder, and an unrecorded one would
// hide the end of the old process's hold. The grant is abandoned, as by a
// crashed client: a lease frees itself at its expiry, other recipes stay
// held (that is their semantics; see WithRetireStuckLocks).
func (w *Workload) write(ctx context.Context, i, proc int, lock Lock, g Grant) (history.Type, error) {
	t, err := w.add(ctx, i, proc, lock, g)
	if err == nil && t == history.Info {
		w.abandon(i, g)
	}
	return t, err
}

// add runs the critical section and returns how it completed.
func (w *Workload) add(ctx context.Context, i, proc int, lock Lock, g Grant) (history.Type, error) {
	elem := w.elem.Add(1)
	inv, err := w.invoke(proc, history.FAdd, g.Lock, mustJSON(elem))
	if err != nil {
		return "", err
	}
	// An armed pause is claimed before the critical section starts (this
	// client holds g, so it is a holder) and taken in the hook, between the
	// read of the set and its write: the window a stale holder must not
	// write in. The section's timeout is extended by the pause.
	req, pd := w.ctl.claimPause(g)
	var stalled atomic.Bool
	hook := func(context.Context) error {
		if req == nil || !stalled.CompareAndSwap(false, true) {
			return nil
		}
		w.cfg.log.Info("client pause", "client", i, "process", proc, "lock", g.Lock, "for", pd)
		// The start line is written once the stall has begun (the
		// process stopped), the stop line once the client resumed.
		pp, ok := lock.(ProcessPauser)
		if !ok {
			req.begin(i, proc, g.Lock, pd)
			time.Sleep(pd)
			req.end()
			return nil
		}
		resume, err := pp.PauseProcess()
		if err != nil {
			w.cfg.log.Warn("client pause: process not stopped", "client", i, "err", err)
		}
		req.begin(i, proc, g.Lock, pd)
		time.Sleep(pd)
		if resume != nil {
			if err := resume(); err != nil {
				w.cfg.log.Warn("client pause: process not resumed", "client", i, "err", err)
			}
		}
		req.end()
		return nil
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.opTimeout+pd)
	var aerr error
	if fw, ok := lock.(FencedWriter); ok {
		aerr = fw.WriteFenced(actx, g, elem, hook)
	} else {
		aerr = w.resourceOf(i).Add(actx, g.Lock, elem, g.Token, hook)
	}
	cancel()
	if req != nil && !stalled.Load() {
		w.ctl.unclaim(req)
	}
	if aerr != nil {
		return w.complete(i, inv, aerr, nil)
	}
	return history.OK, w.record(history.Op{Process: proc, Type: history.OK, F: history.FAdd, Lock: g.Lock, Value: mustJSON(elem)})
}

// resourceOf is the resource client i writes through: its own when the
// resource has one per client (ClientResource).
func (w *Workload) resourceOf(i int) Resource {
	if cr, ok := w.res.(ClientResource); ok {
		if r := cr.Client(i); r != nil {
			return r
		}
	}
	return w.res
}

func (w *Workload) release(ctx context.Context, i int, lock Lock, g Grant) error {
	proc := w.Process(i)
	inv, err := w.invoke(proc, history.FRelease, g.Lock, nil)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.opTimeout)
	kr := w.ctl.claimKill(i, KillRelease)
	k := w.killDuring(kr, i, proc, lock, g.Lock, KillRelease, cancel)
	rerr := lock.Release(rctx, g)
	if k != nil {
		// Killed with its release in flight: its answer is lost, and the
		// grant with it (it may still hold).
		k.returned()
		cancel()
		w.abandon(i, g)
		if err := w.completeKilled(i, inv); err != nil {
			return err
		}
		return clientKilled{kr}
	}
	cancel()
	w.ctl.setHolding(i, false)
	if rerr != nil {
		t, err := w.complete(i, inv, rerr, nil)
		if err == nil && t == history.Info {
			// A release that may not have taken effect leaves the grant
			// with the retired process, as an unknown write does.
			w.abandon(i, g)
		}
		return err
	}
	return w.record(history.Op{Process: proc, Type: history.OK, F: history.FRelease, Lock: g.Lock})
}

// invoke records an invocation.
func (w *Workload) invoke(proc int, f, lock string, value json.RawMessage) (history.Op, error) {
	return w.rec.Append(history.Op{Process: proc, Type: history.Invoke, F: f, Lock: lock, Value: value})
}

// complete records the failed or unknown completion of inv; an unknown
// outcome moves client i (when i >= 0) to a new process number.
func (w *Workload) complete(i int, inv history.Op, opErr error, value json.RawMessage) (history.Type, error) {
	t := w.cfg.classify(opErr)
	if t != history.Fail {
		t = history.Info
	}
	op := history.Op{Process: inv.Process, Type: t, F: inv.F, Lock: inv.Lock, Value: value, Error: opErr.Error()}
	if inv.F == history.FAdd {
		op.Value = inv.Value // the element, so a checker can match it
	}
	if err := w.record(op); err != nil {
		return "", err
	}
	if t == history.Info && i >= 0 {
		w.procs.next(i)
	}
	return t, nil
}

func (w *Workload) record(op history.Op) error {
	switch op.Type {
	case history.OK:
		w.ok.Add(1)
	case history.Fail:
		w.fail.Add(1)
	case history.Info:
		w.info.Add(1)
	}
	if _, err := w.rec.Append(op); err != nil {
		return fmt.Errorf("workload: record: %w", err)
	}
	return nil
}

// FinalReads reads every lock's protected set once, each under a fresh
// process, after the clients stopped and the cluster healed. A read that
// fails is retried a few times, since the final read is what the resource
// checker compares acknowledged adds with.
func (w *Workload) FinalReads(ctx context.Context) error {
	var errs []error
	for k, name := range w.names.all() {
		var last error
		for attempt := 0; attempt < 5 && ctx.Err() == nil; attempt++ {
			proc := w.procs.next(k % w.cfg.clients)
			_, err := w.invoke(proc, history.FRead, name, nil)
			if err != nil {
				return err
			}
			rctx, cancel := context.WithTimeout(ctx, w.cfg.opTimeout)
			set, rerr := w.res.Read(rctx, name)
			cancel()
			if rerr == nil {
				if set == nil {
					set = []int64{}
				}
				last = w.record(history.Op{Process: proc, Type: history.OK, F: history.FRead, Lock: name, Value: mustJSON(set)})
				break
			}
			last = fmt.Errorf("final read of %s: %w", name, rerr)
			// A read changes nothing: it is a definite failure whatever the error.
			if err := w.record(history.Op{Process: proc, Type: history.Fail, F: history.FRead, Lock: name, Error: rerr.Error()}); err != nil {
				return err
			}
			sleep(ctx, time.Second)
		}
		if last != nil {
			errs = append(errs, last)
		}
	}
	return errors.Join(errs...)
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only ints and int slices are marshalled here
	}
	return b
}
