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

// Resetter is a node that can read and undo whatever faults an earlier run
// left on it, from the node's own state rather than a process's memory
// (cluster.Node implements it).
type Resetter interface {
	Reset(ctx context.Context) (healed []string, err error)
}

// Leftover is what HealLeftovers undid on one node, the value of a
// history.FHealLeftover line.
type Leftover struct {
	Node   string   `json:"node"`
	Healed []string `json:"healed"`
}

// HealLeftovers brings every target to its known state before a run, as
// Jepsen's nemesis setup does: an earlier harness killed mid-run leaves its
// faults in place, and a test over a frozen node would report "no faults"
// over it. What it heals is logged and, when rec is not nil, recorded as a
// nemesis event, so that the report shows it. Nodes are reset in parallel
// (a stopped node takes a minute to start); targets that cannot be reset are
// skipped.
func HealLeftovers(ctx context.Context, targets []Target, rec Recorder, log *slog.Logger) ([]Leftover, error) {
	if log == nil {
		log = slog.Default()
	}
	healed := make([][]string, len(targets))
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		r, ok := t.Node.(Resetter)
		if !ok {
			continue
		}
		wg.Go(func() {
			healed[i], errs[i] = r.Reset(ctx)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("nemesis: heal leftovers on %s: %w", t.Name, errs[i])
			}
		})
	}
	wg.Wait()
	var out []Leftover
	for i, t := range targets {
		if len(healed[i]) == 0 {
			continue
		}
		l := Leftover{Node: t.Name, Healed: healed[i]}
		out = append(out, l)
		log.Warn("healed a fault an earlier run left", "node", t.Name, "healed", healed[i])
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
