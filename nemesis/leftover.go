package nemesis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
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
	healed, err := resetAll(ctx, &Env{Targets: targets, Log: log}, kinds, targets)
	errs := []error{err}
	var out []Leftover
	for _, t := range targets {
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

// faulter is a node that can say what keeps it from its known state
// (cluster.Node.Faults); HealLeftovers records it beside the kinds it reset.
type faulter interface {
	Faults(ctx context.Context) ([]string, error)
}
