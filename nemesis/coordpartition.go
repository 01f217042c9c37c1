package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/faultkind"
	"github.com/lockcheck/lockcheck/history"
)

// CoordPartition cuts one way the coordinator of one group of clients off
// from the other nodes, every client's link left whole: the other nodes drop
// what that node sends them (its messages travel on its own connections to
// their internode port), while it still hears them. Writes at ONE through
// that node then reach no other replica, so reads at ONE through the others
// do not see them, while its clients read the others' writes: bakery-one's
// stale read. The group is held between operations while the cut is made,
// so that the others' view of it is clean (no ticket of it frozen there)
// rather than wedged. Without pinning, token-aware routing sends every
// client's queries of a partition to one replica and nothing can split them.
const CoordPartition = history.KindCoordPartition

var coordPartitionKind = Kind{
	Name: CoordPartition, Scope: ScopeNode, Color: "#d37295",
	Doc: "Cuts one way the coordinator of one group of pinned clients off from the other nodes (they drop what it " +
		"sends to their internode port), every client's link left whole: writes at ONE through it reach no other replica.",
	Needs: []Capability{CapIPTables},
	Pins:  true,
	StartValue: history.CoordPartitionStart{AtRest: true, Clients: []int{1, 4}, Grudge: Grudge{"n1": {"n2"}, "n3": {"n2"}},
		Node: "n2", Others: map[string][]int{"n1": {0, 3}, "n3": {2}}, Port: InternodePort},
	StopValue: history.CoordPartitionStop{Node: "n2"},
	// The writes the cut kept from the other nodes stay missing there after
	// it, until hints or a read repair bring them: lasting. Only the
	// anomalies of two grants: a stale write or a lost add is also what a
	// write slowed by the cut past its lease shows, at any consistency
	// (the timeline's late write says that), and a lock at QUORUM or
	// SERIAL gets no second grant from the cut itself.
	Cause: &faultkind.Cause{Lasting: true, Anomalies: []string{faultkind.Overlap, faultkind.NonLinearizable, faultkind.Duplicate, faultkind.TokenOrder},
		Explain: func(w history.FaultWindow, a faultkind.Anomaly) (string, bool) {
			v, ok := faultkind.Decode[history.CoordPartitionStart](w.Value)
			if !ok || v.Node == "" {
				return "", false
			}
			var others []string
			for n, cs := range v.Others {
				others = append(others, fmt.Sprintf("%s (%s)", n, faultkind.ClientList(cs)))
			}
			slices.Sort(others)
			return fmt.Sprintf("node %s, the coordinator of %s, could not reach %s (coord-partition): a lock that writes or reads "+
				"at a weak consistency level (ONE) through it misses what the other side wrote (during the cut, and after it until "+
				"hints or a repair delivered it), so both sides can take the lock", v.Node, faultkind.ClientList(v.Clients), strings.Join(others, ", ")), true
		}},
	New: func() Injector { return &coordPartition{} },
}

// InternodePort is Cassandra's storage_port, where a node's own outbound
// connections (its requests and its responses) arrive.
const InternodePort = 7000

// restWait bounds how long the group takes to come to rest (an acquire
// that waits its timeout out, then its release).
const restWait = 15 * time.Second

type coordPartition struct{}

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
	if v, ok := given[history.CoordPartitionStart](e); ok && v.Node != "" {
		if !slices.Contains(nodes, v.Node) {
			return nil, fmt.Errorf("nemesis: the schedule cuts node %s, which coordinates no client of this run", v.Node)
		}
		alone = v.Node
	}
	// Every other node drops the cut node's internode traffic.
	g := Grudge{}
	for _, t := range e.Targets {
		if t.Name != alone {
			g[t.Name] = []string{alone}
		}
	}
	atRest := false
	if e.Clients != nil {
		rctx, cancel := context.WithTimeout(ctx, restWait)
		release, err := e.Clients.HoldAtRest(rctx, groups[alone])
		cancel()
		if err == nil {
			defer release()
			atRest = true
		} else if ctx.Err() != nil {
			return nil, err
		} else {
			e.Log.Warn("nemesis: coord-partition: clients not at rest, cutting anyway", "clients", groups[alone], "err", err)
		}
	}
	c := chainOf(CoordPartition)
	// The nodes one at a time would take seconds on a loaded machine (four
	// docker execs each) while the group waits at rest: applyGrudge cuts
	// them all at once.
	cut, g, err := applyGrudge(ctx, e, c, g, "-p", "tcp", "--dport", strconv.Itoa(InternodePort))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("nemesis: coord-partition: %w", err), removeChain(context.WithoutCancel(ctx), e, c))
	}
	otherClients := map[string][]int{}
	for _, n := range cut {
		if cs := groups[n]; len(cs) > 0 {
			otherClients[n] = cs
		}
	}
	value := history.CoordPartitionStart{Node: alone, Clients: groups[alone], Others: otherClients, Grudge: g,
		Port: InternodePort, AtRest: atRest}
	if err := e.Record(history.StartF(CoordPartition), value, cut); err != nil {
		return nil, errors.Join(err, removeChain(context.WithoutCancel(ctx), e, c))
	}
	return func(ctx context.Context) error {
		err := removeChain(ctx, e, c)
		if err != nil {
			err = fmt.Errorf("nemesis: heal coord-partition: %w", err)
		}
		return errors.Join(err, e.Record(history.StopF(CoordPartition), history.CoordPartitionStop{Node: alone}, cut))
	}, nil
}

func (p *coordPartition) Reset(ctx context.Context, e *Env, t Target) (bool, error) {
	return resetChain(ctx, chainOf(CoordPartition), t)
}
