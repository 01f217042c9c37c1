package workload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Renewer is a Lock whose grants can be extended without letting go
// (lease.Lease). The leader workload heartbeats with it; a leader whose
// lock has none re-acquires under the same owner instead.
type Renewer interface {
	// Renew extends g; the returned grant has the new Deadline and Lease
	// (counted from the renew's invocation). A grant no longer held wraps
	// ErrNotHeld.
	Renew(ctx context.Context, g Grant) (Grant, error)
}

// RenewChecker is a Renewer that can tell it cannot renew (a plug-in whose
// setup did not say it renews): while CanRenew is false the leader
// re-acquires under the same owner, as with a lock that has no Renew.
type RenewChecker interface {
	CanRenew() bool
}

// renewer is lock's Renewer, nil when it has none or cannot renew now.
func renewer(lock Lock) Renewer {
	rn, ok := lock.(Renewer)
	if !ok {
		return nil
	}
	if rc, ok := lock.(RenewChecker); ok && !rc.CanRenew() {
		return nil
	}
	return rn
}

// Workload shapes (WithShape).
const (
	// ShapeCycle: acquire, one write, a short hold, release (the default).
	ShapeCycle = "cycle"
	// ShapeLeader: every client tries to lead; a leader keeps the lock for a
	// term of many seconds, heartbeats at a fraction of its lease and writes
	// as leader while it believes it leads (its lease has not run out).
	ShapeLeader = "leader"
)

// Shapes are the workload shapes, the default first.
var Shapes = []string{ShapeCycle, ShapeLeader}

// Defaults of the leader shape.
const (
	// DefaultTerm is how long a leader keeps the lock before it steps down.
	DefaultTerm = 10 * time.Second
	// DefaultHeartbeatFraction: a leader renews when this fraction of its
	// lease has passed.
	DefaultHeartbeatFraction = 1.0 / 3
)

// WithShape sets the workload's shape: ShapeCycle (default) or ShapeLeader.
func WithShape(shape string) Option { return func(c *config) { c.shape = shape } }

// WithTerm sets how long a leader keeps the lock (default DefaultTerm; the
// leader shape only).
func WithTerm(d time.Duration) Option { return func(c *config) { c.term = d } }

// lead is one term of client i: acquire, then write and heartbeat until the
// term ends, the lease runs out or a heartbeat fails, then step down. It
// returns an error only when the history cannot be written.
func (w *Workload) lead(ctx context.Context, i int, lock Lock, name string, r *rand.Rand) error {
	proc, g, ok, err := w.begin(ctx, i, lock, name)
	if err != nil || !ok {
		return err
	}
	// Terms differ a little so that the clients' hand-overs do not fall
	// into step.
	end := time.Now().Add(w.cfg.term/2 + randDur(r, w.cfg.term))
	beat := heartbeatAt(g)
	for ctx.Err() == nil && time.Now().Before(end) {
		if !g.Deadline.IsZero() && !time.Now().Before(g.Deadline) {
			break // the lease ran out: no longer the leader by its own clock
		}
		if !beat.IsZero() && !time.Now().Before(beat) {
			var held bool
			if g, held, err = w.heartbeat(ctx, i, proc, lock, g); err != nil || !held {
				return err // stepped down (the lock said not held, or did not answer)
			}
			beat = heartbeatAt(g)
			continue
		}
		if t, err := w.write(ctx, i, proc, lock, g); err != nil || t == history.Info {
			return err
		}
		sleep(ctx, randDur(r, w.cfg.holdMax))
	}
	return w.release(ctx, i, lock, g)
}

// heartbeatAt is when a leader holding g renews: when the configured
// fraction of its lease has passed, counted back from the grant's deadline
// (the lease runs from the grant's invocation, not from its answer: after a
// slow grant, now + lease/3 can fall after the deadline); never for a grant
// that does not expire.
func heartbeatAt(g Grant) time.Time {
	if g.Deadline.IsZero() || g.Lease <= 0 {
		return time.Time{}
	}
	return g.Deadline.Add(-time.Duration(float64(g.Lease) * (1 - DefaultHeartbeatFraction)))
}

// heartbeat renews g (Renewer) or re-acquires it under the same owner,
// recorded as a renew or an acquire. held is false when the leader must step
// down: a definite miss, or an unknown outcome (its process is then
// retired, and the grant abandoned as by a crashed leader).
func (w *Workload) heartbeat(ctx context.Context, i, proc int, lock Lock, g Grant) (Grant, bool, error) {
	f := history.FAcquire
	timeout := min(w.cfg.acquireTimeout, time.Until(g.Deadline))
	// A re-acquire must come back while the grant still holds: a blocking
	// acquire that waits out its own lease and wins the lock again later
	// is a new term after a gap, not this one extended.
	renew := func(ctx context.Context) (Grant, error) { return lock.Acquire(ctx, g.Lock, g.Owner) }
	if rn := renewer(lock); rn != nil {
		f, timeout = history.FRenew, w.cfg.acquireTimeout
		renew = func(ctx context.Context) (Grant, error) { return rn.Renew(ctx, g) }
	}
	inv, err := w.invoke(proc, f, g.Lock, nil)
	if err != nil {
		return g, false, err
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	ng, rerr := renew(rctx)
	cancel()
	if rerr != nil {
		// Not held any more (a definite miss: the term is over, nothing to
		// release), or unknown (the grant is abandoned with its process).
		t, err := w.complete(i, inv, rerr, nil)
		if t == history.Info {
			w.abandon(i, g)
		} else {
			w.drop(i)
		}
		return g, false, err
	}
	return ng, true, w.granted(i, proc, f, ng)
}

// acquire records an acquire by client i's process proc; ok is false when
// it failed (recorded as fail or info).
func (w *Workload) acquire(ctx context.Context, i, proc int, lock Lock, name, owner string) (g Grant, ok bool, err error) {
	inv, err := w.invoke(proc, history.FAcquire, name, nil)
	if err != nil {
		return Grant{}, false, err
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.acquireTimeout)
	kr := w.ctl.claimKill(i, KillAcquire)
	k := w.killDuring(kr, i, proc, lock, name, KillAcquire, cancel)
	g, aerr := lock.Acquire(actx, name, owner)
	if k != nil {
		// Killed with its acquire in flight: whatever it got is lost with
		// the process (a grant it got holds the lock for a dead process).
		k.returned()
		cancel()
		if err := w.completeKilled(i, inv); err != nil {
			return Grant{}, false, err
		}
		return Grant{}, false, clientKilled{kr}
	}
	cancel()
	if aerr != nil {
		t, err := w.complete(i, inv, aerr, nil)
		if err == nil && t == history.Info && w.noLease.Load() {
			// It may have taken effect for the retired process, and this
			// lock's grants never expire.
			w.retire(i, name)
		}
		return Grant{}, false, err
	}
	w.acq.Add(1)
	return g, true, w.granted(i, proc, history.FAcquire, g)
}

// granted records the ok of an acquire or renew (f) that gave client i's
// process proc the grant g, with its lease and token, and holds g.
func (w *Workload) granted(i, proc int, f string, g Grant) error {
	if g.Lease <= 0 && !g.Stealable {
		w.noLease.Store(true)
	}
	done := history.Op{Process: proc, Type: history.OK, F: f, Lock: g.Lock, LeaseMS: g.Lease.Milliseconds()}
	if g.Token > 0 {
		done.Value = mustJSON(g.Token)
	}
	w.ctl.setHolding(i, true)
	return w.record(done)
}

// begin acquires name for client i's current process. ok is false when
// there is nothing to hold: the acquire failed (recorded), or the grant came
// back already expired (a slow acquire under load) and was released at once,
// since a client checks its lease before it writes. A pause after this check
// is what the client-pause nemesis injects; this is not that.
func (w *Workload) begin(ctx context.Context, i int, lock Lock, name string) (proc int, g Grant, ok bool, err error) {
	proc = w.Process(i)
	g, ok, err = w.acquire(ctx, i, proc, lock, name, fmt.Sprintf("c%d-p%d", i, proc))
	if err != nil || !ok {
		return proc, g, false, err
	}
	if !g.Deadline.IsZero() && !time.Now().Before(g.Deadline) {
		return proc, g, false, w.release(ctx, i, lock, g)
	}
	if kr := w.ctl.claimKill(i, KillHold); kr != nil {
		// Killed holding: the process records nothing more, and its
		// grant stays with it.
		w.land(kr, i, proc, lock, name, KillHold, nil)
		w.abandon(i, g)
		w.procs.next(i)
		return proc, g, false, clientKilled{kr}
	}
	return proc, g, true, nil
}

// drop forgets client i's grant: released by another path, no longer held,
// or abandoned after an unknown outcome (it belongs to the retired process,
// which a new process must not release).
func (w *Workload) drop(i int) { w.ctl.setHolding(i, false) }
