package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// GCStall stalls one node's JVM in short stop-the-world bursts, as GC
// pauses do: stalls of tens of milliseconds to seconds (--stall), about
// --stall-every apart, for a window. Each stall is a window of its own in
// the history (start and stop lines), so that a replay deals it again at
// its moment and a shrink drops stalls one by one.
const GCStall = history.KindGCStall

// ClientGCStall is the same on the clients: the next client to enter its
// critical section stands still between its read and its write for one
// stall, and so does its plug-in process (a --lock-cmd lock: the lock's
// own runtime stalls between its lease check and its write), a stall at a
// time, for a window.
const ClientGCStall = history.KindClientGCStall

// CapStall is a node whose JVM a fault can stop for a stall the node times
// itself.
var CapStall = NewCapability("stall",
	"stop the Cassandra JVM for a stall the node times itself (SIGSTOP, and SIGCONT from the node after it: a Docker node)")

var gcStallKind = Kind{
	Name: GCStall, Scope: ScopeNode, Color: "#8cd17d",
	Doc: "Stalls one node's JVM in stop-the-world bursts, as GC pauses do: stalls of --stall (20 ms to 2 s by default, " +
		"log-uniform) about --stall-every apart (exponential) for the window, each a SIGSTOP that the node ends itself with " +
		"a SIGCONT. Each stall is its own window in the history.",
	Needs:      []Capability{CapStall},
	StartValue: history.GCStallStart{MS: 340}, StopValue: history.GCStallStop{MS: 340, StalledMS: 352},
	New: func() Injector { return &gcStall{} },
}

var clientGCStallKind = Kind{
	Name: ClientGCStall, Scope: ScopeClient, Color: "#59a14f",
	Doc: "Stalls the clients in bursts, as GC pauses do: the next client to enter its critical section stands still " +
		"between its read and its write for a stall of --stall, and so does its plug-in process (--lock-cmd: the lock's " +
		"own runtime stalls between its lease check and its write); stalls about --stall-every apart for the window, " +
		"each its own window in the history.",
	StartValue: history.ClientStallStart{Client: 2, Lock: "l0", MS: 180, Process: 7},
	StopValue:  history.ClientStallStop{Client: 2, Process: 7, StalledMS: 183},
	New:        func() Injector { return &clientGCStall{} },
}

// StallNode is a node whose JVM a fault can stall (cluster.Node implements
// it): the node action of CapStall.
type StallNode interface {
	// StallJVM stops the JVM, returns once it is stopped, and has the
	// node resume it d later whatever becomes of the caller.
	StallJVM(ctx context.Context, d time.Duration) error
}

// plannedStalls are the window's stalls: the step's one in a replay (its
// start value), drawn to fill hold otherwise.
func plannedStalls(e *Env, hold time.Duration, ms int64) (gaps, stalls []time.Duration) {
	if ms > 0 {
		return []time.Duration{0}, []time.Duration{time.Duration(ms) * time.Millisecond}
	}
	return stallPlan(e.Sched, e.Slow, hold)
}

// burst runs stall after each of gaps until the plan is done or ctx ends;
// it returns once the first stall is done (its error, if it failed) and
// the Stop that ends the burst after the stall in progress.
func burst(ctx context.Context, gaps, stalls []time.Duration, stall func(ctx context.Context, d time.Duration) error) (Stop, error) {
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	first := make(chan error, 1)
	done := make(chan error, 1)
	go func() {
		var errs []error
		for i, d := range stalls {
			if i > 0 && !sleep(wctx, gaps[i]) {
				break
			}
			err := stall(wctx, d)
			if i == 0 {
				first <- err
				if err != nil {
					done <- nil
					return
				}
			}
			if err != nil && wctx.Err() == nil {
				errs = append(errs, err)
			}
		}
		done <- errors.Join(errs...)
	}()
	if err := <-first; err != nil {
		cancel()
		<-done
		return nil, err
	}
	return func(ctx context.Context) error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-ctx.Done():
			return fmt.Errorf("nemesis: a stall did not end: %w", ctx.Err())
		}
	}, nil
}

type gcStall struct{}

func (*gcStall) Start(ctx context.Context, e *Env, hold time.Duration) (Stop, error) {
	t := e.Targets[e.Sched.IntN(len(e.Targets))]
	if ts, err := e.givenTargets(); err != nil {
		return nil, err
	} else if len(ts) > 0 {
		t = ts[0]
	}
	v, _ := given[history.GCStallStart](e)
	gaps, stalls := plannedStalls(e, hold, v.MS)
	sn, ok := t.Node.(StallNode)
	if !ok {
		return nil, fmt.Errorf("nemesis: gc-stall: node %s cannot stall its JVM", t.Name)
	}
	nodes := []string{t.Name}
	return burst(ctx, gaps, stalls, func(ctx context.Context, d time.Duration) error {
		ms := d.Milliseconds()
		// A stall begun is ended by the node itself; the harness waits it
		// out whatever ctx says, so that its stop line is written.
		if err := sn.StallJVM(ctx, d); err != nil {
			return fmt.Errorf("nemesis: gc-stall %s: %w", t.Name, err)
		}
		began := time.Now()
		rerr := e.Record(history.StartF(GCStall), history.GCStallStart{MS: ms}, nodes)
		sleep(context.Background(), d-time.Since(began))
		// The node resumed its JVM itself; a SIGCONT from here confirms it
		// (a killed JVM has nothing to resume: not this fault's failure).
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		if err := t.Node.SignalJVM(cctx, "CONT"); err != nil {
			e.Log.Warn("nemesis: gc-stall: resume not confirmed", "node", t.Name, "err", err)
		}
		cancel()
		stalled := time.Since(began).Milliseconds()
		return errors.Join(rerr, e.Record(history.StopF(GCStall), history.GCStallStop{MS: ms, StalledMS: stalled}, nodes))
	})
}

// Reset resumes a stopped JVM (any java process in state T), as pause's
// reset does: a stall outlives no node's own timer, but a node restarted
// between its stop and its resume may keep one.
func (*gcStall) Reset(ctx context.Context, e *Env, t Target) (bool, error) {
	return resumeJVM(ctx, t)
}

// resumeJVM sends SIGCONT to a running node's stopped JVM, and says
// whether it found one.
func resumeJVM(ctx context.Context, t Target) (bool, error) {
	st, err := t.Node.State(ctx)
	if err != nil || st != "running" {
		return false, err
	}
	out, err := t.Node.Exec(ctx, "ps", "-o", "stat=", "-C", "java")
	if err != nil && strings.TrimSpace(out) != "" {
		return false, fmt.Errorf("ps: %w", err)
	}
	for _, stat := range strings.Fields(out) {
		if strings.HasPrefix(stat, "T") {
			return true, t.Node.SignalJVM(ctx, "CONT")
		}
	}
	return false, nil
}

type clientGCStall struct{}

func (*clientGCStall) Start(ctx context.Context, e *Env, hold time.Duration) (Stop, error) {
	v, _ := given[history.ClientStallStart](e)
	gaps, stalls := plannedStalls(e, hold, v.MS)
	// The first stall waits at most the window for a holder; the others
	// until the burst's end.
	hctx, cancel := context.WithTimeout(ctx, hold)
	defer cancel()
	firstDone := false
	return burst(ctx, gaps, stalls, func(ctx context.Context, d time.Duration) error {
		pctx := ctx
		if !firstDone {
			firstDone = true
			var stop func() bool
			pctx, stop = mergeDone(ctx, hctx)
			defer stop()
		}
		return clientStall(pctx, e, d)
	})
}

// clientStall stalls the next holder for d and returns once it resumed and
// both lines are written.
func clientStall(ctx context.Context, e *Env, d time.Duration) error {
	var began time.Time
	var p history.ClientPauseStart
	startWritten := make(chan struct{})
	recorded := make(chan error, 1)
	resumed := func() {
		<-startWritten
		recorded <- e.Record(history.StopF(ClientGCStall), history.ClientStallStop{Client: p.Client, Process: p.Process,
			StalledMS: time.Since(began).Milliseconds()}, nil)
	}
	p, _, err := e.Clients.PauseHolder(ctx, 0, d, resumed)
	if err != nil {
		close(startWritten)
		return fmt.Errorf("nemesis: client-gc-stall: no holder entered a critical section: %w", err)
	}
	began = time.Now()
	err = e.Record(history.StartF(ClientGCStall), history.ClientStallStart{Client: p.Client, Lock: p.Lock, MS: d.Milliseconds(), Process: p.Process}, nil)
	close(startWritten)
	// The stall ends on its own (the client sleeps d): wait for its line.
	return errors.Join(err, <-recorded)
}

// mergeDone is a context of a that also ends with b.
func mergeDone(a, b context.Context) (context.Context, func() bool) {
	ctx, cancel := context.WithCancel(a)
	stop := context.AfterFunc(b, cancel)
	return ctx, func() bool { cancel(); return stop() }
}

// Reset has nothing to do: a stall ends on its own, and a client's stall
// does not outlive its process.
func (*clientGCStall) Reset(ctx context.Context, e *Env, t Target) (bool, error) { return false, nil }
