package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

// CoordGCStall is gc-stall aimed at a holder's coordinator (clients
// pinned, `run --pin-clients`): each stall waits for the next client to
// enter its critical section, between its read and its write, and stops
// the JVM of that client's coordinator before the client goes on, so that
// its write waits in the stalled node while its lease runs out, as when a
// coordinator's GC pause meets a holder's write. A replay stalls, for the
// recorded length, the coordinator of whichever holder comes next.
const CoordGCStall = history.KindCoordGCStall

// ClientGCStall is the same on the clients: the next client to enter its
// critical section stands still between its read and its write for one
// stall, and so does its plug-in process (a --lock-cmd lock: the lock's
// own runtime stalls between its lease check and its write), a stall at a
// time, for a window.
const ClientGCStall = history.KindClientGCStall

// CapStall is a node whose JVM a fault can stop for a stall the node times
// itself.
var gcStallKind = Kind{
	Name: GCStall, Scope: ScopeNode, Color: "#8cd17d",
	Doc: "Stalls one node's JVM in stop-the-world bursts, as GC pauses do: stalls of --stall (20 ms to 2 s by default, " +
		"log-uniform) about --stall-every apart (exponential) for the window, each a SIGSTOP that the node ends itself with " +
		"a SIGCONT. Each stall is its own window in the history.",
	Needs:      []Capability{CapStall},
	StartValue: history.GCStallStart{MS: 340}, StopValue: history.GCStallStop{MS: 340, StalledMS: 352},
	New: func() Injector { return &gcStall{} },
}

var coordGCStallKind = Kind{
	Name: CoordGCStall, Scope: ScopeNode, Color: "#6b9e5f",
	Doc: "gc-stall aimed at a holder's coordinator (clients pinned): each stall waits for the next client to enter its " +
		"critical section and stops the JVM of its coordinator before it writes, so that the write waits in the stalled " +
		"node while the lease runs out.",
	Needs:      []Capability{CapStall},
	Pins:       true,
	StartValue: history.GCStallStart{Clients: []int{1, 4}, MS: 3800}, StopValue: history.GCStallStop{MS: 3800, StalledMS: 3812},
	New: func() Injector { return &gcStall{aimed: true} },
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

type gcStall struct{ aimed bool }

func (s *gcStall) kind() string {
	if s.aimed {
		return CoordGCStall
	}
	return GCStall
}

// holderNode is the node of the lowest-numbered pinned client holding a
// lock now, with the clients pinned there; the first pinned node when none
// holds. It is read at each stall: the holders change by the millisecond,
// and the stall's line records whom it was aimed at.
func holderNode(e *Env) (string, []int) {
	nodes, groups := coordGroups(e)
	node := nodes[0]
	if e.Clients != nil {
		holders := e.Clients.Holders()
		slices.Sort(holders)
		for _, c := range holders {
			if n, ok := e.Pins[c]; ok {
				node = n
				break
			}
		}
	}
	return node, groups[node]
}

func (s *gcStall) Start(ctx context.Context, e *Env, hold time.Duration) (Stop, error) {
	kind := s.kind()
	var t Target
	if !s.aimed {
		t = e.Targets[e.Sched.IntN(len(e.Targets))]
	}
	ts, err := e.givenTargets()
	if err != nil {
		return nil, err
	}
	v, _ := given[history.GCStallStart](e)
	gaps, stalls := plannedStalls(e, hold, v.MS)
	target := func() (Target, []int) {
		switch {
		case len(ts) > 0:
			return ts[0], v.Clients
		case !s.aimed:
			return t, nil
		}
		name, clients := holderNode(e)
		return e.Targets[slices.IndexFunc(e.Targets, func(t Target) bool { return t.Name == name })], clients
	}
	if s.aimed && e.Clients != nil && len(ts) == 0 {
		return burst(ctx, gaps, stalls, func(ctx context.Context, d time.Duration) error {
			return stallHoldersCoordinator(ctx, e, hold, d)
		})
	}
	return burst(ctx, gaps, stalls, func(ctx context.Context, d time.Duration) error {
		t, clients := target()
		sn, ok := t.Node.(StallNode)
		if !ok {
			return fmt.Errorf("nemesis: %s: node %s cannot stall its JVM", kind, t.Name)
		}
		nodes := []string{t.Name}
		ms := d.Milliseconds()
		// A stall begun is ended by the node itself; the harness waits it
		// out whatever ctx says, so that its stop line is written.
		if err := sn.StallJVM(ctx, d); err != nil {
			return fmt.Errorf("nemesis: %s %s: %w", kind, t.Name, err)
		}
		began := time.Now()
		rerr := e.Record(history.StartF(kind), history.GCStallStart{Clients: clients, MS: ms}, nodes)
		sleep(context.Background(), d-time.Since(began))
		// The node resumed its JVM itself; a SIGCONT from here confirms it
		// (a killed JVM has nothing to resume: not this fault's failure).
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		if err := t.Node.SignalJVM(cctx, "CONT"); err != nil {
			e.Log.Warn("nemesis: "+kind+": resume not confirmed", "node", t.Name, "err", err)
		}
		cancel()
		stalled := time.Since(began).Milliseconds()
		return errors.Join(rerr, e.Record(history.StopF(kind), history.GCStallStop{MS: ms, StalledMS: stalled}, nodes))
	})
}

// stallHoldersCoordinator waits (at most hold) for the next client to enter
// its critical section, between its read and its write, and stops the JVM
// of that client's coordinator before it goes on: its write goes to a
// stalled node, as a holder's does when its coordinator pauses for GC at
// the wrong moment. The client stands still only for the stop (the
// workload's pause hook, 1 ms, then the docker exec of the stop).
func stallHoldersCoordinator(ctx context.Context, e *Env, hold, d time.Duration) error {
	var (
		t       Target
		clients []int
		began   time.Time
	)
	err := atHoldersWrite(ctx, e, hold, CoordGCStall, func(node string, group []int) error {
		i := slices.IndexFunc(e.Targets, func(t Target) bool { return t.Name == node })
		t, clients = e.Targets[i], group
		sn, ok := t.Node.(StallNode)
		if !ok {
			return fmt.Errorf("nemesis: %s: node %s cannot stall its JVM", CoordGCStall, t.Name)
		}
		sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer scancel()
		err := sn.StallJVM(sctx, d)
		began = time.Now()
		return err
	})
	if err != nil {
		return err
	}
	nodes := []string{t.Name}
	ms := d.Milliseconds()
	rerr := e.Record(history.StartF(CoordGCStall), history.GCStallStart{Clients: clients, MS: ms}, nodes)
	sleep(context.Background(), d-time.Since(began))
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	if err := t.Node.SignalJVM(cctx, "CONT"); err != nil {
		e.Log.Warn("nemesis: "+CoordGCStall+": resume not confirmed", "node", t.Name, "err", err)
	}
	ccancel()
	return errors.Join(rerr, e.Record(history.StopF(CoordGCStall), history.GCStallStop{MS: ms, StalledMS: time.Since(began).Milliseconds()}, nodes))
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
