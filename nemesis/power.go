package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/faultkind"
	"github.com/lockcheck/lockcheck/history"
)

// PowerLoss cuts one node's power: every process of the node dies at once,
// and with it what the node had written but not fsynced (its lazy
// filesystem's memory, as a host's page cache); then the node starts again.
// Unlike kill, it can lose acknowledged writes, Paxos promises and accepts
// when the commitlog syncs periodically.
const PowerLoss = history.KindPowerLoss

// Only a node whose data lives on a lazy filesystem declares CapPower:
// without it a power cut loses nothing and is only a kill, and a run that
// called it power loss would claim more than it tested.
var powerLossKind = Kind{
	Name: PowerLoss, Scope: ScopeNode, Color: "#2f2f2f",
	Doc: "Cuts one node's power: every process of the node dies at once, and with it what the node had written but " +
		"not fsynced (its lazy filesystem's memory); the stop starts it again. Unlike kill, it can lose acknowledged " +
		"writes, Paxos promises and accepts when the commitlog syncs periodically.",
	Needs:      []Capability{CapPower, CapRestart},
	Restarts:   true,
	StartValue: history.PowerStart{How: "power off", UnsyncedBytes: map[string]int64{"n2": 4096}, UnsyncedFiles: map[string]int{"n2": 2}},
	StopValue:  history.PowerStop{How: "power on"},
	Cause:      &powerCause,
	New:        func() Injector { return &powerLoss{} },
}

// powerCause is the power kinds' (power-loss, rack-power-loss): forgotten
// acknowledged writes show as a lock row or fencing counter gone (a second
// holder, an old token again) and the resource's own rows gone (a lost
// add, a stale token accepted). What the loss threw away stays lost after
// the node is back: lasting.
var powerCause = faultkind.Cause{Lasting: true, Anomalies: []string{faultkind.Overlap, faultkind.StaleWrite, faultkind.LostAdd,
	faultkind.NonLinearizable, faultkind.Duplicate, faultkind.TokenOrder}, Explain: explainPower}

func explainPower(w history.FaultWindow, a faultkind.Anomaly) (string, bool) {
	v, ok := faultkind.Decode[history.PowerStart](w.Value)
	if !ok {
		return "", false
	}
	var nodes []string
	var lost int64
	for n, b := range v.UnsyncedBytes {
		nodes = append(nodes, n)
		lost += max(b, 0)
	}
	slices.Sort(nodes)
	return fmt.Sprintf("%s lost power at %.1f s (%s) holding %d bytes written and not yet fsynced: writes they had "+
		"acknowledged (lock rows, fencing counters, Paxos state, the resource's rows) were lost, so later operations "+
		"saw the lock as it had been before them", strings.Join(nodes, ", "), float64(w.Start)/1e9, w.Kind, lost), true
}

// PowerNode is a node whose power a fault can cut (cluster.Node implements
// it): the node action of CapPower.
type PowerNode interface {
	PowerOff(ctx context.Context) error
	// Unsynced is what a power loss now would throw away.
	Unsynced(ctx context.Context) (bytes int64, files int, err error)
}

type powerLoss struct{}

func (*powerLoss) Start(ctx context.Context, e *Env, _ time.Duration) (Stop, error) {
	t := e.Targets[e.Sched.IntN(len(e.Targets))]
	if ts, err := e.givenTargets(); err != nil {
		return nil, err
	} else if len(ts) > 0 {
		t = ts[0]
	}
	return cutPower(ctx, e, PowerLoss, []Target{t})
}

func (*powerLoss) Reset(ctx context.Context, e *Env, t Target) (bool, error) {
	return restartStopped(ctx, t)
}

// cutPower powers the targets off at once, records what they lose and
// returns the Stop that powers them on again.
func cutPower(ctx context.Context, e *Env, kind string, targets []Target) (Stop, error) {
	v := history.PowerStart{How: "power off", UnsyncedBytes: map[string]int64{}, UnsyncedFiles: map[string]int{}}
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
	// The run may end while the counts are read (docker execs take seconds
	// on a loaded machine): then nothing was cut and nothing is recorded.
	// Once the first kill is sent the cut has taken effect, so it finishes
	// and its line is written even if the run ends meanwhile: a cut the
	// run's end interrupted was dealt unrecorded (its lost adds blamed on
	// no fault).
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	errs := parallel(targets, func(t Target) error {
		p, ok := t.Node.(PowerNode)
		if !ok {
			return fmt.Errorf("node %s: no power to cut", t.Name)
		}
		return p.PowerOff(pctx)
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
		return errors.Join(err, e.Record(history.StopF(kind), history.PowerStop{How: "power on"}, names))
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
