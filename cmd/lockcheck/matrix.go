package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/matrix"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/scenario"
)

const matrixUsage = `usage: lockcheck matrix [flags]
       lockcheck matrix merge [flags] FILE... (lockcheck matrix merge --help)
Run the asserted scenarios (docs/findings.md) and print a catch-rate table.
Rows on the shared cluster run on the running cluster --cluster (started and
removed afterwards when none runs); a row that needs another configuration
(Paxos v2, the lazy filesystem) runs on NAME-KEY, started for it and removed
after its rows unless it was already running.
  --rows PATTERN   rows whose name matches: a glob over the whole name
                   ("*/client-pause"), or a regular expression anywhere in it
                   ("^bakery"), as go test -run does
  --tier T         quick, full or all (default quick; all with --rows)
  --repeat N       runs per row (default 1); a known-unsafe row must be
                   invalid in at least 9 of 10 (or the lower bar it names),
                   a safe row valid in every run
  --first N        the first run's number (default 0): run i has the row's
                   seed plus i, so batches (--first 0, then --first 5 with
                   --repeat 5) never run a seed twice
  --cluster NAME   the shared cluster (default lockcheck)
  --store DIR      where runs are stored (default store)
  --record FILE    append each row's measured rate as a JSON line
                   (scenario/rates.jsonl, then go test ./scenario -update)
  --shard K/N      run the K-th of N shares of the selected rows, balanced by
                   their expected time (EST in --list), for a fan-out over
                   N jobs (docs/fan-out.md); --store defaults to store-K-of-N
                   and --record to rates-K-of-N.jsonl, the file matrix merge
                   pools
  --idle-below L    before each run, wait until the 1-minute load average is
                   under L (at most 10 minutes a run; then it runs, and says
                   so): a rate that decides a verdict is measured on an idle
                   machine; --record notes the bound when every run
                   started under it
  --list           print the selected rows (with --shard, the share) and exit
Exit status: 0 every row met its expectation, 1 a row missed it, 2 an error.`

// matrixFlags are `lockcheck matrix`'s flags.
type matrixFlags struct {
	pattern, tier, name, store, record, shard string
	repeat, first                             int
	idleBelow                                 float64
	list                                      bool
}

func newMatrixFlags() (*flag.FlagSet, *matrixFlags) {
	fs := newFlags("matrix")
	f := &matrixFlags{}
	fs.StringVar(&f.pattern, "rows", "", "row name pattern (glob or regular expression)")
	fs.StringVar(&f.tier, "tier", "", "quick, full or all")
	fs.IntVar(&f.repeat, "repeat", 1, "runs per row")
	fs.IntVar(&f.first, "first", 0, "the first run's number (its seed is the row's plus it)")
	fs.StringVar(&f.name, "cluster", cluster.DefaultName, "the shared cluster's name")
	fs.StringVar(&f.store, "store", runner.Defaults().Store, "store directory")
	fs.StringVar(&f.record, "record", "", "append measured rates (JSON lines) to this file")
	fs.StringVar(&f.shard, "shard", "", "run share `K/N` of the selected rows: the K-th of N, balanced by expected time")
	fs.Float64Var(&f.idleBelow, "idle-below", 0, "before each run, wait until the 1-minute load average is under `L` (at most 10 minutes a run)")
	fs.BoolVar(&f.list, "list", false, "print the rows and exit")
	return fs, f
}

// runMatrix is `lockcheck matrix`.
func runMatrix(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "merge" {
		return runMatrixMerge(args[1:], stdout, stderr)
	}
	fs, f := newMatrixFlags()
	pattern, tier, repeat, name, store, record, list := &f.pattern, &f.tier, &f.repeat, &f.name, &f.store, &f.record, &f.list
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "lockcheck matrix: "+format+"\n", a...)
		return exitError
	}
	if err := parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, matrixUsage)
			return exitValid
		}
		return bad("%v", err)
	}
	if *tier == "" {
		*tier = string(scenario.Quick)
		if *pattern != "" {
			*tier = "all"
		}
	}
	rows, err := scenario.Select(scenario.Rows, *tier, *pattern)
	if err != nil {
		return bad("--%v", err)
	}
	if len(rows) == 0 {
		return bad("no row of tier %s matches --rows %q (lockcheck matrix --list --tier all lists them)", *tier, *pattern)
	}
	if *repeat < 1 {
		return bad("--repeat must be at least 1, got %d", *repeat)
	}
	if f.first < 0 {
		return bad("--first must be at least 0, got %d", f.first)
	}
	if f.idleBelow < 0 {
		return bad("--idle-below must be a load above 0, got %g", f.idleBelow)
	}
	if _, ok := loadAverage(); f.idleBelow > 0 && !ok {
		return bad("--idle-below needs the load average of /proc/loadavg (Linux), which cannot be read here")
	}
	if f.shard != "" {
		sh, err := scenario.ParseShard(f.shard)
		if err != nil {
			return bad("--shard %v", err)
		}
		rows = sh.Of(rows)
		f.shard = sh.String()
		shardDefaults(fs, f, sh)
	}
	if *list {
		if code := listRows(stdout, rows); code != exitValid || f.shard == "" {
			return code
		}
		fmt.Fprintf(stdout, "shard %s: %d rows, expected %v a run of each (cluster starts included)\n", f.shard, len(rows), scenario.Estimate(rows))
		return exitValid
	}

	// Everything that can be refused is refused before Docker is touched.
	if err := cluster.ValidateOptions(cluster.WithName(*name)); err != nil {
		return bad("--cluster: %v", err)
	}
	for _, r := range rows {
		if _, err := matrix.Test(r, 0); err != nil {
			return bad("%v", err)
		}
	}
	groups := scenario.Groups(rows)
	opts := make([][]cluster.Option, len(groups))
	var lazyFS string
	for i, g := range groups {
		if g.Cluster.LazyFS && lazyFS == "" {
			if lazyFS, err = lazyFSBinary(); err != nil {
				return bad("%s: %v", g.Rows[0].Name, err)
			}
		}
		if opts[i], err = matrix.ClusterOptions(g.Cluster, lazyFS); err != nil {
			return bad("%s: %v", g.Rows[0].Name, err)
		}
	}
	var rec io.Writer
	if *record != "" {
		f, err := os.OpenFile(*record, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return bad("--record: %v", err)
		}
		defer f.Close()
		rec = f
	}

	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var results []scenario.Result
	var timed []rowRuns
	code := exitValid
	if len(rows) == 0 {
		fmt.Fprintf(stderr, "lockcheck matrix: shard %s of the selection has no row\n", f.shard)
	}
	for i, g := range groups {
		c, release, err := matrixCluster(ctx, *name, g.Cluster, opts[i], log, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "lockcheck matrix: cluster for %s: %s\n", g.Rows[0].Name, oneLine(err.Error()))
			code = exitError
			break
		}
		env := runner.ClusterEnv{Cluster: c}
		for _, row := range g.Rows {
			res, err := runRow(ctx, env, row, runPlan{first: f.first, repeat: *repeat, idleBelow: f.idleBelow}, *store, log, stderr)
			res.shard = f.shard
			results = append(results, res.Result)
			timed = append(timed, res)
			if err != nil {
				fmt.Fprintf(stderr, "lockcheck matrix: %s: %s\n", row.Name, oneLine(err.Error()))
				code = exitError
			}
			switch {
			case rec == nil:
			case recordable(res.Tally, *repeat, err):
				if err := writeRate(rec, row, res); err != nil {
					fmt.Fprintf(stderr, "lockcheck matrix: --record: %v\n", err)
					code = exitError
				}
			case res.Tally.Runs == *repeat:
				fmt.Fprintf(stderr, "lockcheck matrix: --record: %s not recorded: no run gave a verdict\n", row.Name)
			}
			if ctx.Err() != nil {
				break
			}
		}
		release()
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "lockcheck matrix: interrupted")
			code = exitError
			break
		}
	}
	// The catch rates on stdout, as a merge of shards prints them; what the
	// runs cost on stderr.
	if err := scenario.WriteTable(stdout, results); err != nil {
		return exitError
	}
	if err := writeTimeTable(stderr, timed); err != nil {
		return exitError
	}
	if code == exitValid && slices.ContainsFunc(results, func(r scenario.Result) bool { return !r.Tally.Met(r.Row) }) {
		code = exitInvalid
	}
	return code
}

// recordable says whether a row's runs make a rate worth a line: all of
// them were dealt (an interrupted row is not a rate). A run that broke (its
// set-up failed) is tallied unknown and the rate is still recorded, since
// dropping the line would lose the other runs' verdicts; but when runs
// broke and none gave a verdict, a line of unknowns would read as a
// measured rate of a row nothing was learnt about.
func recordable(t scenario.Tally, repeat int, runErr error) bool {
	return t.Runs == repeat && (runErr == nil || t.Valid+t.Invalid > 0)
}

func listRows(w io.Writer, rows []scenario.Row) int {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ROW\tTIER\tEXPECTED\tTIME\tCLUSTER\tEST")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\t%v\n", r.Name, r.Tier, r.Expected(), r.Time, r.Cluster, r.Estimate())
	}
	if err := tw.Flush(); err != nil {
		return exitError
	}
	return exitValid
}

// matrixCluster is the cluster a group of rows runs on: the running cluster
// name when it is of the group's configuration; else, for another
// configuration, name-KEY, attached when it runs as it should or started.
// release removes a cluster this call started.
func matrixCluster(ctx context.Context, name string, cfg scenario.Cluster, opts []cluster.Option, log *slog.Logger, stderr io.Writer) (c *cluster.Cluster, release func(), err error) {
	noop := func() {}
	c, err = cluster.Attach(ctx, cluster.WithName(name), cluster.WithLogger(log))
	switch {
	case err == nil && matrix.Fits(c, cfg):
		return c, noop, nil
	case err == nil && cfg.Shared():
		return nil, nil, fmt.Errorf("cluster %s runs %d nodes, paxos %s, lazyfs %t: not the shared configuration (%s)", name, len(c.Nodes()), c.Paxos(), c.LazyFS(), cfg)
	case err != nil && !errors.Is(err, cluster.ErrNotRunning):
		return nil, nil, err
	}
	if !cfg.Shared() {
		name += "-" + cfg.Key()
		c, err = cluster.Attach(ctx, cluster.WithName(name), cluster.WithLogger(log))
		switch {
		case err == nil && matrix.Fits(c, cfg):
			return c, noop, nil
		case err == nil:
			return nil, nil, fmt.Errorf("cluster %s runs, but not as %s: remove it (lockcheck cluster down --name %s)", name, cfg, name)
		case !errors.Is(err, cluster.ErrNotRunning):
			return nil, nil, err
		}
	}
	fmt.Fprintf(stderr, "lockcheck matrix: starting cluster %s (%s)\n", name, cfg)
	c, err = cluster.Start(ctx, append([]cluster.Option{cluster.WithName(name), cluster.WithLogger(log)}, opts...)...)
	if err != nil {
		return nil, nil, err
	}
	return c, func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if err := c.Stop(sctx, ""); err != nil {
			fmt.Fprintf(stderr, "lockcheck matrix: stop cluster %s: %v\n", name, err)
		}
	}, nil
}

// rowRuns is a row's runs and the machine's load while they ran.
type rowRuns struct {
	scenario.Result
	loads []float64
	// firsts are the invalid runs' times to their first anomaly.
	firsts []time.Duration
	// first is the number of the first run (--first).
	first int
	// shard is the share of a fan-out the runs were (--shard K/N), "" for
	// the whole selection.
	shard string
	// timings are the runs' phases (runner.Outcome.Timing).
	timings []runner.Timing
	// idleBelow is the load every run waited to start under
	// (--idle-below); idleMissed says a run started above it all the same.
	idleBelow  float64
	idleMissed bool
}

// runPlan is how a row's runs are made: how many, from which run number,
// and whether each waits for an idle machine.
type runPlan struct {
	first, repeat int
	// idleBelow: each run starts once the 1-minute load average is under
	// it (0: at once).
	idleBelow float64
}

// idleWait bounds the wait for an idle machine before a run: a 1-minute
// load average falls by about a third a minute once the machine is quiet,
// so 10 minutes is enough after any run, and a machine still busy then has
// work of its own that waiting will not end.
const idleWait = 10 * time.Minute

// waitIdle waits until the 1-minute load average is under below, at most
// idleWait, and returns the load the run starts at.
func waitIdle(ctx context.Context, below float64, stderr io.Writer) float64 {
	deadline := time.Now().Add(idleWait)
	for {
		load, _ := loadAverage()
		if load < below {
			return load
		}
		if ctx.Err() != nil {
			return load
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(stderr, "lockcheck matrix: the load is still %.1f after %v, not under %g: running anyway (the rate records it)\n", load, idleWait, below)
			return load
		}
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
		}
	}
}

// runRow runs the row plan.repeat times (seeds row.RunSeed(first..)) and
// tallies the verdicts; it stops early when ctx ends.
func runRow(ctx context.Context, env runner.Env, row scenario.Row, plan runPlan, store string, log *slog.Logger, stderr io.Writer) (rowRuns, error) {
	first, repeat := plan.first, plan.repeat
	res := rowRuns{Result: scenario.Result{Row: row}, first: first}
	var errs []error
	if repeat > 1 {
		// The row's runs hold the cluster from the first to the last: no
		// other process runs between them, so each run after the first
		// trusts its predecessor's heal instead of probing every node for
		// leftovers (runner's healed.go), a few seconds a run.
		lease, err := runner.TakeCluster(ctx, env, false, func(line string) { fmt.Fprintln(stderr, "lockcheck matrix: "+line) })
		if err != nil {
			return res, err
		}
		defer lease.Release()
	}
	for r := range repeat {
		if ctx.Err() != nil {
			break
		}
		if plan.idleBelow > 0 {
			res.idleBelow = plan.idleBelow
			if waitIdle(ctx, plan.idleBelow, stderr) >= plan.idleBelow {
				res.idleMissed = true
			}
		}
		res.loads = appendLoad(res.loads)
		tc, err := matrix.Test(row, first+r)
		if err != nil {
			return res, err
		}
		tc.Store, tc.Log = store, log
		out, err := runner.Run(ctx, env, runner.ReportStore{}, tc)
		if se := (*runner.StoreError)(nil); errors.As(err, &se) {
			// A full or read-only store fails every run after this one
			// too: the matrix stops, and this run counts for nothing.
			return res, fmt.Errorf("run %d: %w", r+1, se)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("run %d: %w", r+1, err))
		}
		v := out.Verdict
		if err != nil && v != checker.Invalid {
			v = checker.Unknown // a run that broke vouches for nothing but an anomaly it saw
		}
		missing := res.Tally.Add(row, v, out.Faults, out.Phases.Undealt)
		if d, ok := firstAnomaly(out); ok && v == checker.Invalid {
			res.firsts = append(res.firsts, d)
		}
		res.Tally.Saw(out.Result.Anomalies)
		liveErr := res.Tally.Live(row, out.Result.Liveness)
		line := fmt.Sprintf("lockcheck matrix: %s run %d/%d (seed %d): %s, %d ops, %d anomalies", row.Name, r+1, repeat, tc.Seed, v, out.Ops, len(out.Result.Anomalies))
		if len(missing) > 0 {
			line += fmt.Sprintf("; no %s fault injected", strings.Join(missing, ", "))
		}
		if out.Phases.Undealt > 0 {
			line += fmt.Sprintf("; %d of the schedule's steps never dealt", out.Phases.Undealt)
		}
		if l := out.Result.Liveness; l != nil {
			line += fmt.Sprintf("; availability %.1f%%", 100*l.Availability())
		}
		if liveErr != nil {
			line += "; liveness: " + liveErr.Error()
		}
		if out.Timing.Total > 0 {
			res.timings = append(res.timings, out.Timing)
			line += "; took " + out.Timing.String()
		}
		if out.Dir != "" {
			line += "; " + out.Dir
		}
		fmt.Fprintln(stderr, line)
		res.loads = appendLoad(res.loads)
	}
	return res, errors.Join(errs...)
}

// appendLoad adds the 1-minute load average (Linux), when there is one.
func appendLoad(loads []float64) []float64 {
	if v, ok := loadAverage(); ok {
		return append(loads, v)
	}
	return loads
}

// loadAverage is the 1-minute load average (Linux's /proc/loadavg).
func loadAverage() (float64, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return v, err == nil
}

// writeRate appends the row's measured rate as a line of rates.jsonl.
func writeRate(w io.Writer, row scenario.Row, res rowRuns) error {
	rt := scenario.Rate{
		Row: row.Name, Time: scenario.Duration(row.Time), Interval: scenario.Duration(row.Interval),
		Runs: res.Tally.Runs, Invalid: res.Tally.Invalid, Unknown: res.Tally.Unknown, NoFault: res.Tally.NoFault,
		Date: time.Now().UTC().Format(time.DateOnly), Cores: runtime.NumCPU(), First: res.first,
		Def: row.Fingerprint(), Shard: res.shard,
	}
	rt.Anomalies, rt.Kinds = res.Tally.AnomalyRange()
	rt.Availability, rt.Stuck = res.Tally.AvailabilityRange(), res.Tally.Stuck
	if len(res.loads) > 0 {
		rt.Load = fmt.Sprintf("%.0f-%.0f", slices.Min(res.loads), slices.Max(res.loads))
	}
	if !res.idleMissed {
		rt.IdleBelow = res.idleBelow
	}
	if n := len(res.firsts); n > 0 {
		fs := slices.Clone(res.firsts)
		slices.Sort(fs)
		rt.FirstAnomaly = scenario.Duration(fs[n/2])
	}
	b, err := json.Marshal(rt)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// firstAnomaly is the time from the start of a run's clients and faults
// (the end of its history less its total) to its first anomaly. A
// non-linearizable piece's window starts with the piece, not with the
// violation: it counts only when the run has nothing else.
func firstAnomaly(out runner.Outcome) (time.Duration, bool) {
	as := slices.DeleteFunc(slices.Clone(out.Result.Anomalies), func(a checker.Anomaly) bool { return a.Kind == checker.KindNonLinearizable })
	if len(as) == 0 {
		as = out.Result.Anomalies
	}
	if len(as) == 0 || out.Phases.TotalMS <= 0 {
		return 0, false
	}
	first := as[0].Start
	for _, a := range as {
		first = min(first, a.Start)
	}
	origin := int64(out.Result.Stats.Duration*1e9) - out.Phases.TotalMS*int64(time.Millisecond)
	return time.Duration(max(first-origin, 0)), true
}
