package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Partition cuts nodes off from each other, or the harness's clients off
// from nodes, with iptables drops (grudges as in Jepsen).
const Partition = "partition"

var partitionKind = Kind{
	Name: Partition, Scope: ScopeNode, Color: "#f28e2b",
	Doc: "Cuts nodes off from each other, or the harness's clients off from a minority of nodes, with iptables drops " +
		"(Jepsen's grudges: isolate one node, halves, a majorities ring, a bridge, clients).",
	Needs:      []Capability{CapIPTables},
	StartValue: PartitionStart{Kind: "isolate", Grudge: Grudge{"n1": {"n2", "n3"}, "n2": {"n1"}, "n3": {"n1"}}},
	StopValue:  PartitionStop{Kind: "isolate"},
	New:        func() Injector { return &partition{} },
}

// PartitionStart is the value of a start-partition line.
type PartitionStart struct {
	Grudge Grudge `json:"grudge" doc:"per node, the nodes it drops packets from (\"clients\": the harness's gateway)"`
	Kind   string `json:"kind" doc:"isolate, halves, ring, bridge or clients"`
}

// PartitionStop is the value of a stop-partition line.
type PartitionStop struct {
	Kind string `json:"kind" doc:"as at the start"`
}

type partition struct{}

// partitionGrudge draws a partition of nodes 0..n-1 (names from names).
func partitionGrudge(r *rand.Rand, names []string, gateway bool) (string, Grudge) {
	n := len(names)
	perm := r.Perm(n)
	g := Grudge{}
	cut := func(a, b int) { // symmetric
		g[names[a]] = append(g[names[a]], names[b])
		g[names[b]] = append(g[names[b]], names[a])
	}
	kinds := []string{"isolate", "halves", "ring", "bridge"}
	if gateway {
		kinds = append(kinds, "clients")
	}
	if n < 2 {
		kinds = []string{"clients"}
		if !gateway {
			return "none", g
		}
	}
	kind := kinds[r.IntN(len(kinds))]
	switch kind {
	case "isolate": // one node against the rest
		for _, j := range perm[1:] {
			cut(perm[0], j)
		}
	case "halves": // a random minority against a majority
		k := n / 2
		for _, a := range perm[:k] {
			for _, b := range perm[k:] {
				cut(a, b)
			}
		}
	case "ring":
		// Majorities ring: node perm[i] hears only from the floor(n/2)
		// nodes that follow it in a ring, so each sees a majority (itself
		// included) but no two see the same majority. Asymmetric.
		for i := range n {
			hears := map[int]bool{}
			for d := 1; d <= n/2; d++ {
				hears[perm[(i+d)%n]] = true
			}
			for j := range n {
				if j != perm[i] && !hears[j] {
					g[names[perm[i]]] = append(g[names[perm[i]]], names[j])
				}
			}
		}
	case "bridge":
		// Two halves that each talk to one bridge node but not to each other.
		// perm[0] is the bridge: it is cut from nobody.
		rest := perm[1:]
		h := max(1, len(rest)/2)
		for _, x := range rest[:h] {
			for _, y := range rest[h:] {
				cut(x, y)
			}
		}
	case "clients":
		// Cut the harness's clients off from a minority (at least one node).
		k := max(1, (n-1)/2)
		for _, j := range perm[:k] {
			g[names[j]] = append(g[names[j]], GatewayName)
		}
	}
	for k := range g {
		slices.Sort(g[k])
	}
	return kind, g
}

func (p *partition) Start(ctx context.Context, e *Env, _ time.Duration) (Stop, error) {
	names := make([]string, len(e.Targets))
	for i, t := range e.Targets {
		names[i] = t.Name
	}
	kind, g := partitionGrudge(e.Sched, names, e.Gateway != "")
	if v, ok := given[PartitionStart](e); ok && v.Grudge != nil {
		kind, g = v.Kind, v.Grudge
	}
	c := chainOf(Partition)
	nodes, g, err := applyGrudge(ctx, e, c, g)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("nemesis: partition: %w", err), removeChain(context.WithoutCancel(ctx), e, c))
	}
	if err := e.Record(history.StartF(Partition), PartitionStart{Kind: kind, Grudge: g}, nodes); err != nil {
		return nil, errors.Join(err, removeChain(context.WithoutCancel(ctx), e, c))
	}
	return func(ctx context.Context) error {
		err := removeChain(ctx, e, c)
		if err != nil {
			err = fmt.Errorf("nemesis: heal partition: %w", err)
		}
		return errors.Join(err, e.Record(history.StopF(Partition), PartitionStop{Kind: kind}, nodes))
	}, nil
}

func (p *partition) Reset(ctx context.Context, e *Env, t Target) (bool, error) {
	return resetChain(ctx, chainOf(Partition), t)
}
