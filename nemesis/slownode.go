package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// SlowNode starves one node of CPU for a window: its processes together
// get a small share of one core (a cgroup CPU quota), as an overloaded
// coordinator does. It answers, late: every request it coordinates or
// serves as a replica takes many times longer, a write sent inside a
// lease can land after it.
const SlowNode = history.KindSlowNode

// CoordSlowNode is slow-node aimed at the coordinator of one group of
// pinned clients (`run --pin-clients`), as coord-partition is aimed: every
// request of those clients goes through the starved node.
const CoordSlowNode = history.KindCoordSlowNode

// CapCPU is a node whose CPU a fault can throttle.
var slowNodeKind = Kind{
	Name: SlowNode, Scope: ScopeNode, Color: "#b07aa1",
	Doc: "Starves one node of CPU for a window: its processes together get a small share of one core (a cgroup CPU " +
		"quota, --slow-cpu, 2-10 % by default), as an overloaded coordinator: it answers, many times slower, and a write " +
		"sent inside a lease can land after it.",
	Needs:      []Capability{CapCPU},
	StartValue: history.SlowNodeStart{CPU: 0.05}, StopValue: history.SlowNodeStop{CPU: 0.05},
	New: func() Injector { return &slowNode{} },
}

var coordSlowNodeKind = Kind{
	Name: CoordSlowNode, Scope: ScopeNode, Color: "#9c6b91",
	Doc: "Starves the coordinator of one group of pinned clients of CPU for a window, as slow-node: every request of " +
		"those clients goes through the overloaded node.",
	Needs:      []Capability{CapCPU},
	Pins:       true,
	StartValue: history.CoordSlowNodeStart{Clients: []int{1, 4}, CPU: 0.05, Node: "n2"},
	StopValue:  history.SlowNodeStop{CPU: 0.05},
	New:        func() Injector { return &slowNode{aimed: true} },
}

// CPUNode is a node whose CPU a fault can throttle (cluster.Node implements
// it): the node action of CapCPU.
type CPUNode interface {
	// SetCPUQuota limits the node's processes to share of one core
	// together; 0 lifts the limit.
	SetCPUQuota(ctx context.Context, share float64) error
	// CPUQuota is the node's limit now, as the node says (0: none).
	CPUQuota(ctx context.Context) (float64, error)
}

type slowNode struct{ aimed bool }

func (s *slowNode) kind() string {
	if s.aimed {
		return CoordSlowNode
	}
	return SlowNode
}

func (s *slowNode) Start(ctx context.Context, e *Env, hold time.Duration) (Stop, error) {
	var t Target
	var clients []int
	if s.aimed {
		nodes, groups := coordGroups(e)
		name := nodes[e.Sched.IntN(len(nodes))]
		if v, ok := given[history.CoordSlowNodeStart](e); ok && v.Node != "" {
			if !slices.Contains(nodes, v.Node) {
				return nil, fmt.Errorf("nemesis: the schedule slows node %s, which coordinates no client of this run", v.Node)
			}
			name = v.Node
		}
		t = e.Targets[slices.IndexFunc(e.Targets, func(t Target) bool { return t.Name == name })]
		clients = groups[name]
	} else {
		t = e.Targets[e.Sched.IntN(len(e.Targets))]
		if ts, err := e.givenTargets(); err != nil {
			return nil, err
		} else if len(ts) > 0 {
			t = ts[0]
		}
	}
	share := roundShare(logUniformF(e.Sched, e.Slow.CPUMin, e.Slow.CPUMax))
	if v, ok := given[history.SlowNodeStart](e); ok && v.CPU > 0 {
		share = v.CPU
	}
	if share < minCPU || share > 1 {
		return nil, fmt.Errorf("nemesis: %s: CPU share %g: want %g..1", s.kind(), share, minCPU)
	}
	var lift func(context.Context) error
	starve := func() error {
		c, ok := t.Node.(CPUNode)
		if !ok {
			return fmt.Errorf("nemesis: %s: node %s cannot throttle its CPU", s.kind(), t.Name)
		}
		lift = func(ctx context.Context) error { return c.SetCPUQuota(ctx, 0) }
		if err := c.SetCPUQuota(ctx, share); err != nil {
			return errors.Join(fmt.Errorf("nemesis: %s %s: %w", s.kind(), t.Name, err), lift(context.WithoutCancel(ctx)))
		}
		return nil
	}
	if s.aimed && aimsAtWrite(e) {
		// The share drawn above; the node is the coordinator of the next
		// holder to write, starved before that write is sent.
		err := atHoldersWrite(ctx, e, hold, s.kind(), func(node string, cs []int) error {
			t = e.Targets[slices.IndexFunc(e.Targets, func(t Target) bool { return t.Name == node })]
			clients = cs
			return starve()
		})
		if err != nil {
			return nil, err
		}
	} else if err := starve(); err != nil {
		return nil, err
	}
	var value any = history.SlowNodeStart{CPU: share}
	if s.aimed {
		value = history.CoordSlowNodeStart{Clients: clients, CPU: share, Node: t.Name}
	}
	if err := e.Record(history.StartF(s.kind()), value, []string{t.Name}); err != nil {
		return nil, errors.Join(err, lift(context.WithoutCancel(ctx)))
	}
	return func(ctx context.Context) error {
		err := lift(ctx)
		if err != nil {
			err = fmt.Errorf("nemesis: heal %s %s: %w", s.kind(), t.Name, err)
		}
		return errors.Join(err, e.Record(history.StopF(s.kind()), history.SlowNodeStop{CPU: share}, []string{t.Name}))
	}, nil
}

// Reset lifts a CPU quota the node has, whoever set it.
func (s *slowNode) Reset(ctx context.Context, e *Env, t Target) (bool, error) {
	c, ok := t.Node.(CPUNode)
	if !ok {
		return false, nil
	}
	share, err := c.CPUQuota(ctx)
	if err != nil || share == 0 {
		return false, err
	}
	return true, c.SetCPUQuota(ctx, 0)
}

// roundShare keeps a share to the thousandth of a core the history shows.
func roundShare(f float64) float64 { return math.Round(f*1000) / 1000 }
