package nemesis

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/faultkind"
	"github.com/lockcheck/lockcheck/history"
)

// DCPartition cuts the data centres of the cluster apart: every node of one
// drops what the nodes of the other send it (both ways), or only one side
// does (one way: the other side still hears it). The harness's clients keep
// reaching every node, as an application in each data centre keeps reaching
// its own. LWTs at LOCAL_SERIAL then run a Paxos round of each side's own
// replicas, and SERIAL finds no quorum across the cut on the side that has
// no majority of the replicas.
const DCPartition = history.KindDCPartition

var dcPartitionKind = Kind{
	Name: DCPartition, Scope: ScopeNode, Color: "#8c564b",
	Doc: "Cuts two data centres apart (a cluster of `cluster up --dcs 2`): both ways, or one way (the nodes of one " +
		"data centre drop what the other's send them, and the other still hears them); the clients keep reaching every node.",
	Needs:      []Capability{CapIPTables},
	Check:      needDCs,
	StartValue: history.DCPartitionStart{Mode: "both", DCs: map[string][]string{"dc1": {"n1", "n2"}, "dc2": {"n3", "n4"}}, Grudge: Grudge{"n1": {"n3", "n4"}, "n2": {"n3", "n4"}, "n3": {"n1", "n2"}, "n4": {"n1", "n2"}}},
	StopValue:  history.DCPartitionStop{Mode: "both"},
	// A grant one side made during the cut reaches the other side's
	// replicas only after it (hints, repair): lasting. Only the anomalies
	// of two grants: a stale write or a lost add is also what a write
	// slowed by the cut past its lease shows, at any consistency.
	Cause: &faultkind.Cause{Lasting: true, Anomalies: []string{faultkind.Overlap, faultkind.NonLinearizable, faultkind.Duplicate, faultkind.TokenOrder},
		Explain: func(w history.FaultWindow, a faultkind.Anomaly) (string, bool) {
			v, ok := faultkind.Decode[history.DCPartitionStart](w.Value)
			if !ok || len(v.DCs) < 2 {
				return "", false
			}
			var sides []string
			for _, dc := range slices.Sorted(maps.Keys(v.DCs)) {
				sides = append(sides, fmt.Sprintf("%s (%s)", dc, strings.Join(v.DCs[dc], ", ")))
			}
			how := "both ways"
			if v.Mode == "one-way" {
				how = "one way"
			}
			return fmt.Sprintf("data centres %s were cut apart (dc-partition, %s): an LWT at LOCAL_SERIAL runs its Paxos round "+
				"among its own data centre's replicas only, so a client in each data centre was granted the lock without "+
				"seeing the other's grant (SERIAL would have needed replicas across the cut)", strings.Join(sides, " and "), how), true
		}},
	New: func() Injector { return &dcPartition{} },
}

// dcsOf groups the targets by data centre, in the order they first appear.
func dcsOf(ts []Target) ([]string, map[string][]string) {
	var order []string
	nodes := map[string][]string{}
	for _, t := range ts {
		if t.DC == "" {
			continue
		}
		if _, ok := nodes[t.DC]; !ok {
			order = append(order, t.DC)
		}
		nodes[t.DC] = append(nodes[t.DC], t.Name)
	}
	return order, nodes
}

// needDCs refuses dc-partition on nodes of fewer than two data centres.
func needDCs(e *Env) error {
	if dcs, _ := dcsOf(e.Targets); len(dcs) < 2 {
		return errors.New("needs nodes in two data centres or more (`cluster up --nodes 4 --dcs 2`)")
	}
	return nil
}

type dcPartition struct{}

// dcGrudge draws one cut: two data centres (the first and another), both
// ways or one way (which side is deaf drawn too).
func dcGrudge(e *Env) (string, map[string][]string, Grudge) {
	order, nodes := dcsOf(e.Targets)
	a, b := order[0], order[1+e.Sched.IntN(len(order)-1)]
	mode := "both"
	if e.Sched.IntN(2) == 1 {
		mode = "one-way"
		if e.Sched.IntN(2) == 1 {
			a, b = b, a
		}
	}
	g := Grudge{}
	for _, x := range nodes[a] {
		g[x] = slices.Clone(nodes[b])
	}
	if mode == "both" {
		for _, y := range nodes[b] {
			g[y] = slices.Clone(nodes[a])
		}
	}
	return mode, map[string][]string{a: nodes[a], b: nodes[b]}, g
}

func (p *dcPartition) Start(ctx context.Context, e *Env, _ time.Duration) (Stop, error) {
	mode, dcs, g := "", map[string][]string(nil), Grudge(nil)
	if v, ok := given[history.DCPartitionStart](e); ok && len(v.Grudge) > 0 {
		mode, dcs, g = v.Mode, v.DCs, v.Grudge // a replay: the cut as it was
	} else {
		mode, dcs, g = dcGrudge(e)
	}
	c := chainOf(DCPartition)
	nodes, g, err := applyGrudge(ctx, e, c, g)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("nemesis: dc-partition: %w", err), removeChain(context.WithoutCancel(ctx), e, c))
	}
	if err := e.Record(history.StartF(DCPartition), history.DCPartitionStart{DCs: dcs, Grudge: g, Mode: mode}, nodes); err != nil {
		return nil, errors.Join(err, removeChain(context.WithoutCancel(ctx), e, c))
	}
	return func(ctx context.Context) error {
		err := removeChain(ctx, e, c)
		if err != nil {
			err = fmt.Errorf("nemesis: heal dc-partition: %w", err)
		}
		return errors.Join(err, e.Record(history.StopF(DCPartition), history.DCPartitionStop{Mode: mode}, nodes))
	}, nil
}

func (p *dcPartition) Reset(ctx context.Context, e *Env, t Target) (bool, error) {
	return resetChain(ctx, chainOf(DCPartition), t)
}
