// Command runstats prints one line per stored run of a membership row: its
// verdict, events, acknowledged adds inside the membership windows (the
// writes the range movements were tested under), lock names (retired stuck
// names count), stuck-lock findings and schedule steps never dealt. It reads
// a run's history and results.json with the project's own readers, so its
// windows are the report's.
//
// Usage: go run ./bench/runstats RUN_DIR...   (store/<test>/<timestamp>)
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/lockcheck/lockcheck/bench/internal/perrun"
	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/reports"
)

func main() { perrun.Main("runstats", summary) }

func summary(dir string, ops []history.Op) (string, error) {
	var moves []history.FaultWindow
	for _, w := range history.FaultWindows(ops, ops[len(ops)-1].Time) {
		if nemesis.AnyMembershipKind([]string{w.Kind}) {
			moves = append(moves, w)
		}
	}
	adds, undealt := 0, 0
	for _, op := range ops {
		inMove := slices.ContainsFunc(moves, func(w history.FaultWindow) bool { return w.Start <= op.Time && op.Time <= w.End })
		if op.F == history.FAdd && op.Type == history.OK && inMove {
			adds++
		}
		if op.F == history.FPhases {
			var p history.RunPhases
			if err := json.Unmarshal(op.Value, &p); err != nil {
				return "", fmt.Errorf("phases line: %w", err)
			}
			undealt = p.Undealt
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, reports.ResultsFile))
	if err != nil {
		return "", err
	}
	var res checker.Result
	if err := json.Unmarshal(b, &res); err != nil {
		return "", fmt.Errorf("%s: %w", reports.ResultsFile, err)
	}
	stuck := 0
	for _, f := range res.Findings {
		if f.Kind == checker.KindStuckLock {
			stuck++
		}
	}
	return fmt.Sprintf("%s\tverdict=%s\tevents=%d\tadds_in_moves=%d\tmoves=%d\tlocks=%d\tstuck=%d\tundealt=%d",
		dir, res.Verdict, res.Stats.Events, adds, len(moves), res.Stats.Locks, stuck, undealt), nil
}
