package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/reports"
)

func newReportFlags() (*flag.FlagSet, *time.Duration) {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	timeout := fs.Duration("timeout", 0, "bound the check; the verdict is then unknown (0: no limit)")
	return fs, timeout
}

const reportUsage = `usage: lockcheck report [--timeout D] DIR
(re)builds DIR/report.html and DIR/results.json from DIR/history.jsonl; exit 0 when written`

// runReport: lockcheck report [--timeout D] DIR
func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, timeout := newReportFlags()
	withUsage(fs, stderr, reportUsage)
	arg, code, ok := parseOneArg(fs, args)
	if !ok {
		return code
	}
	var opts []reports.Option
	if *timeout > 0 {
		opts = append(opts, reports.WithCheckOptions(checker.WithTimeout(*timeout)))
	}
	dir := arg
	defer tuneGC(reportMemLimit)()
	res, err := reports.Build(ctx, dir, opts...)
	if err != nil {
		fmt.Fprintf(stderr, "lockcheck report: %v\n", err)
		return exitError
	}
	if res.SetupFailed != "" {
		fmt.Fprintf(stdout, "%s: failed set-up, no test ran (%s)\n", filepath.Join(dir, reports.ReportFile), res.SetupFailed)
		return exitValid
	}
	fmt.Fprintf(stdout, "%s: %s, %d anomalies\n", filepath.Join(dir, reports.ReportFile), res.Verdict, len(res.Anomalies)+res.AnomaliesOmitted)
	return exitValid
}
