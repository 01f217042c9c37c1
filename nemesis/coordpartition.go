package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// CoordPartition cuts the coordinator of one group of clients off from the
// other nodes, the clients' own links left whole: each side keeps serving
// its clients, so a write at ONE through one side is not seen by a read at
// ONE through the other (bakery-one's stale read). Without pinning, token
// aware routing sends every client's queries of a partition to one replica
// and no partition can split them.
const CoordPartition = "coord-partition"

type coordPartition struct{}

func (*coordPartition) Name() string     { return CoordPartition }
func (*coordPartition) Scope() Scope     { return ScopeNode }
func (*coordPartition) Color() string    { return "#d37295" }
func (*coordPartition) aim(e *Env) error { return needPins(e) }

// coordGroups are the pinned nodes in target order and each one's clients.
func coordGroups(e *Env) ([]string, map[string][]int) {
	groups := map[string][]int{}
	for c, n := range e.Pins {
		groups[n] = append(groups[n], c)
	}
	var nodes []string
	for _, t := range e.Targets {
		if cs, ok := groups[t.Name]; ok {
			slices.Sort(cs)
			nodes = append(nodes, t.Name)
		}
	}
	return nodes, groups
}

func (p *coordPartition) Start(ctx context.Context, e *Env, _ time.Duration) (Stop, error) {
	nodes, groups := coordGroups(e)
	alone := nodes[e.Sched.IntN(len(nodes))]
	g := Grudge{}
	var others []string
	for _, t := range e.Targets {
		if t.Name == alone {
			continue
		}
		others = append(others, t.Name)
		g[t.Name] = []string{alone}
		g[alone] = append(g[alone], t.Name)
	}
	slices.Sort(g[alone])
	c := chainOf(CoordPartition)
	cut, err := applyGrudge(ctx, e, c, g)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("nemesis: coord-partition: %w", err), removeChain(context.WithoutCancel(ctx), e, c))
	}
	otherClients := map[string][]int{}
	for _, n := range others {
		if cs := groups[n]; len(cs) > 0 {
			otherClients[n] = cs
		}
	}
	value := map[string]any{"node": alone, "clients": groups[alone], "others": otherClients, "grudge": g}
	if err := e.Record(history.StartF(CoordPartition), value, cut); err != nil {
		return nil, errors.Join(err, removeChain(context.WithoutCancel(ctx), e, c))
	}
	return func(ctx context.Context) error {
		err := removeChain(ctx, e, c)
		if err != nil {
			err = fmt.Errorf("nemesis: heal coord-partition: %w", err)
		}
		return errors.Join(err, e.Record(history.StopF(CoordPartition), map[string]any{"node": alone}, cut))
	}, nil
}

func (p *coordPartition) Reset(ctx context.Context, e *Env, t Target) (bool, error) {
	return resetChain(ctx, chainOf(CoordPartition), t)
}
