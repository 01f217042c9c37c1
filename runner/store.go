package runner

import (
	"context"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/reports"
)

// ReportStore is the store of the reports package: run directories under
// store/<test>/<time>/, checked and reported by reports.Build.
type ReportStore struct{}

// NewRunDir makes a run directory (reports.NewRunDir).
func (ReportStore) NewRunDir(store, test string, at time.Time) (string, error) {
	return reports.NewRunDir(store, test, at)
}

// Build checks dir/history.jsonl and writes results.json and report.html.
func (ReportStore) Build(ctx context.Context, dir string) (checker.Result, error) {
	return reports.Build(ctx, dir)
}
