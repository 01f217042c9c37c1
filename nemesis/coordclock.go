package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lockcheck/lockcheck/faultkind"
	"github.com/lockcheck/lockcheck/history"
)

// CoordClock moves the clock of the coordinator serving the contenders ahead
// by more than a lease has left (more than the lease TTL): Cassandra
// computes a TTL's expiry from the coordinator's clock, so that node's
// IF NOT EXISTS finds a lease written through another node already expired
// while its holder still holds it. Aimed by the clients' pinning: the node
// chosen serves a client that holds nothing now and, where one does, none
// that holds.
const CoordClock = history.KindCoordClock

var coordClockKind = Kind{
	Name: CoordClock, Scope: ScopeNode, Color: "#9c755f",
	Doc: "Moves the clock of a coordinator serving contenders (and, where one can, no holder) ahead by more than the " +
		"lease TTL (the TTL plus 1-3 s, or --skew-min..--skew-max): an IF NOT EXISTS through it finds a held lease already expired.",
	Needs:      []Capability{CapClock},
	Pins:       true,
	StartValue: history.CoordClockStart{Clients: []int{2}, Holders: []int{0}, Lease: "3s", Node: "n3", Offset: "+4.997s"},
	StopValue:  history.CoordClockStop{Node: "n3"},
	Cause: &faultkind.Cause{Anomalies: []string{faultkind.Overlap, faultkind.StaleWrite, faultkind.LostAdd, faultkind.NonLinearizable},
		Explain: func(w history.FaultWindow, a faultkind.Anomaly) (string, bool) {
			v, ok := faultkind.Decode[history.CoordClockStart](w.Value)
			if !ok || v.Node == "" || v.Offset == "" {
				return "", false
			}
			return fmt.Sprintf("the lease expired on the server before the holder's deadline: node %s, the coordinator of %s, "+
				"ran %s ahead (coord-clock), more than a %s lease has left, so a conditional write through it (IF NOT EXISTS, IF col = null) "+
				"found the holder's row or cell already expired and granted the lock again", v.Node, faultkind.ClientList(v.Clients), faultkind.SecondsText(v.Offset), v.Lease), true
		}},
	New: func() Injector { return &coordClock{} },
}

type coordClock struct{}

func (c *coordClock) Start(ctx context.Context, e *Env, _ time.Duration) (Stop, error) {
	// Seconds, not minutes: Cassandra's timestamps stay ahead after the
	// reset until real time catches up (DEVELOPERS.md).
	ahead := e.LeaseTTL + time.Second + time.Duration(e.Sched.Int64N(int64(2*time.Second)))
	if e.CoordSkewMax > 0 {
		ahead = e.CoordSkewMin + time.Duration(e.Sched.Int64N(int64(e.CoordSkewMax-e.CoordSkewMin)+1))
	}
	ahead = ahead.Round(time.Millisecond)
	nodes, groups := coordGroups(e)
	holders := []int{}
	if e.Clients != nil {
		holders = e.Clients.Holders()
	}
	serves := func(n string, holding bool) bool {
		return slices.ContainsFunc(groups[n], func(c int) bool { return slices.Contains(holders, c) == holding })
	}
	// Best: contenders and no holder; then any contender; then any node.
	cands := slices.DeleteFunc(slices.Clone(nodes), func(n string) bool { return !serves(n, false) || serves(n, true) })
	if len(cands) == 0 {
		cands = slices.DeleteFunc(slices.Clone(nodes), func(n string) bool { return !serves(n, false) })
	}
	if len(cands) == 0 {
		cands = nodes
	}
	node := cands[e.Pick.IntN(len(cands))]
	if v, ok := given[history.CoordClockStart](e); ok && v.Node != "" {
		od, err := time.ParseDuration(v.Offset)
		if err != nil || !slices.Contains(nodes, v.Node) {
			return nil, fmt.Errorf("nemesis: schedule: coord-clock of node %s by %q: not a coordinator of this run, or no offset", v.Node, v.Offset)
		}
		node, ahead = v.Node, od
	}
	var t Target
	for _, x := range e.Targets {
		if x.Name == node {
			t = x
		}
	}
	if err := t.Node.SetClockOffset(ctx, ahead); err != nil {
		return nil, errors.Join(fmt.Errorf("nemesis: coord-clock of %s: %w", node, err), t.Node.SetClockOffset(context.WithoutCancel(ctx), 0))
	}
	value := history.CoordClockStart{Node: node, Clients: groups[node], Offset: "+" + ahead.String(), Lease: e.LeaseTTL.String(), Holders: holders}
	if err := e.Record(history.StartF(CoordClock), value, []string{node}); err != nil {
		return nil, errors.Join(err, t.Node.SetClockOffset(context.WithoutCancel(ctx), 0))
	}
	return func(ctx context.Context) error {
		err := t.Node.SetClockOffset(ctx, 0)
		if err != nil {
			err = fmt.Errorf("nemesis: coord-clock of %s: %w", node, err)
		}
		return errors.Join(err, e.Record(history.StopF(CoordClock), history.CoordClockStop{Node: node}, []string{node}))
	}, nil
}

// Reset sets the node's clock offset to 0 if it is not (as clock's reset).
func (c *coordClock) Reset(ctx context.Context, e *Env, t Target) (bool, error) {
	d, err := t.Node.ClockOffset(ctx)
	if err != nil || d == 0 {
		return false, err
	}
	return true, t.Node.SetClockOffset(ctx, 0)
}
