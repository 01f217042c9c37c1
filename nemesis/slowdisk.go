package nemesis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// SlowDisk slows one node's disk for a window: every write and fsync of its
// lazy filesystem (`cluster up --lazyfs`: its data and commitlog live
// there) waits --disk-latency first. With the commitlog in batch mode every
// write (a Paxos promise, an accept, a commit) waits for its sync, so the
// node's answers come that much later.
const SlowDisk = history.KindSlowDisk

// CapDiskLatency is a node whose disk a fault can slow.
var slowDiskKind = Kind{
	Name: SlowDisk, Scope: ScopeNode, Color: "#9d7660",
	Doc: "Slows one node's disk for a window: every write and fsync of its lazy filesystem waits --disk-latency " +
		"(50-500 ms by default, uniform) first; with the commitlog in batch mode every write the node acknowledges " +
		"waits for it.",
	Needs:      []Capability{CapDiskLatency},
	StartValue: history.SlowDiskValue{LatencyMS: 200}, StopValue: history.SlowDiskValue{LatencyMS: 200},
	New: func() Injector { return &slowDisk{} },
}

// DiskNode is a node whose disk a fault can slow (cluster.Node implements
// it on a lazy filesystem): the node action of CapDiskLatency.
type DiskNode interface {
	// SetDiskLatency makes each write and fsync wait d (0: none), and
	// returns once it is in effect.
	SetDiskLatency(ctx context.Context, d time.Duration) error
	// DiskLatency is the latency in effect now, as the node says.
	DiskLatency(ctx context.Context) (time.Duration, error)
}

type slowDisk struct{}

func (*slowDisk) Start(ctx context.Context, e *Env, _ time.Duration) (Stop, error) {
	t := e.Targets[e.Sched.IntN(len(e.Targets))]
	lo, hi := e.Slow.DiskMin, e.Slow.DiskMax
	d := (lo + time.Duration(e.Sched.Float64()*float64(hi-lo))).Round(time.Millisecond)
	if ts, err := e.givenTargets(); err != nil {
		return nil, err
	} else if len(ts) > 0 {
		t = ts[0]
	}
	if v, ok := given[history.SlowDiskValue](e); ok && v.LatencyMS > 0 {
		d = time.Duration(v.LatencyMS) * time.Millisecond
	}
	dn, ok := t.Node.(DiskNode)
	if !ok {
		return nil, fmt.Errorf("nemesis: slow-disk: node %s cannot slow its disk", t.Name)
	}
	lift := func(ctx context.Context) error { return dn.SetDiskLatency(ctx, 0) }
	if err := dn.SetDiskLatency(ctx, d); err != nil {
		return nil, errors.Join(fmt.Errorf("nemesis: slow-disk %s: %w", t.Name, err), lift(context.WithoutCancel(ctx)))
	}
	v := history.SlowDiskValue{LatencyMS: d.Milliseconds()}
	nodes := []string{t.Name}
	if err := e.Record(history.StartF(SlowDisk), v, nodes); err != nil {
		return nil, errors.Join(err, lift(context.WithoutCancel(ctx)))
	}
	return func(ctx context.Context) error {
		err := lift(ctx)
		if err != nil {
			err = fmt.Errorf("nemesis: heal slow-disk %s: %w", t.Name, err)
		}
		return errors.Join(err, e.Record(history.StopF(SlowDisk), v, nodes))
	}, nil
}

// Reset lifts a latency the node's filesystem applies, whoever set it. A
// node that is down keeps its latency file and applies it when it starts:
// the next reset, once it runs, lifts it.
func (*slowDisk) Reset(ctx context.Context, e *Env, t Target) (bool, error) {
	dn, ok := t.Node.(DiskNode)
	if !ok {
		return false, nil
	}
	if st, err := t.Node.State(ctx); err != nil || st != "running" {
		return false, err
	}
	d, err := dn.DiskLatency(ctx)
	if err != nil || d == 0 {
		return false, err
	}
	return true, dn.SetDiskLatency(ctx, 0)
}
