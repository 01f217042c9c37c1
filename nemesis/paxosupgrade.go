package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/faultkind"
	"github.com/lockcheck/lockcheck/history"
)

// PaxosUpgrade switches a running cluster from Paxos v1 to v2 the way an
// operator does (docs/notes-on-cassandra.md, "Paxos v1 to v2 on a running
// cluster"): node by node, each node's cassandra.yaml first and then the
// running node, live through its StorageProxy MBean or by a rolling restart
// (drain, stop, start); the clients keep running, so for a while the
// coordinators run both variants; once every node runs v2, a Paxos repair
// (nodetool repair --paxos-only) from every node; then the path's last
// step, paxos_state_purging from legacy to repaired node by node (the same
// way: live through the StorageService MBean, or a rolling restart), which
// Cassandra allows only once every node runs v2 and wants Paxos repairs
// run regularly after, so a Paxos repair from every node again. The change
// is one-way:
// the window's stop records what was done and undoes nothing, and the
// run's heal leaves the nodes on v2. The next run's leftover heal
// (HealLeftovers, which calls Revert) puts the cluster's own variant back
// and records that it did.
const PaxosUpgrade = "paxos-upgrade"

// The ways a node is switched (PaxosUpgradeStart.How).
const (
	UpgradeLive    = "live"
	UpgradeRestart = "restart"
)

var paxosUpgradeKind = Kind{
	Name: PaxosUpgrade, Scope: ScopeNode, Color: "#637939",
	Doc: "Switches paxos_variant from v1 to v2 node by node while the clients run (cassandra.yaml, then the node: live " +
		"through its StorageProxy MBean or by a rolling restart), runs a Paxos repair from every node, then switches " +
		"paxos_state_purging from legacy to repaired node by node the same way and repairs Paxos from every node again " +
		"(the documented path's steps); one-way: the stop records what was done, and the next run's heal switches the " +
		"cluster back (recorded).",
	Needs:      []Capability{CapPaxosUpgrade},
	Restarts:   true,
	StopWait:   paxosUpgradeWait,
	OneWay:     true,
	StartValue: PaxosUpgradeStart{From: "v1", How: UpgradeRestart, Order: []string{"n2", "n1", "n3"}, PurgingFrom: "legacy", PurgingTo: "repaired", To: "v2"},
	StopValue: PaxosUpgradeStop{MS: 148000, Purged: []string{"n2", "n1", "n3"},
		Purgings: map[string]string{"n1": "repaired", "n2": "repaired", "n3": "repaired"},
		Repaired: []string{"n2", "n1", "n3"}, RepairedAfter: []string{"n2", "n1", "n3"}, Switched: []string{"n2", "n1", "n3"},
		Variants: map[string]string{"n1": "v2", "n2": "v2", "n3": "v2"}},
	Cause: &faultkind.Cause{Anomalies: faultkind.TwoGrants, Explain: explainUpgrade},
	New:   func() Injector { return &paxosUpgrade{} },
}

// PaxosUpgradeStart is the value of a start-paxos-upgrade line.
type PaxosUpgradeStart struct {
	From        string   `json:"from" doc:"the variant the nodes ran before (the cluster's)"`
	How         string   `json:"how" doc:"live: each node's MBean (StorageProxy for the variant, StorageService for the purging); restart: nodetool drain, a clean stop and a start (cassandra.yaml switched first either way)"`
	Order       []string `json:"order" doc:"the nodes in the order they are switched"`
	PurgingFrom string   `json:"purging_from,omitempty" doc:"the paxos_state_purging the nodes ran before (the cluster's); absent, with purging_to, in histories whose windows did not switch it"`
	PurgingTo   string   `json:"purging_to,omitempty" doc:"the paxos_state_purging they are switched to once every node runs the new variant and was repaired (repaired); absent: not switched"`
	To          string   `json:"to" doc:"the variant they are switched to"`
}

// PaxosUpgradeStop is the value of a stop-paxos-upgrade line.
type PaxosUpgradeStop struct {
	Error         string            `json:"error,omitempty" doc:"what failed, when a switch or a repair did"`
	MS            int64             `json:"ms" doc:"how long the switches and repairs took, in milliseconds"`
	Purged        []string          `json:"purged,omitempty" doc:"the nodes whose paxos_state_purging was switched, in order (a node already on it is not)"`
	Purgings      map[string]string `json:"purgings,omitempty" doc:"each node's paxos_state_purging after the window, as the node reports it (its MBean); absent when the window did not switch it"`
	Repaired      []string          `json:"repaired" doc:"the nodes a Paxos repair (nodetool repair --paxos-only) ran from to its end, after the variant's switch"`
	RepairedAfter []string          `json:"repaired_after,omitempty" doc:"the nodes a Paxos repair ran from to its end after the purging's switch"`
	Switched      []string          `json:"switched" doc:"the nodes switched, in order (a node already on the target variant is not)"`
	Variants      map[string]string `json:"variants" doc:"each node's variant after the window, as the node reports it (its MBean)"`
}

// PaxosNode is a node whose Paxos variant can be switched while it runs
// (cluster.Node implements it): the node action of CapPaxosUpgrade.
type PaxosNode interface {
	// PaxosVariant is the variant the node runs now and the one its
	// configuration names (what it starts with).
	PaxosVariant(ctx context.Context) (live, file string, err error)
	// StartedPaxos is the variant the cluster was started with.
	StartedPaxos() string
	// SetPaxosVariant switches the node's configuration and then the
	// running node, live or by a restart; it returns when the node runs
	// the variant (and, restarted, serves CQL).
	SetPaxosVariant(ctx context.Context, variant string, restart bool) error
	// RepairPaxos runs a Paxos repair of the run's keyspace from the node.
	RepairPaxos(ctx context.Context) error
	// PaxosStatePurging is the paxos_state_purging the node runs now and
	// the one its configuration names.
	PaxosStatePurging(ctx context.Context) (live, file string, err error)
	// StartedPurging is the paxos_state_purging the cluster was started
	// with.
	StartedPurging() string
	// SetPaxosStatePurging switches the node's configuration and then the
	// running node, live or by a restart.
	SetPaxosStatePurging(ctx context.Context, mode string, restart bool) error
}

// purgingTarget is the paxos_state_purging the window ends the path with:
// repaired, the mode Cassandra recommends once Paxos repairs run.
const purgingTarget = "repaired"

// paxosUpgradeWait bounds one window's switches and repairs, and so its
// stop (Kind.StopWait): two rounds of three restarts of a minute or two
// each on a loaded machine, and two rounds of repairs. The restart bound
// of one node's (restartStopTimeout) cut a 4.1 cluster's rolling restarts
// short in the purging's round (docs/notes-on-cassandra.md).
const paxosUpgradeWait = 16 * time.Minute

type paxosUpgrade struct{}

func paxosOf(t Target) (PaxosNode, error) {
	p, ok := t.Node.(PaxosNode)
	if !ok {
		return nil, fmt.Errorf("node %s cannot switch its Paxos variant", t.Name)
	}
	return p, nil
}

func (*paxosUpgrade) Start(ctx context.Context, e *Env, hold time.Duration) (Stop, error) {
	if len(e.Targets) == 0 {
		return nil, fmt.Errorf("nemesis: %s: no nodes", PaxosUpgrade)
	}
	// Every draw before anything that waits: how, and the order.
	how := []string{UpgradeLive, UpgradeRestart}[e.Sched.IntN(2)]
	var order []Target
	for _, i := range e.Sched.Perm(len(e.Targets)) {
		order = append(order, e.Targets[i])
	}
	purgeTo := purgingTarget
	if v, ok := given[PaxosUpgradeStart](e); ok {
		// A replay: the history's way and order, and its purging switch
		// (none in a history whose windows did not make it).
		if v.How == UpgradeLive || v.How == UpgradeRestart {
			how = v.How
		}
		purgeTo = v.PurgingTo
		if len(v.Order) > 0 {
			order = order[:0]
			for _, n := range v.Order {
				i := slices.IndexFunc(e.Targets, func(t Target) bool { return t.Name == n })
				if i < 0 {
					return nil, fmt.Errorf("nemesis: %s: the schedule names node %q, which this cluster does not have", PaxosUpgrade, n)
				}
				order = append(order, e.Targets[i])
			}
		}
	}
	nodes := make([]PaxosNode, len(order))
	names := make([]string, len(order))
	for i, t := range order {
		p, err := paxosOf(t)
		if err != nil {
			return nil, err
		}
		nodes[i], names[i] = p, t.Name
	}
	from := nodes[0].StartedPaxos()
	start := PaxosUpgradeStart{From: from, How: how, Order: names, To: "v2"}
	if purgeTo != "" {
		start.PurgingFrom, start.PurgingTo = nodes[0].StartedPurging(), purgeTo
	}
	if err := e.Record(history.StartF(PaxosUpgrade), start, names); err != nil {
		return nil, err
	}
	// The switches run on their own: a window of restarts outlasts its
	// hold on a loaded machine, and the stop waits for them. The nodes are
	// spread over the hold, so that the cluster runs both variants at once
	// for a while (each coordinator its own).
	gap := hold / time.Duration(len(order)+1)
	begin := time.Now()
	var mu sync.Mutex
	var v PaxosUpgradeStop
	done := make(chan struct{})
	go func() {
		defer close(done)
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), paxosUpgradeWait)
		defer cancel()
		var errs []error
		for i, p := range nodes {
			if i > 0 && !sleep(uctx, gap) {
				break
			}
			live, file, err := p.PaxosVariant(uctx)
			if err == nil && live == "v2" && file == "v2" {
				continue // already switched: nothing to do
			}
			if err := p.SetPaxosVariant(uctx, "v2", how == UpgradeRestart); err != nil {
				errs = append(errs, err)
				continue
			}
			mu.Lock()
			v.Switched = append(v.Switched, names[i])
			mu.Unlock()
		}
		// The repair the switch asks for: every Paxos operation begun
		// before it (v1's among them) committed or invalidated on a
		// quorum, from every node (each repairs the ranges it holds).
		errs = append(errs, repairEach(uctx, nodes, names, &mu, &v.Repaired)...)
		if purgeTo != "" {
			errs = append(errs, switchPurging(uctx, nodes, names, purgeTo, how == UpgradeRestart, &mu, &v)...)
		}
		mu.Lock()
		v.MS = time.Since(begin).Milliseconds()
		if err := errors.Join(errs...); err != nil {
			v.Error = err.Error()
		}
		mu.Unlock()
	}()
	return func(ctx context.Context) error {
		select {
		case <-done:
		case <-ctx.Done():
			// Cut short: the switches go on; what was done by now is
			// recorded (the heal finishes a node cut in the middle).
		}
		mu.Lock()
		out := v
		out.Switched, out.Repaired = slices.Clone(v.Switched), slices.Clone(v.Repaired)
		out.Purged, out.RepairedAfter = slices.Clone(v.Purged), slices.Clone(v.RepairedAfter)
		mu.Unlock()
		out.Variants = map[string]string{}
		if purgeTo != "" {
			out.Purgings = map[string]string{}
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		for i, p := range nodes {
			live, _, err := p.PaxosVariant(rctx)
			if err != nil {
				live = "unknown"
			}
			out.Variants[names[i]] = live
			if purgeTo == "" {
				continue
			}
			if live, _, err = p.PaxosStatePurging(rctx); err != nil {
				live = "unknown"
			}
			out.Purgings[names[i]] = live
		}
		if ctx.Err() != nil && out.Error == "" {
			out.Error = fmt.Sprintf("cut short after %v: %v", time.Since(begin).Round(time.Second), ctx.Err())
		}
		return e.Record(history.StopF(PaxosUpgrade), out, names)
	}, nil
}

// switchPurging is the path's last step, run once the variant's switches
// and repairs are done: each node's paxos_state_purging switched to mode in
// the window's order (cassandra.yaml, then the node, live or restarted),
// then a Paxos repair from every node, as the repaired mode needs repairs
// to run. Cassandra wants the purging changed only once every node runs
// v2, so a node on another variant stops the step before any switch (an
// error of the stop line). What was done goes into v.
func switchPurging(ctx context.Context, nodes []PaxosNode, names []string, mode string, restart bool, mu *sync.Mutex, v *PaxosUpgradeStop) []error {
	for i, p := range nodes {
		live, file, err := p.PaxosVariant(ctx)
		if err != nil {
			return []error{fmt.Errorf("paxos_state_purging not switched: %s: %w", names[i], err)}
		}
		if live != "v2" || file != "v2" {
			return []error{fmt.Errorf("paxos_state_purging not switched: %s runs Paxos %s (cassandra.yaml %s), not v2", names[i], live, file)}
		}
	}
	var errs []error
	for i, p := range nodes {
		live, file, err := p.PaxosStatePurging(ctx)
		if err == nil && live == mode && file == mode {
			continue // already on it
		}
		if err := p.SetPaxosStatePurging(ctx, mode, restart); err != nil {
			errs = append(errs, err)
			continue
		}
		mu.Lock()
		v.Purged = append(v.Purged, names[i])
		mu.Unlock()
	}
	return append(errs, repairEach(ctx, nodes, names, mu, &v.RepairedAfter)...)
}

// repairEach runs a Paxos repair from every node (each repairs the ranges
// it holds), noting under mu, in done, the names of those it repaired.
func repairEach(ctx context.Context, nodes []PaxosNode, names []string, mu *sync.Mutex, done *[]string) []error {
	var errs []error
	for i, p := range nodes {
		if err := p.RepairPaxos(ctx); err != nil {
			errs = append(errs, err)
			continue
		}
		mu.Lock()
		*done = append(*done, names[i])
		mu.Unlock()
	}
	return errs
}

// Reset finishes a node whose switch was cut short: one that runs another
// variant or paxos_state_purging than its configuration names is switched
// to the configuration's (forward: a window writes the configuration
// first). It never switches a node back: a run's heal leaves an upgraded
// cluster upgraded (Revert is the next run's).
func (*paxosUpgrade) Reset(ctx context.Context, e *Env, t Target) (bool, error) {
	p, ok := t.Node.(PaxosNode)
	if !ok {
		return false, nil
	}
	live, file, err := p.PaxosVariant(ctx)
	if err != nil {
		return false, err
	}
	healed := false
	if live != file {
		if err := p.SetPaxosVariant(ctx, file, false); err != nil {
			return false, err
		}
		healed = true
	}
	live, file, err = p.PaxosStatePurging(ctx)
	if err != nil || live == file {
		return healed, err
	}
	if err := p.SetPaxosStatePurging(ctx, file, false); err != nil {
		return healed, err
	}
	return true, nil
}

// Revert puts the variant and the paxos_state_purging the cluster was
// started with back on a node an earlier run's window switched (live, and
// in its configuration), at the start of a run (HealLeftovers): each run
// of an upgrade starts from the cluster's own settings, and the run's
// history records the revert as a heal-leftover line. A run's own heal
// never calls it. The purging goes back first, while the node still runs
// v2 (Cassandra wants it changed only then). Cassandra calls a return from
// gc_grace or repaired to legacy unsafe: the Paxos state written since
// carries no TTL, so legacy never expires it (a node reads it through the
// same gc_grace_seconds bound under legacy as under gc_grace,
// SystemKeyspace.loadPaxosState); a test cluster takes that cost to start
// every run of the path from legacy.
func (*paxosUpgrade) Revert(ctx context.Context, e *Env, t Target) (bool, error) {
	p, ok := t.Node.(PaxosNode)
	if !ok {
		return false, nil
	}
	did := false
	live, file, err := p.PaxosStatePurging(ctx)
	if err != nil {
		return false, err
	}
	if want := p.StartedPurging(); live != want || file != want {
		if err := p.SetPaxosStatePurging(ctx, want, false); err != nil {
			return false, err
		}
		did = true
	}
	live, file, err = p.PaxosVariant(ctx)
	if err != nil {
		return did, err
	}
	want := p.StartedPaxos()
	if live == want && file == want {
		return did, nil
	}
	if err := p.SetPaxosVariant(ctx, want, false); err != nil {
		return did, err
	}
	return true, nil
}

// reverter is an injector whose change outlives its run (OneWay kinds):
// HealLeftovers, and only it, calls Revert.
type reverter interface {
	Revert(ctx context.Context, e *Env, t Target) (bool, error)
}

// revertAll reverts, on every target, the one-way kinds of kinds it can
// serve, and returns per node the kinds that found something to revert.
// Nodes go one by one: a revert is an operator's rolling change too.
func revertAll(ctx context.Context, e *Env, kinds []fault, targets []Target) (map[string][]string, error) {
	out := map[string][]string{}
	var errs []error
	for _, t := range targets {
		for _, k := range kinds {
			r, ok := k.Injector.(reverter)
			if !ok || !k.OneWay || !serves(t, k.Kind) {
				continue
			}
			did, err := r.Revert(ctx, e, t)
			if err != nil {
				errs = append(errs, fmt.Errorf("nemesis: revert %s on %s: %w", k.Name, t.Name, err))
				continue
			}
			if did {
				out[t.Name] = append(out[t.Name], k.Name)
			}
		}
	}
	return out, errors.Join(errs...)
}

// OneWay says whether the run's kinds include one whose change outlives
// the run (Kind.OneWay): the cluster it leaves is not the one the next
// run starts from until that run's HealLeftovers reverts it.
func (n *Nemesis) OneWay() bool {
	return slices.ContainsFunc(n.kinds, func(k fault) bool { return k.OneWay })
}

// explainUpgrade names the switch of a paxos-upgrade window.
func explainUpgrade(w history.FaultWindow, a faultkind.Anomaly) (string, bool) {
	v, ok := faultkind.Decode[PaxosUpgradeStart](w.Value)
	if !ok || len(v.Order) == 0 {
		return "", false
	}
	s := fmt.Sprintf("Paxos switched from %s to %s node by node (%s, order %v): while some coordinators ran %s and others %s, "+
		"their rounds met on the same replicas' Paxos state", v.From, v.To, v.How, v.Order, v.From, v.To)
	if v.PurgingTo != "" {
		s += fmt.Sprintf("; then paxos_state_purging from %s to %s, after which a node purges Paxos state a Paxos repair covered", v.PurgingFrom, v.PurgingTo)
	}
	return s, true
}
