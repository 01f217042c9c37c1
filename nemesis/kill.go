package nemesis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Kill kills one node's Cassandra with SIGKILL and restarts it.
const Kill = "kill"

var killKind = Kind{
	Name: Kill, Scope: ScopeNode, Color: "#b07aa1",
	Doc:        "Kills one node's Cassandra with SIGKILL; the stop starts it again.",
	Needs:      []Capability{CapRestart},
	Restarts:   true,
	StartValue: KillValue{How: "kill -9"}, StopValue: KillValue{How: "restart"},
	New: func() Injector { return &kill{} },
}

// KillValue is the value of the start-kill and stop-kill lines.
type KillValue struct {
	How string `json:"how" doc:"kill -9 at the start, restart at the stop"`
}

type kill struct{}

func (*kill) Start(ctx context.Context, e *Env, _ time.Duration) (Stop, error) {
	t := e.Targets[e.Sched.IntN(len(e.Targets))]
	if ts, err := e.givenTargets(); err != nil {
		return nil, err
	} else if len(ts) > 0 {
		t = ts[0]
	}
	if err := t.Node.Kill(ctx); err != nil {
		return nil, fmt.Errorf("nemesis: kill %s: %w", t.Name, err)
	}
	if err := e.Record(history.StartF(Kill), KillValue{How: "kill -9"}, []string{t.Name}); err != nil {
		return nil, errors.Join(err, t.Node.Restart(context.WithoutCancel(ctx)))
	}
	return func(ctx context.Context) error {
		err := t.Node.Restart(ctx)
		return errors.Join(err, e.Record(history.StopF(Kill), KillValue{How: "restart"}, []string{t.Name}))
	}, nil
}

// Reset restarts a node whose container is not running.
func (*kill) Reset(ctx context.Context, e *Env, t Target) (bool, error) {
	return restartStopped(ctx, t)
}

// restartStopped starts a node whose container is not running (killed, or
// powered off) and says whether it had to.
func restartStopped(ctx context.Context, t Target) (bool, error) {
	st, err := t.Node.State(ctx)
	if err != nil {
		return false, err
	}
	if st == "running" || st == "paused" {
		return false, nil
	}
	if err := t.Node.Restart(ctx); err != nil {
		return false, err
	}
	return true, nil
}
