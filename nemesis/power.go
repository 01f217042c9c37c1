package nemesis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// PowerLoss cuts one node's power: every process of the node dies at once,
// and with it what the node had written but not fsynced (its lazy
// filesystem's memory, as a host's page cache); then the node starts again.
// Unlike kill, it can lose acknowledged writes, Paxos promises and accepts
// when the commitlog syncs periodically.
const PowerLoss = "power-loss"

// PowerNode is a node whose power a fault can cut (cluster.Node implements
// it). Only a node whose data lives on a lazy filesystem loses anything.
type PowerNode interface {
	PowerOff(ctx context.Context) error
	// LazyFS says whether the node's data lives on the lazy filesystem.
	LazyFS() bool
	// Unsynced is what a power loss now would throw away.
	Unsynced(ctx context.Context) (bytes int64, files int, err error)
}

// needer is a kind that works only on nodes that have something others
// lack. `all` leaves such kinds out, and naming one on nodes without it is
// refused with the reason.
type needer interface {
	Needs(t Target) error
}

type powerLoss struct{}

func (*powerLoss) restartsNodes() {}
func (*powerLoss) Name() string   { return PowerLoss }
func (*powerLoss) Scope() Scope   { return ScopeNode }
func (*powerLoss) Color() string  { return "#2f2f2f" }

func (*powerLoss) Needs(t Target) error { return needsLazyFS(t) }

func (*powerLoss) Start(ctx context.Context, e *Env, _ time.Duration) (Stop, error) {
	return cutPower(ctx, e, PowerLoss, []Target{e.Targets[e.Sched.IntN(len(e.Targets))]})
}

func (*powerLoss) Reset(ctx context.Context, e *Env, t Target) (bool, error) {
	return restartStopped(ctx, t)
}

// needsLazyFS refuses a node whose power cut would lose nothing: without
// the lazy filesystem a power loss is only a kill, and a run that calls it
// power loss would claim more than it tested.
func needsLazyFS(t Target) error {
	if p, ok := t.Node.(PowerNode); ok && p.LazyFS() {
		return nil
	}
	return fmt.Errorf("node %s keeps no unsynced writes to lose (start the cluster with `lockcheck cluster up --lazyfs`)", t.Name)
}

// powerValue is the value of a power fault's start line: per node, what its
// lazy filesystem held unsynced when the power went (-1: unknown).
type powerValue struct {
	How           string           `json:"how"`
	UnsyncedBytes map[string]int64 `json:"unsynced_bytes"`
	UnsyncedFiles map[string]int   `json:"unsynced_files"`
}

// cutPower powers the targets off at once, records what they lose and
// returns the Stop that powers them on again.
func cutPower(ctx context.Context, e *Env, kind string, targets []Target) (Stop, error) {
	v := powerValue{How: "power off", UnsyncedBytes: map[string]int64{}, UnsyncedFiles: map[string]int{}}
	names := make([]string, len(targets))
	for i, t := range targets {
		names[i] = t.Name
		v.UnsyncedBytes[t.Name], v.UnsyncedFiles[t.Name] = -1, -1
		// Read just before the cut: the filesystem's status is at most a
		// quarter second old, a fair account of what the cut throws away.
		if p, ok := t.Node.(PowerNode); ok {
			if b, f, err := p.Unsynced(ctx); err == nil {
				v.UnsyncedBytes[t.Name], v.UnsyncedFiles[t.Name] = b, f
			}
		}
	}
	errs := parallel(targets, func(t Target) error {
		p, ok := t.Node.(PowerNode)
		if !ok {
			return fmt.Errorf("node %s: no power to cut", t.Name)
		}
		return p.PowerOff(ctx)
	})
	restart := func(ctx context.Context) error {
		return errors.Join(parallel(targets, func(t Target) error { return t.Node.Restart(ctx) })...)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, errors.Join(fmt.Errorf("nemesis: %s %v: %w", kind, names, err), restart(context.WithoutCancel(ctx)))
	}
	if err := e.Record(history.StartF(kind), v, names); err != nil {
		return nil, errors.Join(err, restart(context.WithoutCancel(ctx)))
	}
	return func(ctx context.Context) error {
		err := restart(ctx)
		return errors.Join(err, e.Record(history.StopF(kind), map[string]any{"how": "power on"}, names))
	}, nil
}

// parallel runs f on every target at once (a rack's nodes lose power
// together, a node takes a minute to start here, a cut goes in on every
// node at once) and returns each target's error.
func parallel(targets []Target, f func(Target) error) []error {
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() { errs[i] = f(t) })
	}
	wg.Wait()
	return errs
}
