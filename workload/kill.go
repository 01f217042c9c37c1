package workload

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// ProcessKiller is a Lock whose client runs in a process of its own (a
// plug-in of `--lock-cmd`). client-kill kills that process (SIGKILL, its
// whole process group) while it holds the lock or has an acquire or release
// in flight, and RestartProcess starts a fresh one after the restart delay,
// as a restarted application instance would. A Lock that is not one is an
// in-process client: its operation in flight is cancelled (the request it
// sent may still land, as a killed process's would), the Lock is dropped
// and the client's NewLockFunc makes a fresh one.
type ProcessKiller interface {
	KillProcess() error
	RestartProcess(ctx context.Context) error
}

// What a killed client was doing (history.ClientKillStart.InFlight), and
// the targets client-kill takes: KillAny is whichever comes first.
const (
	KillHold    = "hold"
	KillAcquire = "acquire"
	KillRelease = "release"
	KillAny     = "any"
)

// clientKilled is what a client's operation returns once client-kill took
// its process: its loop restarts it instead of going on.
type clientKilled struct{ r *killReq }

func (clientKilled) Error() string { return "workload: client killed (client-kill)" }

// killReq is an armed client-kill: the next client (or the one named) to
// reach the phase named (or any of them) is killed there.
type killReq struct {
	client  int // -1: any
	in      string
	restart time.Duration
	delay   time.Duration // how long an operation is in flight before the kill lands
	// killed records the start line; it runs before the kill lands, so that
	// the killed operation's completion (if one was in flight) follows it.
	killed func(history.ClientKillStart) error
	// restarted records the stop line as the fresh process started.
	restarted func(history.ClientKillStop)
	landed    chan history.ClientKillStart
	done      chan struct{}
	at        time.Time // when the kill landed
}

// KillClient arms a kill of the next client to reach phase in (KillHold:
// holding a grant; KillAcquire or KillRelease: that operation in flight,
// killed delay after its invocation; KillAny or "": whichever comes first),
// or of client when it is not negative. The client's process dies, it
// records nothing more, and after restart a fresh process of it starts (a
// new process number in the history). killed runs before the kill lands
// (the start line's moment), restarted as the fresh process starts (the
// stop line's). KillClient returns once the kill landed, with what it hit
// and a channel closed once the fresh process started, or when ctx ends
// (the kill disarmed).
func (c *Control) KillClient(ctx context.Context, client int, in string, restart, delay time.Duration,
	killed func(history.ClientKillStart) error, restarted func(history.ClientKillStop)) (history.ClientKillStart, <-chan struct{}, error) {
	if in == KillAny {
		in = ""
	}
	switch {
	case in != "" && in != KillHold && in != KillAcquire && in != KillRelease:
		return history.ClientKillStart{}, nil, fmt.Errorf("workload: client-kill target %q (want %s, %s, %s or %s)", in, KillAny, KillHold, KillAcquire, KillRelease)
	case restart < 0:
		return history.ClientKillStart{}, nil, fmt.Errorf("workload: client-kill restart delay %v is negative", restart)
	case client >= 0:
		if err := c.client(client); err != nil {
			return history.ClientKillStart{}, nil, err
		}
	}
	req := &killReq{client: client, in: in, restart: restart, delay: delay, killed: killed, restarted: restarted,
		landed: make(chan history.ClientKillStart, 1), done: make(chan struct{})}
	c.mu.Lock()
	if c.kill != nil {
		c.mu.Unlock()
		return history.ClientKillStart{}, nil, errors.New("workload: a client kill is already armed")
	}
	c.kill = req
	c.mu.Unlock()
	select {
	case v := <-req.landed:
		return v, req.done, nil
	case <-ctx.Done():
		c.mu.Lock()
		if c.kill == req {
			c.kill = nil
			c.mu.Unlock()
			return history.ClientKillStart{}, nil, ctx.Err()
		}
		c.mu.Unlock()
		// Claimed meanwhile: it lands within the claimer's operation.
		v := <-req.landed
		return v, req.done, nil
	}
}

// claimKill takes the armed kill when client i, about to enter phase, is
// its target.
func (c *Control) claimKill(i int, phase string) *killReq {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.kill
	if r == nil || r.client >= 0 && r.client != i || r.in != "" && r.in != phase {
		return nil
	}
	c.kill = nil
	return r
}

// land kills client i's process proc, doing phase on lock: the start line,
// then the process (a plug-in's process group) or the operation in flight
// (cancel, for an in-process client).
func (w *Workload) land(r *killReq, i, proc int, lock Lock, name, phase string, cancel context.CancelFunc) {
	v := history.ClientKillStart{Client: i, InFlight: phase, Lock: name, Process: proc, RestartMS: r.restart.Milliseconds()}
	if err := r.killed(v); err != nil {
		w.cfg.log.Warn("client kill: start line not recorded", "client", i, "err", err)
	}
	r.at = time.Now()
	if pk, ok := lock.(ProcessKiller); ok {
		if err := pk.KillProcess(); err != nil {
			w.cfg.log.Warn("client kill: no process to kill", "client", i, "err", err)
		}
	}
	if cancel != nil {
		cancel()
	}
	w.cfg.log.Info("client killed", "client", i, "process", proc, "in", phase, "lock", name, "restart", r.restart)
	r.landed <- v
}

// inFlight is a kill aimed at an operation in flight: it lands after the
// request's delay, or as the operation returns (its completion is not
// written yet: in the history it is still in flight, and its answer is
// lost with the process).
type inFlight struct {
	r      *killReq
	ret    chan struct{}
	landed sync.WaitGroup
}

// killDuring arms the landing of r on client i's operation phase, whose
// context cancel ends; nil when r is nil.
func (w *Workload) killDuring(r *killReq, i, proc int, lock Lock, name, phase string, cancel context.CancelFunc) *inFlight {
	if r == nil {
		return nil
	}
	k := &inFlight{r: r, ret: make(chan struct{})}
	k.landed.Go(func() {
		t := time.NewTimer(r.delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-k.ret:
		}
		w.land(r, i, proc, lock, name, phase, cancel)
	})
	return k
}

// returned says the operation returned and waits for the kill to land.
func (k *inFlight) returned() {
	close(k.ret)
	k.landed.Wait()
}

// killedErr is the error of an operation whose process was killed: an
// unknown outcome.
func killedErr(f, lock string) error {
	return fmt.Errorf("%s %q: the client's process was killed (client-kill): %w", f, lock, ErrUnknown)
}

// completeKilled records the info completion of inv, whose process was
// killed, and moves client i to a new process.
func (w *Workload) completeKilled(i int, inv history.Op) error {
	op := history.Op{Process: inv.Process, Type: history.Info, F: inv.F, Lock: inv.Lock, Error: killedErr(inv.F, inv.Lock).Error()}
	if err := w.record(op); err != nil {
		return err
	}
	w.procs.next(i)
	return nil
}

// restart brings client i back after a kill: the restart delay, then a
// fresh process (ProcessKiller) or a fresh Lock from the client's
// NewLockFunc, and the stop line. The delay is waited in full even when the
// run is ending, so that the fault's window closes with the restart.
func (w *Workload) restart(ctx context.Context, i int, lock Lock, r *killReq) (Lock, error) {
	defer close(r.done)
	t := time.NewTimer(r.restart)
	<-t.C
	next := lock
	if pk, ok := lock.(ProcessKiller); ok {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		if err := pk.RestartProcess(rctx); err != nil {
			// Its next operation starts one, or fails as a plug-in that
			// cannot start does.
			w.cfg.log.Warn("client kill: the fresh process did not start", "client", i, "err", err)
		}
		cancel()
	} else {
		nl, err := w.newLock(i, w.clocks[i])
		if err != nil {
			return lock, fmt.Errorf("workload: client %d after client-kill: %w", i, err)
		}
		next = nl
	}
	w.ctl.setLock(i, next)
	v := history.ClientKillStop{Client: i, DownMS: time.Since(r.at).Milliseconds(), Process: w.Process(i)}
	w.cfg.log.Info("client restarted", "client", i, "process", v.Process, "down", time.Since(r.at))
	r.restarted(v)
	return next, nil
}
