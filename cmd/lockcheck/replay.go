package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck"
	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/reports"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/spec"
	"github.com/lockcheck/lockcheck/workload"
)

// storedRun is a run directory read back for a replay or a shrink: its
// meta line and the Spec it records, its schedule as it happened, its
// verdict and anomaly kinds.
type storedRun struct {
	dir       string
	meta      history.Meta
	spec      spec.Spec
	schedule  nemesis.Schedule
	verdict   checker.Verdict
	anomalies []string // the anomaly kinds of its verdict, each once
}

// loadRun reads DIR; a directory that is not a run, a history without a
// meta line or without fault events is an error of one line.
func loadRun(ctx context.Context, dir string) (storedRun, error) {
	r := storedRun{dir: dir}
	path := filepath.Join(dir, reports.HistoryFile)
	if _, err := os.Stat(path); err != nil {
		return r, fmt.Errorf("%s is not a run directory (no %s)", dir, reports.HistoryFile)
	}
	ops, err := history.ReadFile(path)
	if err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	meta := slices.IndexFunc(ops, func(op history.Op) bool { return op.Process == history.NemesisProcess && op.F == history.FMeta })
	if meta < 0 || json.Unmarshal(ops[meta].Value, &r.meta) != nil || r.meta.Lock == "" {
		return r, fmt.Errorf("%s has no meta line naming its lock: not a run of lockcheck", path)
	}
	if r.spec, err = runner.SpecOf(r.meta); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	if r.schedule, err = nemesis.ScheduleFromHistory(ops); err != nil {
		return r, fmt.Errorf("%s: %w: nothing to replay", path, err)
	}
	r.schedule.Source = dir
	res, err := checker.CheckValidated(ctx, ops)
	if err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	r.verdict = res.Verdict
	r.anomalies = anomalyKinds(res)
	return r, nil
}

func anomalyKinds(res checker.Result) []string {
	var out []string
	for _, a := range res.Anomalies {
		if !slices.Contains(out, a.Kind) {
			out = append(out, a.Kind)
		}
	}
	return out
}

// replayConfig is how a stored run is run again: the Spec of its meta
// line (its lock, workload, clients, locks, time, TTL, seed, pins...), and
// the flags that override it.
type replayConfig struct {
	lockCmd, lockURL, cluster, store string
	time                             time.Duration
	repeat                           int
	schedule                         string
}

func (c *replayConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.cluster, "cluster", cluster.DefaultName, "the running cluster to replay on (lockcheck cluster up)")
	fs.StringVar(&c.store, "store", spec.Defaults().Store, "the store of the replays' runs")
	fs.DurationVar(&c.time, "time", 0, "how long each replay runs (0: the run's own time)")
	fs.StringVar(&c.lockCmd, "lock-cmd", "", "the plug-in command, when the run was a --lock-cmd run (a command is not stored)")
	fs.StringVar(&c.lockURL, "lock-url", "", "the lock service, when the run was a --lock-url run")
}

// options are the lockcheck options of a replay of r with candidate's
// schedule, clients, locks and time (zero: the run's own): the run's Spec
// with those, its faults the schedule's.
func (c *replayConfig) options(r storedRun, cand candidate) (lockcheck.Lock, []lockcheck.Option, error) {
	s := c.spec(r, cand)
	lock := lockcheck.Lock{Recipe: s.Lock}
	switch {
	case s.Workload == workload.ShapeRegister:
		// The register tests Cassandra's LWT itself: no lock.
		lock = lockcheck.Lock{}
	case c.lockCmd != "":
		lock = lockcheck.Lock{Command: c.lockCmd, Promise: history.Promise(s.Promise)}
	case c.lockURL != "":
		lock = lockcheck.Lock{URL: c.lockURL, Promise: history.Promise(s.Promise)}
	case !slices.Contains(runner.RecipeNames(), s.Lock):
		return lock, nil, fmt.Errorf("the run's lock %q is not one of lockcheck's recipes: give its --lock-cmd or --lock-url", s.Lock)
	}
	opts := []lockcheck.Option{lockcheck.WithSpec(s), lockcheck.WithCluster(c.cluster)}
	if len(cand.schedule.Steps) > 0 {
		opts = append(opts, lockcheck.WithSchedule(cand.schedule))
	}
	return lock, opts, nil
}

// spec is the Spec a replay of r with candidate runs: the run's own, its
// faults left to the schedule (--every-kind dropped), its name made
// afresh, stored in the replay's store, waiting for a busy cluster.
func (c *replayConfig) spec(r storedRun, cand candidate) spec.Spec {
	s := r.spec
	// The schedule deals the run's faults as they happened: EveryKind,
	// which made the original run deal every drawn kind, has no draws to
	// act on.
	s.Name, s.Nemesis, s.Store, s.NoWait, s.EveryKind = "", nil, c.store, false, false
	s.Clients = cmpInt(cand.clients, s.Clients)
	s.Locks = cmpInt(cand.locks, s.Locks)
	s.Time = cmpDur(cand.time, cmpDur(c.time, s.Time))
	s.Seed = cmpInt64(s.Seed, 1)
	return s
}

// candidate is what a replay varies: the schedule (no steps: no faults),
// the clients, the locks and the time (zero: the run's own).
type candidate struct {
	schedule       nemesis.Schedule
	clients, locks int
	time           time.Duration
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func cmpInt(a, b int) int {
	if a > 0 {
		return a
	}
	return b
}

func cmpInt64(a, b int64) int64 {
	if a != 0 {
		return a
	}
	return b
}

func cmpDur(a, b time.Duration) time.Duration {
	if a > 0 {
		return a
	}
	return b
}

func newReplayFlags() (*flag.FlagSet, *replayConfig) {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	c := &replayConfig{}
	c.flags(fs)
	fs.IntVar(&c.repeat, "repeat", 1, "replays to run: the verdict's catch rate over them")
	fs.StringVar(&c.schedule, "schedule", "", "an edited schedule file to deal instead of the run's own faults (as run --schedule)")
	return fs, c
}

const replayUsage = `usage: lockcheck replay [--repeat N] [--time D] [--schedule FILE] [--cluster NAME] [--store DIR] DIR
runs the stored run DIR again: its lock, workload, clients, locks, time, TTL and seed, and its faults as
they happened (kinds, nodes, offsets, windows, parameters: the schedule of its fault lines, not drawn
again); says whether the verdict repeats. Exit as run: 0 valid, 1 invalid, 2 bad input, 3 unknown`

// runReplay is `lockcheck replay DIR`.
func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, c := newReplayFlags()
	withUsage(fs, stderr, replayUsage)
	dir, code, ok := parseOneArg(fs, args)
	if !ok {
		return code
	}
	bad := badInput(stderr, "replay")
	if c.repeat < 1 {
		return bad(fmt.Errorf("--repeat must be 1 or more, got %d", c.repeat))
	}
	r, err := loadRun(ctx, dir)
	if err != nil {
		return bad(err)
	}
	sched := r.schedule
	if c.schedule != "" {
		if sched, err = nemesis.LoadSchedule(c.schedule); err != nil {
			return bad(err)
		}
	}
	lock, opts, err := c.options(r, candidate{schedule: sched})
	if err != nil {
		return bad(err)
	}
	plan, err := lockcheck.NewPlan(lock, append(opts, lockcheck.WithProgress(stderr))...)
	if err != nil {
		return bad(err)
	}
	fmt.Fprintf(stderr, "lockcheck replay: %s (%s%s), %d faults as they happened, %d time(s)\n",
		dir, r.verdict, prefixed(": ", strings.Join(r.anomalies, ", ")), len(sched.Steps), c.repeat)
	same, last := 0, lockcheck.Result{}
	for i := range c.repeat {
		res, err := plan.Run(ctx)
		if se := (*runner.SetupError)(nil); errors.As(err, &se) || (err != nil && res.Dir == "") {
			return bad(err)
		}
		kinds := anomalyKinds(res.Check)
		repeats := res.Verdict == r.verdict && (r.verdict != checker.Invalid || overlaps(kinds, r.anomalies))
		if repeats {
			same++
		}
		fmt.Fprintf(stdout, "replay %d: %s%s, %s; report %s\n", i+1, res.Verdict, prefixed(" ", strings.Join(kinds, ",")),
			map[bool]string{true: "repeats", false: "differs"}[repeats], res.Report)
		last = res
		if ctx.Err() != nil {
			break
		}
	}
	fmt.Fprintf(stdout, "the run's verdict (%s) repeated in %d of %d replays\n", r.verdict, same, c.repeat)
	if last.Dir != "" {
		fmt.Fprintf(stdout, "schedule dealt: %s (edit it and pass it back: lockcheck run --schedule FILE, or replay --schedule FILE)\n",
			filepath.Join(last.Dir, runner.ScheduleFile))
	}
	return verdictCode(last.Verdict)
}

func overlaps(a, b []string) bool {
	return slices.ContainsFunc(a, func(k string) bool { return slices.Contains(b, k) })
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

// badInput says a command's bad input in one line (the error's own lines
// joined) and gives the exit status of bad input.
func badInput(stderr io.Writer, cmd string) func(error) int {
	return func(err error) int {
		fmt.Fprintf(stderr, "lockcheck %s: %s\n", cmd, strings.ReplaceAll(strings.TrimPrefix(err.Error(), "lockcheck: "), "\n", "; "))
		return exitError
	}
}
