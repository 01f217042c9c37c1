// Package perrun is the front of the bench commands that summarise stored
// runs one line each (runstats, dcstats): usage, the loop over RUN_DIR
// arguments, reading each run's history, and one clear line and a non-zero
// exit for a run it cannot read.
package perrun

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/reports"
)

// Main prints summary(dir, ops) for each RUN_DIR argument of the command
// name, ops being the run's history (never empty); it exits 2 without
// arguments and 1 at the first run it cannot read or summarise.
func Main(name string, summary func(dir string, ops []history.Op) (string, error)) {
	if len(os.Args) < 2 {
		fmt.Fprintf(os.Stderr, "usage: go run ./bench/%s RUN_DIR...\n", name)
		os.Exit(2)
	}
	for _, dir := range os.Args[1:] {
		line, err := one(dir, summary)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %s: %v\n", name, dir, err)
			os.Exit(1)
		}
		fmt.Println(line)
	}
}

func one(dir string, summary func(string, []history.Op) (string, error)) (string, error) {
	ops, err := history.ReadFile(filepath.Join(dir, reports.HistoryFile))
	if err != nil {
		return "", err
	}
	if len(ops) == 0 {
		return "", errors.New("empty history")
	}
	return summary(dir, ops)
}
