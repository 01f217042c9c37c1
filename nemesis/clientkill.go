package nemesis

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lockcheck/lockcheck/faultkind"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/spec"
)

// ClientKill kills a client's process while it holds the lock or has an
// acquire or release in flight, and starts a fresh one after a restart
// delay.
const ClientKill = history.KindClientKill

// Targets of client-kill (run --kill-target): what the killed client is
// doing when it dies.
const (
	KillTargetAny     = spec.DefaultKillTarget
	KillTargetHold    = "hold"
	KillTargetAcquire = "acquire"
	KillTargetRelease = "release"
)

// KillTargets are client-kill's targets, the default first.
var KillTargets = []string{KillTargetAny, KillTargetHold, KillTargetAcquire, KillTargetRelease}

// DefaultClientKillRestart is how long a killed client stays down before a
// fresh process of it starts: about what a supervisor takes to restart a
// crashed application instance.
const DefaultClientKillRestart = spec.DefaultKillRestart

// clientKillWait is how long a client-kill waits at least for a client to
// reach its target (a release comes only after an acquire, which blocks up
// to its time-out).
const clientKillWait = 15 * time.Second

// killInFlightMax bounds the time an acquire or release is in flight before
// the kill lands (drawn uniformly below it): long enough that the request
// was sent, short enough that it was not answered yet on a loaded machine.
const killInFlightMax = 50 * time.Millisecond

var clientKillKind = Kind{
	Name: ClientKill, Scope: ScopeClient, Color: "#b07aa1",
	Doc: "Kills a client's process (SIGKILL; a plug-in's whole process group; an in-process Go client's operation in flight " +
		"is cancelled and its lock object dropped) while it holds the lock or has an acquire or release in flight " +
		"(run --kill-target: any, hold, acquire, release), then starts a fresh process of that client after the restart delay " +
		"(run --kill-restart), as a restarted application instance would: a new process number, a new owner. The killed " +
		"process never releases what it held: a lock with no TTL stays held. Not in `all`.",
	StartValue: history.ClientKillStart{Client: 2, InFlight: KillTargetHold, Lock: "l0", Process: 7, RestartMS: 2000},
	StopValue:  history.ClientKillStop{Client: 2, DownMS: 2004, Process: 12},
	Check:      checkClientKill,
	// A killed process never releases what it held: lasting.
	Cause: &faultkind.Cause{Lasting: true, Anomalies: []string{faultkind.StuckLock, faultkind.Overlap, faultkind.NonLinearizable, faultkind.StaleWrite},
		Explain: func(w history.FaultWindow, a faultkind.Anomaly) (string, bool) {
			v, ok := faultkind.Decode[history.ClientKillStart](w.Value, "process")
			if !ok {
				return "", false
			}
			if len(a.Processes) > 0 && !slices.Contains(a.Processes, v.Process) && a.Kind == faultkind.StuckLock {
				return "", false
			}
			what := "holding the lock"
			if v.InFlight != "" && v.InFlight != "hold" {
				what = "with its " + v.InFlight + " in flight"
			}
			s := fmt.Sprintf("client %d's process %d was killed %s at %s (client-kill) and never released %s; a fresh process of the client started %.1f s later as a new owner",
				v.Client, v.Process, what, faultkind.Secs(w.Start), v.Lock, float64(v.RestartMS)/1000)
			if a.Kind == faultkind.StuckLock {
				return s + ": a lock with no TTL stays held by the dead process until someone frees it by hand", true
			}
			return s + ": a request the dead process sent can still land after the lock was handed over", true
		}},
	New: func() Injector { return &clientKill{} },
}

// CheckClientKill refuses a restart delay or target that makes no sense:
// the one line a run says before anything starts.
func CheckClientKill(restart time.Duration, target string) error {
	if restart < 0 {
		return fmt.Errorf("client-kill: the restart delay %v is negative", restart)
	}
	if target != "" && !slices.Contains(KillTargets, target) {
		return fmt.Errorf("client-kill: unknown target %q (want one of %v)", target, KillTargets)
	}
	return nil
}

func checkClientKill(e *Env) error { return CheckClientKill(e.KillRestart, e.KillTarget) }

// WithClientKill sets client-kill's restart delay and target (default: a
// restart at once, any target).
func WithClientKill(restart time.Duration, target string) Option {
	return func(n *Nemesis) { n.env.KillRestart, n.env.KillTarget = restart, target }
}

type clientKill struct{}

// Start kills the next client to reach the target. Its draws come first:
// how long an operation is in flight before the kill lands. The start line
// is written as the kill lands, before the killed operation's completion;
// the stop line as the fresh process starts, in the client's goroutine,
// before any operation of the fresh process.
func (*clientKill) Start(ctx context.Context, e *Env, hold time.Duration) (Stop, error) {
	delay := time.Duration(e.Sched.Int64N(int64(killInFlightMax)))
	restart, target := e.KillRestart, e.KillTarget
	if v, ok := given[history.ClientKillStart](e); ok {
		// A replay kills at the same point, down as long.
		restart, target = time.Duration(v.RestartMS)*time.Millisecond, v.InFlight
	}
	if err := CheckClientKill(restart, target); err != nil {
		return nil, fmt.Errorf("nemesis: %w", err)
	}
	wait := max(hold, clientKillWait)
	kctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	recorded := make(chan error, 1)
	killed := func(v history.ClientKillStart) error { return e.Record(history.StartF(ClientKill), v, nil) }
	restarted := func(v history.ClientKillStop) { recorded <- e.Record(history.StopF(ClientKill), v, nil) }
	v, _, err := e.Clients.KillClient(kctx, -1, target, restart, delay, killed, restarted)
	if err != nil {
		return nil, fmt.Errorf("nemesis: client kill: no client reached %q within %v: %w", target, wait, err)
	}
	return func(ctx context.Context) error {
		select {
		case err := <-recorded:
			return err
		case <-ctx.Done():
			return fmt.Errorf("nemesis: client kill: client %d did not restart: %w", v.Client, ctx.Err())
		}
	}, nil
}

// Reset has nothing to do: a killed client restarts on its own, and no
// process of a run outlives it.
func (*clientKill) Reset(ctx context.Context, e *Env, _ Target) (bool, error) { return false, nil }
