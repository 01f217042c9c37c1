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
	e := &Env{Targets: targets, Log: log}
	healed := make([][]string, len(targets))
	found := make([][]string, len(targets))
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		if t.Node == nil {
			continue // nothing to reach it by
		}
		wg.Go(func() {
			var kinds []Kind
			for _, mk := range table {
				if k := mk(); k.Scope() == ScopeNode {
					kinds = append(kinds, k)
				}
			}
			// What the node shows before the kinds reset it says more than
			// a kind's name ("jvm stopped", not only "pause").
			if f, ok := t.Node.(faulter); ok {
				found[i], _ = f.Faults(ctx)
			}
			h, err := resetAll(ctx, e, kinds, []Target{t})
			healed[i] = h[t.Name]
			if err != nil {
				errs[i] = fmt.Errorf("nemesis: heal leftovers on %s: %w", t.Name, err)
			}
		})
	}
	wg.Wait()
	var out []Leftover
	for i, t := range targets {
		if len(healed[i]) == 0 {
			continue
		}
		l := Leftover{Node: t.Name, Healed: healed[i], Found: found[i]}
		out = append(out, l)
		log.Warn("healed a fault an earlier run left", "node", t.Name, "healed", healed[i], "found", found[i])
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
