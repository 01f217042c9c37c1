package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Pause freezes one node: the whole container (docker pause) or only its
// JVM (SIGSTOP, like a long GC pause), drawn at random.
const Pause = "pause"

var pauseKind = Kind{
	Name: Pause, Scope: ScopeNode, Color: "#4e79a7",
	Doc:        "Freezes one node: the whole container (docker pause) or only its JVM (SIGSTOP, like a long GC pause), drawn at random; a container pause the cgroup freezer refuses (it can on a busy machine) stops the JVM instead.",
	Needs:      []Capability{CapSignals},
	StartValue: PauseValue{How: "jvm"}, StopValue: PauseValue{How: "jvm"},
	New: func() Injector { return &pause{} },
}

// PauseValue is the value of the start-pause and stop-pause lines.
type PauseValue struct {
	How string `json:"how" doc:"docker (the container frozen) or jvm (the JVM SIGSTOPped, SIGCONT at the stop)"`
}

type pause struct{}

func (*pause) Start(ctx context.Context, e *Env, _ time.Duration) (Stop, error) {
	t := e.Targets[e.Sched.IntN(len(e.Targets))]
	jvm := e.Sched.IntN(2) == 0
	if ts, err := e.givenTargets(); err != nil {
		return nil, err
	} else if len(ts) > 0 {
		t = ts[0]
	}
	v, chosen := given[PauseValue](e)
	chosen = chosen && v.How != ""
	if chosen {
		jvm = v.How == "jvm"
	}
	how := func() string {
		if jvm {
			return "jvm"
		}
		return "docker"
	}
	resume := func(ctx context.Context) error {
		// A kill overlapping the pause on this node ended the freeze with
		// its process (a killed container is not paused, and the kill's
		// restart starts it thawed): nothing is left to resume.
		thaw := func() error {
			if jvm {
				return t.Node.SignalJVM(ctx, "CONT")
			}
			return t.Node.Unpause(ctx)
		}
		st, err := t.Node.State(ctx)
		switch {
		case err != nil:
			// Not known: resumed as if nothing had ended it.
			if rerr := thaw(); rerr != nil {
				return errors.Join(err, rerr)
			}
			return nil
		case st == "paused" || jvm && st == "running":
			return thaw()
		}
		return nil
	}
	freeze := func() error {
		var err error
		if jvm {
			err = t.Node.SignalJVM(ctx, "STOP")
		} else {
			err = t.Node.Pause(ctx)
		}
		if err != nil {
			// A pause that failed may have half happened: undo it at
			// once, best effort.
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			_ = resume(uctx)
		}
		return err
	}
	err := freeze()
	if err != nil && !jvm && !chosen && ctx.Err() == nil {
		// The cgroup freezer times out on a busy machine ("unable to
		// freeze"): a drawn container pause that fails stops the JVM
		// instead, so that the run still freezes a node (a run at
		// load 28 lost its only pause to it) and records what it did.
		e.Log.Warn("nemesis: docker pause failed, stopping the JVM instead", "node", t.Name, "err", err)
		jvm = true
		if jerr := freeze(); jerr != nil {
			jvm = false
			err = errors.Join(err, jerr)
		} else {
			err = nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("nemesis: pause %s (%s): %w", t.Name, how(), err)
	}
	if err := e.Record(history.StartF(Pause), PauseValue{How: how()}, []string{t.Name}); err != nil {
		return nil, errors.Join(err, resume(context.WithoutCancel(ctx)))
	}
	return func(ctx context.Context) error {
		return errors.Join(resume(ctx), e.Record(history.StopF(Pause), PauseValue{How: how()}, []string{t.Name}))
	}, nil
}

// Reset resumes a paused container and a stopped JVM (any java process in
// state T: the pid file is the cluster's business).
func (*pause) Reset(ctx context.Context, e *Env, t Target) (bool, error) {
	st, err := t.Node.State(ctx)
	if err != nil {
		return false, err
	}
	healed := false
	switch st {
	case "paused":
		if err := t.Node.Unpause(ctx); err != nil {
			return false, err
		}
		healed = true
	case "running":
	default:
		return false, nil // not running: the kill reset restarts it, unfrozen
	}
	out, err := t.Node.Exec(ctx, "ps", "-o", "stat=", "-C", "java")
	if err != nil && strings.TrimSpace(out) != "" {
		return healed, fmt.Errorf("ps: %w", err)
	}
	for _, stat := range strings.Fields(out) {
		if strings.HasPrefix(stat, "T") {
			if err := t.Node.SignalJVM(ctx, "CONT"); err != nil {
				return healed, err
			}
			return true, nil
		}
	}
	return healed, nil
}
