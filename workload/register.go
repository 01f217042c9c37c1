package workload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// ShapeRegister is the register workload: no lock, but Cassandra's LWT
// itself, as Jepsen's Cassandra LWT test did. Clients read a few keys at
// SERIAL, insert them IF NOT EXISTS and compare-and-set them, and every
// outcome goes to the history (history.FRegRead, FRegInsert, FRegCAS),
// which the linearizable-register check judges.
const ShapeRegister = "register"

// Register is a compare-and-set register per key on the cluster under test
// (package register has the CQL one). Values are positive and never
// written twice on a key, so that a value seen names the write that made it.
type Register interface {
	// Read reads key at SERIAL: its value, or row false when it has none.
	Read(ctx context.Context, key string) (v int64, row bool, err error)
	// Insert writes v when key has no row. When it does not apply, seen is
	// the row's value (row false: the coordinator reported no row).
	Insert(ctx context.Context, key string, v int64) (applied bool, seen int64, row bool, err error)
	// CAS writes v when key holds expect. When it does not apply, seen is
	// what key held (row false: no row).
	CAS(ctx context.Context, key string, expect, v int64) (applied bool, seen int64, row bool, err error)
	// Delete removes key's row when it holds expect. When it does not
	// apply, seen is what key held (row false: no row).
	Delete(ctx context.Context, key string, expect int64) (applied bool, seen int64, row bool, err error)
}

// NewRegisterFunc makes client i's register (its own session when the
// clients are pinned to coordinators).
type NewRegisterFunc func(client int) (Register, error)

// RegisterWorkload runs the register clients.
type RegisterWorkload struct {
	cfg    config
	newReg NewRegisterFunc
	rec    Recorder
	keys   []string
	val    atomic.Int64 // last value written: values are unique in a run
	procs  *processes

	mu   sync.Mutex       // guards last
	last map[string]int64 // the latest value some client saw on a key, to aim the CASes

	// ctl holds the clients between operations for client-hold, the one
	// client fault the register takes (their clocks are never read).
	ctl *Control
}

// NewRegister makes a register workload on the keys WithLocks names (the
// default "l0": one key, the most contention), with WithClients clients,
// WithSeed, WithOpTimeout (bounds every operation), WithThink (the pause
// between a client's operations) and WithLogger. A classifier is not taken:
// a read's failure is always a fail, a write's is ClassifyOutcome's.
func NewRegister(newReg NewRegisterFunc, rec Recorder, opts ...Option) (*RegisterWorkload, error) {
	cfg := config{clients: DefaultClients, locks: []string{"l0"}, seed: 1, opTimeout: 10 * time.Second,
		thinkMax: 20 * time.Millisecond, stagger: 200 * time.Millisecond, log: slog.Default()}
	for _, o := range opts {
		o(&cfg)
	}
	switch {
	case newReg == nil || rec == nil:
		return nil, errors.New("workload: register and recorder are required")
	case cfg.clients < 1:
		return nil, fmt.Errorf("workload: clients must be >= 1, got %d", cfg.clients)
	case len(cfg.locks) == 0:
		return nil, errors.New("workload: no keys")
	case cfg.opTimeout <= 0:
		return nil, errors.New("workload: timeouts must be positive")
	}
	w := &RegisterWorkload{cfg: cfg, newReg: newReg, rec: rec, keys: cfg.locks, last: map[string]int64{}}
	w.procs = newProcesses(cfg.clients)
	clocks := make([]*SkewClock, cfg.clients)
	for i := range clocks {
		clocks[i] = &SkewClock{}
	}
	w.ctl = newControl(clocks, cfg.log)
	return w, nil
}

// Control is the door of the client faults: the register's clients serve
// client-hold (HoldAtRest) alone, holding no lock and reading no clock.
func (w *RegisterWorkload) Control() *Control { return w.ctl }

// Keys are the register's keys.
func (w *RegisterWorkload) Keys() []string { return w.keys }

// Run runs the clients until ctx is done; each finishes the operation in
// flight (under its own timeout, so that nothing is cut off unrecorded).
func (w *RegisterWorkload) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make([]error, w.cfg.clients)
	for i := range w.cfg.clients {
		reg, err := w.newReg(i)
		if err != nil {
			return fmt.Errorf("workload: client %d: %w", i, err)
		}
		wg.Go(func() { errs[i] = w.client(ctx, i, reg) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (w *RegisterWorkload) client(ctx context.Context, i int, reg Register) error {
	r := rand.New(rand.NewPCG(uint64(w.cfg.seed), uint64(i)+1))
	sleep(ctx, randDur(r, w.cfg.stagger))
	for ctx.Err() == nil {
		key := w.keys[r.IntN(len(w.keys))]
		var err error
		x := r.IntN(10)
		switch {
		case w.cfg.deletes && x >= 8:
			// With deletes: reads 4, inserts 1, CASes 3, deletes 2 of
			// 10 (the mix without them draws the same x for the rest).
			err = w.del(ctx, i, reg, key, r)
		case x < 4:
			err = w.read(ctx, i, reg, key)
		case x < 5:
			err = w.insert(ctx, i, reg, key)
		default:
			err = w.cas(ctx, i, reg, key, r)
		}
		if err != nil {
			return err
		}
		sleep(ctx, randDur(r, w.cfg.thinkMax))
		w.ctl.rest(ctx, i)
	}
	return nil
}

func (w *RegisterWorkload) proc(i int) int { return w.procs.of(i) }

// saw notes a value some client saw on key: the next CASes expect it.
func (w *RegisterWorkload) saw(key string, v int64, row bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if row {
		w.last[key] = v
	} else {
		delete(w.last, key)
	}
}

func regJSON(v history.RegValue) json.RawMessage { return mustJSON(v) }

func num(v int64) json.RawMessage { return mustJSON(v) }

func seenJSON(v int64, row bool) json.RawMessage {
	if !row {
		return history.NoRow
	}
	return num(v)
}

func (w *RegisterWorkload) invoke(proc int, f, key string, v json.RawMessage) error {
	_, err := w.rec.Append(history.Op{Process: proc, Type: history.Invoke, F: f, Key: key, Value: v})
	if err != nil {
		return fmt.Errorf("workload: record: %w", err)
	}
	return nil
}

func (w *RegisterWorkload) done(proc int, typ history.Type, f, key string, v json.RawMessage, opErr error) error {
	op := history.Op{Process: proc, Type: typ, F: f, Key: key, Value: v}
	if opErr != nil {
		op.Error = opErr.Error()
	}
	if _, err := w.rec.Append(op); err != nil {
		return fmt.Errorf("workload: record: %w", err)
	}
	return nil
}

// unknown records op's unknown outcome and moves client i to a new process.
func (w *RegisterWorkload) unknown(i, proc int, f, key string, v json.RawMessage, opErr error) error {
	if err := w.done(proc, history.Info, f, key, v, opErr); err != nil {
		return err
	}
	w.procs.next(i)
	return nil
}

func (w *RegisterWorkload) read(ctx context.Context, i int, reg Register, key string) error {
	proc := w.proc(i)
	if err := w.invoke(proc, history.FRegRead, key, nil); err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.opTimeout)
	v, row, err := reg.Read(rctx, key)
	cancel()
	if err != nil {
		// A read changes nothing: whatever went wrong, it failed.
		return w.done(proc, history.Fail, history.FRegRead, key, nil, err)
	}
	w.saw(key, v, row)
	return w.done(proc, history.OK, history.FRegRead, key, regJSON(history.RegValue{Seen: seenJSON(v, row)}), nil)
}

func (w *RegisterWorkload) insert(ctx context.Context, i int, reg Register, key string) error {
	proc := w.proc(i)
	nv := w.val.Add(1)
	inv := history.RegValue{New: num(nv)}
	if err := w.invoke(proc, history.FRegInsert, key, regJSON(inv)); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.opTimeout)
	applied, seen, row, err := reg.Insert(wctx, key, nv)
	cancel()
	return w.write(i, proc, history.FRegInsert, key, inv, nv, applied, seen, row, err)
}

func (w *RegisterWorkload) cas(ctx context.Context, i int, reg Register, key string, r *rand.Rand) error {
	w.mu.Lock()
	expect, known := w.last[key]
	w.mu.Unlock()
	if !known || r.IntN(8) == 0 {
		// Now and then a value the key may have held long ago (or never):
		// a CAS that should be rejected.
		expect = 1 + r.Int64N(max(w.val.Load(), 1))
	}
	proc := w.proc(i)
	nv := w.val.Add(1)
	inv := history.RegValue{Expect: num(expect), New: num(nv)}
	if err := w.invoke(proc, history.FRegCAS, key, regJSON(inv)); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.opTimeout)
	applied, seen, row, err := reg.CAS(wctx, key, expect, nv)
	cancel()
	return w.write(i, proc, history.FRegCAS, key, inv, nv, applied, seen, row, err)
}

// del deletes key if it holds the value last seen on it (now and then a
// value it may never have held, as cas aims).
func (w *RegisterWorkload) del(ctx context.Context, i int, reg Register, key string, r *rand.Rand) error {
	w.mu.Lock()
	expect, known := w.last[key]
	w.mu.Unlock()
	if !known || r.IntN(8) == 0 {
		expect = 1 + r.Int64N(max(w.val.Load(), 1))
	}
	proc := w.proc(i)
	inv := history.RegValue{Expect: num(expect)}
	if err := w.invoke(proc, history.FRegDelete, key, regJSON(inv)); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.opTimeout)
	applied, seen, row, err := reg.Delete(wctx, key, expect)
	cancel()
	switch {
	case err != nil && ClassifyOutcome(err) == Failed:
		return w.done(proc, history.Fail, history.FRegDelete, key, regJSON(inv), err)
	case err != nil:
		return w.unknown(i, proc, history.FRegDelete, key, regJSON(inv), err)
	case applied:
		w.saw(key, 0, false)
		return w.done(proc, history.OK, history.FRegDelete, key, regJSON(inv), nil)
	}
	w.saw(key, seen, row)
	rej := inv
	rej.Seen = seenJSON(seen, row)
	return w.done(proc, history.Fail, history.FRegDelete, key, regJSON(rej), nil)
}

// write records a conditional write's outcome: applied (ok), rejected with
// the value the row held (fail with seen), failed before it could apply
// (fail), or unknown (info).
func (w *RegisterWorkload) write(i, proc int, f, key string, inv history.RegValue, nv int64, applied bool, seen int64, row bool, err error) error {
	switch {
	case err != nil && ClassifyOutcome(err) == Failed:
		return w.done(proc, history.Fail, f, key, regJSON(inv), err)
	case err != nil:
		return w.unknown(i, proc, f, key, regJSON(inv), err)
	case applied:
		w.saw(key, nv, true)
		return w.done(proc, history.OK, f, key, regJSON(inv), nil)
	}
	w.saw(key, seen, row)
	rej := inv
	rej.Seen = seenJSON(seen, row)
	return w.done(proc, history.Fail, f, key, regJSON(rej), nil)
}

// FinalReads reads every key once at SERIAL after the clients stopped and
// the cluster healed, each under a fresh process, retrying a failed read a
// few times: the last word on what every key holds.
func (w *RegisterWorkload) FinalReads(ctx context.Context, reg Register) error {
	var errs []error
	for k, key := range w.keys {
		var last error
		for attempt := 0; attempt < 5 && ctx.Err() == nil; attempt++ {
			proc := w.procs.next(k % w.cfg.clients)
			if err := w.invoke(proc, history.FRegRead, key, nil); err != nil {
				return err
			}
			rctx, cancel := context.WithTimeout(ctx, w.cfg.opTimeout)
			v, row, err := reg.Read(rctx, key)
			cancel()
			if err == nil {
				last = w.done(proc, history.OK, history.FRegRead, key, regJSON(history.RegValue{Seen: seenJSON(v, row)}), nil)
				break
			}
			last = fmt.Errorf("final read of %s: %w", key, err)
			if err := w.done(proc, history.Fail, history.FRegRead, key, nil, err); err != nil {
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
