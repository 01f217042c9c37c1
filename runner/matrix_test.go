//go:build jepsen

package runner_test

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/cluster/clustertest"
	"github.com/lockcheck/lockcheck/matrix"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/scenario"
)

func TestMain(m *testing.M) { clustertest.Main(m) }

// The jepsen matrices are thin drivers over the scenario table
// (scenario.Rows): rows on the shared cluster run here, rows whose cluster
// configuration differs run in TestConfigs on a cluster of their own.
//
// LOCKCHECK_FULL=1 adds the full tier; LOCKCHECK_ROWS (a glob or regular
// expression over row names, scenario.NewMatcher) picks rows, full ones
// included; LOCKCHECK_REPEAT=N repeats them (TestUnsafeCaught, TestConfigs);
// LOCKCHECK_MATRIX_TIME replaces every row's duration (the nightly soak).

// skipFull skips a full-tier row unless LOCKCHECK_FULL=1 or LOCKCHECK_ROWS
// picked it by name.
func skipFull(t *testing.T, row scenario.Row) {
	if row.Tier == scenario.Full && os.Getenv("LOCKCHECK_FULL") != "1" && os.Getenv("LOCKCHECK_ROWS") == "" {
		t.Skip("full tier: set LOCKCHECK_FULL=1")
	}
}

// picked is LOCKCHECK_ROWS's filter; nil when it is unset.
func picked() func(string) bool {
	if r := os.Getenv("LOCKCHECK_ROWS"); r != "" {
		return scenario.NewMatcher(r)
	}
	return nil
}

// repeat is LOCKCHECK_REPEAT (0 when unset).
func repeat(t *testing.T) int {
	v := os.Getenv("LOCKCHECK_REPEAT")
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("LOCKCHECK_REPEAT=%q: want a positive number of runs", v)
	}
	return n
}

// envDuration reads a duration from the environment: LOCKCHECK_MATRIX_TIME
// replaces every row's time (the nightly soak sets it long).
func envDuration(t *testing.T, name string) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return d
}

// matrixStore is where the runs go: LOCKCHECK_STORE, kept, with the
// nodes' logs (runRow); else a directory removed when the test ends.
func matrixStore(t *testing.T) string {
	if s := os.Getenv("LOCKCHECK_STORE"); s != "" {
		return s
	}
	return t.TempDir()
}

// runRow runs run r of row on env and counts it in tally; a run error and a
// fault kind the run never injected fail the test.
func runRow(t *testing.T, env runner.Env, store string, row scenario.Row, r int, tally *scenario.Tally) runner.Outcome {
	t.Helper()
	tc, err := matrix.Test(row, r)
	if err != nil {
		t.Fatal(err)
	}
	if d := envDuration(t, "LOCKCHECK_MATRIX_TIME"); d > 0 {
		tc.Time = d
	}
	// A store the test removes needs no node logs.
	tc.Store, tc.Log, tc.NoNodeLogs = store, testLogger(t), os.Getenv("LOCKCHECK_STORE") == ""
	limit := tc.Time + 10*time.Minute
	if tc.Schedule != nil && tc.Schedule.DealtInFull() {
		limit += nemesis.FollowWait // the run deals its schedule to the end
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	out, err := runner.Run(ctx, env, runner.ReportStore{}, tc)
	if err != nil {
		t.Errorf("run: %v", err)
	}
	missing := tally.Add(row, out.Verdict, out.Faults, out.Phases.Undealt)
	tally.Saw(out.Result.Anomalies) // a row bound by the load is judged by its anomalies' kinds
	if len(missing) > 0 {
		t.Errorf("%s: no %s fault was injected (%v)", row.Name, strings.Join(missing, ", "), out.Faults)
	}
	if err := tally.Live(row, out.Result.Liveness); err != nil {
		t.Errorf("%s: %v; report %s", row.Name, err, out.Dir)
	}
	if out.Phases.Undealt > 0 {
		t.Errorf("%s: %d of the schedule's steps never dealt", row.Name, out.Phases.Undealt)
	}
	t.Logf("%s (%s) under %v, seed %d: %s, %d ops, faults %v, %d anomalies, %d findings; took %s; %s",
		row.Recipe, tc.Workload, row.Faults, tc.Seed, out.Verdict, out.Ops, out.Faults, len(out.Result.Anomalies), len(out.Result.Findings), out.Timing, out.Dir)
	return out
}

// judgeOnce runs row once, a known-unsafe row until it is caught (at most
// row.Tries() runs, seeds row.Seed+0, +1, ...: make test's two streams load
// the machine more than the measurement did, and one miss among a dozen
// unsafe rows would fail CI often), and fails the test when the row misses
// its expectation. A safe row gets one run: a false alarm is never retried.
func judgeOnce(t *testing.T, env runner.Env, store string, row scenario.Row) {
	t.Helper()
	tries := 1
	if row.Unsafe {
		tries = row.Tries()
	}
	for r := range tries {
		var tally scenario.Tally
		out := runRow(t, env, store, row, r, &tally)
		switch {
		case tally.Met(row):
			if r > 0 {
				t.Logf("%s: caught in run %d of %d", row.Name, r+1, tries)
			}
			return
		case !row.Unsafe || tally.NoFault > 0:
			t.Errorf("%s: verdict %s, want %s; report %s", row.Name, out.Verdict, row.Expected(), out.Dir)
			return
		}
		t.Logf("%s: run %d of %d not caught (verdict %s); report %s", row.Name, r+1, tries, out.Verdict, out.Dir)
	}
	t.Errorf("%s: not caught in %d runs, want %s", row.Name, tries, row.Expected())
}

// TestMatrix runs every row on the shared cluster once (LOCKCHECK_ROWS:
// those it picks): a known-unsafe row must be invalid (judgeOnce: in one of
// up to row.Tries() runs), a safe one valid, and every fault kind of the row
// injected. It runs the rows whose faults strike only the clients
// (row.NodesUntouched); TestMatrixNodeFaults runs the others.
//
// Those rows run in parallel, go test -parallel at a time: lock names are
// fresh every run, and nothing one deals reaches a node the other uses.
// They are most of the quick tier and mostly wait (a client paused past
// its lease), so two at once (go test -parallel, the cores) cut make test's
// longer stream by minutes. TestMatrix is itself a parallel test: it starts
// once the package's sequential tests (TestMatrixNodeFaults among them)
// have ended, and its rows share the -parallel slots with the other
// client-fault tests (TestReferencePlugins), so that no slot waits idle
// while the longest of one test's runs ends.
// Their set-ups take turns (runner's setupMu: tables are created there).
// Measurements (TestUnsafeCaught, lockcheck matrix) stay one run at a time.
func TestMatrix(t *testing.T) {
	t.Parallel()
	matrixRows(t, true)
}

// TestMatrixNodeFaults runs the rows of the shared cluster whose faults
// reach a node (TestMatrix's others), one at a time: a node fault's heal
// would undo another run's window. Its rows are TestMatrix's in what they
// assert; they run before it (a sequential test).
func TestMatrixNodeFaults(t *testing.T) {
	matrixRows(t, false)
}

// matrixRows runs the shared cluster's rows whose NodesUntouched is
// clients: side by side when they are (t.Parallel), else one at a time.
func matrixRows(t *testing.T, clients bool) {
	pick := picked()
	env := runner.ClusterEnv{clustertest.Get(t)}
	store := matrixStore(t)
	for _, row := range scenario.Rows {
		if !row.Cluster.Shared() || row.NodesUntouched() != clients || (pick != nil && !pick(row.Name)) {
			continue
		}
		t.Run(row.Name, func(t *testing.T) {
			skipFull(t, row)
			if clients {
				t.Parallel()
			}
			judgeOnce(t, env, store, row)
		})
	}
}

// TestUnsafeCaught runs each known-unsafe row of the shared cluster
// LOCKCHECK_REPEAT times (default: skipped) with different seeds and
// requires each caught at its bar (9 of 10 unless the row says less). LOCKCHECK_ROWS picks rows instead,
// safe ones included: a safe row must then be valid in every run (the
// 20-run false-alarm figures of docs/findings.md).
func TestUnsafeCaught(t *testing.T) {
	n := repeat(t)
	if n == 0 {
		t.Skip("set LOCKCHECK_REPEAT=10 to measure how often the unsafe rows are caught")
	}
	pick := picked()
	env := runner.ClusterEnv{clustertest.Get(t)}
	store := matrixStore(t)
	for _, row := range scenario.Rows {
		if !row.Cluster.Shared() || (pick == nil && !row.Unsafe) || (pick != nil && !pick(row.Name)) {
			continue
		}
		t.Run(row.Name, func(t *testing.T) {
			var tally scenario.Tally
			for r := range n {
				runRow(t, env, store, row, r, &tally)
			}
			word := "FALSE ALARMS"
			if row.Unsafe {
				word = "CAUGHT"
			}
			t.Logf("%s %s: %d of %d invalid, %d unknown, at %v", word, row.Name, tally.Invalid, n, tally.Unknown, row.Time)
			if !tally.Met(row) {
				t.Errorf("%s: %d of %d runs invalid, %d valid, %d unknown; want %s", row.Name, tally.Invalid, n, tally.Valid, tally.Unknown, row.Expected())
			}
		})
	}
}

// testLogger logs through t, at info level.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p[:len(p)-1]))
	return len(p), nil
}
