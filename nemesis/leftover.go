package nemesis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"github.com/lockcheck/lockcheck/history"
)

// Leftover is what HealLeftovers undid on one node, the value of a
// history.FHealLeftover line: the node and the fault kinds it found.
type Leftover = history.HealLeftover

// HealLeftovers brings every target to its known state before a run, as
// Jepsen's nemesis setup does: an earlier harness killed mid-run leaves its
// faults in place, and a test over a frozen node would report "no faults"
// over it. Every node fault kind of the table resets every node, so a kind
// added there is healed here with no other change. What it heals is logged
// and, when rec is not nil, recorded as a nemesis event, so that the report
// shows it. Nodes are reset in parallel (a stopped node takes a minute to
// start).
func HealLeftovers(ctx context.Context, targets []Target, rec Recorder, log *slog.Logger) ([]Leftover, error) {
	if log == nil {
		log = slog.Default()
	}
	// Every node kind of the table, each node reset by those it can serve
	// (resetAll).
	var kinds []fault
	for _, k := range table {
		if k.Scope == ScopeNode {
			kinds = append(kinds, fault{k, k.New()})
		}
	}
	// What the nodes show before the kinds reset them says more than a
	// kind's name ("jvm stopped", not only "pause").
	found := make(map[string][]string, len(targets))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, t := range targets {
		if f, ok := t.Node.(faulter); ok {
			wg.Go(func() {
				fs, _ := f.Faults(ctx)
				mu.Lock()
				found[t.Name] = fs
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	ring := ringBefore(ctx, targets)
	env := &Env{Targets: targets, Log: log}
	healed, err := resetAll(ctx, env, kinds, targets)
	errs := []error{err}
	// What an earlier run changed for good (a one-way kind: an upgrade) is
	// put back only here, at a run's start, and recorded below with the
	// rest.
	reverted, err := revertAll(ctx, env, kinds, targets)
	errs = append(errs, err)
	for n, ks := range reverted {
		healed[n] = append(healed[n], ks...)
	}
	// The ring's membership is the cluster's: every member's membership
	// kinds share one reset, which the first to run does. It is recorded
	// on the nodes the ring had moved, by what the ring showed.
	names := slices.Clone(targets)
	for _, m := range membershipLeftovers(targets, ring, healed) {
		if !slices.ContainsFunc(names, func(t Target) bool { return t.Name == m.Node }) {
			names = append(names, Target{Name: m.Node})
		}
		healed[m.Node] = append(healed[m.Node], m.Healed...)
		found[m.Node] = append(found[m.Node], m.Found...)
	}
	var out []Leftover
	for _, t := range names {
		if len(healed[t.Name]) == 0 {
			continue
		}
		l := Leftover{Node: t.Name, Healed: healed[t.Name], Found: found[t.Name]}
		out = append(out, l)
		log.Warn("healed a fault an earlier run left", "node", t.Name, "healed", l.Healed, "found", l.Found)
		if rec == nil {
			continue
		}
		v, err := json.Marshal(l)
		if err != nil {
			return out, err
		}
		if _, err := rec.Append(history.Op{Process: history.NemesisProcess, Type: history.Info, F: history.FHealLeftover, Node: t.Name, Value: v}); err != nil {
			errs = append(errs, fmt.Errorf("nemesis: record heal: %w", err))
		}
	}
	return out, errors.Join(errs...)
}

// ringBefore is the ring as the first member that can change it sees it
// (MemberNode.Ring), before the heal; nil when none can, or it cannot be
// read (the heal still resets it, and is then recorded by kind).
func ringBefore(ctx context.Context, targets []Target) map[string]string {
	for _, t := range targets {
		if m, ok := t.Node.(MemberNode); ok && serves(t, &joinKind) {
			ring, err := m.Ring(ctx)
			if err != nil {
				return nil
			}
			return ring
		}
	}
	return nil
}

// membershipLeftovers takes the membership kinds out of healed (the node
// whose reset ran first has them, whichever node moved) and, when they
// healed something, says it of the nodes ring showed moved: a node in the
// ring that is no member (a spare: a join's leftover), and a member
// leaving (UL, or DL when it was killed meanwhile) or out of it (a leave's; a removed member looks the same,
// and its heal, a bootstrap back, is the same).
func membershipLeftovers(targets []Target, ring map[string]string, healed map[string][]string) []Leftover {
	member := func(k string) bool { return slices.Contains([]string{Join, Leave, Replace, Remove}, k) }
	var did []string
	for n, ks := range healed {
		if slices.ContainsFunc(ks, member) {
			did = append(did, n)
		}
	}
	if len(did) == 0 || ring == nil {
		return nil
	}
	var out []Leftover
	for _, t := range targets {
		switch st, in := ring[t.Name]; {
		case !in:
			out = append(out, Leftover{Node: t.Name, Healed: []string{Leave}, Found: []string{"out of the ring"}})
		case st == "UL" || st == "DL": // DL: killed while leaving, as cluster.leaving reads it
			out = append(out, Leftover{Node: t.Name, Healed: []string{Leave}, Found: []string{"leaving the ring, " + st}})
		}
	}
	for _, n := range slices.Sorted(maps.Keys(ring)) {
		if !slices.ContainsFunc(targets, func(t Target) bool { return t.Name == n }) {
			out = append(out, Leftover{Node: n, Healed: []string{Join}, Found: []string{"a spare in the ring, " + ring[n]}})
		}
	}
	if len(out) == 0 {
		return nil // what it healed the ring did not show (a spare running out of it): said by kind
	}
	for _, n := range did {
		healed[n] = slices.DeleteFunc(healed[n], member)
		if len(healed[n]) == 0 {
			delete(healed, n)
		}
	}
	return out
}

// faulter is a node that can say what keeps it from its known state
// (cluster.Node.Faults); HealLeftovers records it beside the kinds it reset.
type faulter interface {
	Faults(ctx context.Context) ([]string, error)
}

// Healthy is a cluster that can wait until every node serves again
// (runner.Env, cluster.Cluster).
type Healthy interface {
	WaitHealthy(ctx context.Context) error
}

// HealAndWait is the heal-then-wait of every command that takes a cluster
// (a run's start, `cluster up` and `cluster heal` on a running cluster,
// lockd, the jepsen tests' TestMain): HealLeftovers, then a wait until the
// cluster is healthy, always, so that a cluster that is partly partitioned
// by something no leftover names (n2 dropping n3's packets) is noticed
// before a run vouches for it. The caller holds the cluster
// (package exclusive).
func HealAndWait(ctx context.Context, targets []Target, h Healthy, rec Recorder, log *slog.Logger) ([]Leftover, error) {
	var healed []Leftover
	if len(targets) > 0 {
		var err error
		if healed, err = HealLeftovers(ctx, targets, rec, log); err != nil {
			return healed, err
		}
	}
	if err := h.WaitHealthy(ctx); err != nil {
		return healed, fmt.Errorf("cluster not healthy after healing leftovers: %w", err)
	}
	return healed, nil
}

// foreigner is a node that can name state on it that lockcheck did not
// make (cluster.Node.Foreign).
type foreigner interface {
	Foreign(ctx context.Context) ([]string, error)
}

// Foreign lists, per node, what the targets hold that lockcheck did not
// make and HealLeftovers will not touch, with fix telling what to do about
// each (nil: nothing said). A node that cannot say is skipped: hosts of
// the user's keep their own firewall, which is not a fault.
func Foreign(ctx context.Context, targets []Target, fix func(node, what string) string) []history.Foreign {
	out := make([][]history.Foreign, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		f, ok := t.Node.(foreigner)
		if !ok {
			continue
		}
		wg.Go(func() {
			ws, err := f.Foreign(ctx)
			if err != nil {
				return // the heal and the health check say what is wrong
			}
			for _, w := range ws {
				fe := history.Foreign{Node: t.Name, What: w}
				if fix != nil {
					fe.Fix = fix(t.Name, w)
				}
				out[i] = append(out[i], fe)
			}
		})
	}
	wg.Wait()
	var all []history.Foreign
	for _, o := range out {
		all = append(all, o...)
	}
	return all
}
