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
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck"
	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/reports"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/shrink"
	"github.com/lockcheck/lockcheck/workload"
)

type shrinkFlags struct {
	replayConfig
	anomaly string
	o       shrink.Options
}

func newShrinkFlags() (*flag.FlagSet, *shrinkFlags) {
	fs := flag.NewFlagSet("shrink", flag.ContinueOnError)
	f := &shrinkFlags{}
	f.replayConfig.flags(fs)
	fs.Lookup("store").Usage = "the store of the candidates' runs (default: DIR/shrink/runs)"
	fs.Lookup("store").DefValue = ""
	f.store = ""
	fs.StringVar(&f.anomaly, "anomaly", "", "the anomaly kind a candidate must show (default: the run's first)")
	fs.IntVar(&f.o.Tries, "tries", 3, "tries of one candidate before it is given up (a failure is probabilistic)")
	fs.IntVar(&f.o.Confirm, "confirm", 10, "tries of the smallest candidate for its catch rate")
	fs.IntVar(&f.o.MaxRuns, "max-runs", 40, "runs the search may make (the confirmation comes after)")
	fs.DurationVar(&f.o.MaxWall, "max-wall", 30*time.Minute, "wall time the search may take")
	fs.DurationVar(&f.o.MinTime, "min-time", 5*time.Second, "the shortest run it tries")
	fs.DurationVar(&f.o.MinFor, "min-window", 500*time.Millisecond, "the shortest fault window it tries")
	return fs, f
}

const shrinkUsage = `usage: lockcheck shrink [--anomaly KIND] [--tries 3] [--confirm 10] [--max-runs 40] [--max-wall 30m] [--cluster NAME] DIR
searches, by replaying the invalid run DIR, for the smallest run that fails the same way (the same anomaly
kind): fewer faults (delta debugging over its schedule), shorter windows, fewer clients and locks, a
shorter run. Prints and stores (DIR/shrink/) the minimal schedule, its catch rate and the one command that
reproduces it; DIR's report links to it. Exit 0 when found, 2 on bad input`

// runShrink is `lockcheck shrink DIR`.
func runShrink(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, f := newShrinkFlags()
	withUsage(fs, stderr, shrinkUsage)
	dir, code, ok := parseOneArg(fs, args)
	if !ok {
		return code
	}
	bad := badInput(stderr, "shrink")
	r, err := loadRun(ctx, dir)
	if err != nil {
		return bad(err)
	}
	if r.verdict != checker.Invalid || len(r.anomalies) == 0 {
		return bad(fmt.Errorf("%s is %s: nothing to shrink (shrink keeps an anomaly)", dir, r.verdict))
	}
	kind := cmpOr(f.anomaly, r.anomalies[0])
	if !slices.Contains(r.anomalies, kind) {
		return bad(fmt.Errorf("%s has no %s anomaly (it has %s)", dir, kind, strings.Join(r.anomalies, ", ")))
	}
	out := filepath.Join(dir, reports.ShrinkDir)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return bad(err)
	}
	if f.store == "" {
		f.store = filepath.Join(out, "runs")
	}
	// A plan of the run itself first: bad input (a lock that is not a
	// recipe, a kind the cluster cannot serve) stops here, before a search.
	first := candidate{schedule: r.schedule}
	lock, opts, err := f.options(r, first)
	if err != nil {
		return bad(err)
	}
	plan, err := lockcheck.NewPlan(lock, opts...)
	if err != nil {
		return bad(err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	f.o.Log = log
	start := shrink.Candidate{Schedule: r.schedule, Clients: plan.Test.Clients, Locks: plan.Test.Locks, Time: plan.Test.Time}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	try := func(ctx context.Context, c shrink.Candidate) (bool, error) {
		lock, opts, err := f.options(r, candidate{schedule: c.Schedule, clients: c.Clients, locks: c.Locks, time: c.Time})
		if err != nil {
			return false, err
		}
		if len(c.Schedule.Steps) == 0 {
			opts = append(opts, lockcheck.WithNemesis("none"))
		}
		res, err := lockcheck.Run(ctx, lock, append(opts, lockcheck.WithLogger(quiet))...)
		if se := (*runner.SetupError)(nil); errors.As(err, &se) || (err != nil && res.Dir == "") {
			return false, err
		}
		caught := res.Verdict == checker.Invalid && slices.Contains(anomalyKinds(res.Check), kind)
		log.Info("shrink: tried", "candidate", c.String(), "verdict", res.Verdict, "caught", caught, "dir", res.Dir)
		return caught, nil
	}
	fmt.Fprintf(stderr, "lockcheck shrink: %s (%s), from %s\n", dir, kind, start.String())
	res, err := shrink.Search(ctx, start, try, f.o)
	if err != nil && !errors.Is(err, context.Canceled) {
		return bad(err)
	}
	m := res.Minimal
	sum := reports.Shrunk{Anomaly: kind, Steps: len(m.Schedule.Steps), Caught: res.Caught, Tries: res.Tries,
		Clients: m.Clients, Locks: m.Locks, Time: m.Time.String(), Runs: res.Runs, Seconds: res.Wall.Seconds()}
	// The one command that reproduces it: the run's Spec with the
	// smallest candidate's clients, locks and time, as run's flags.
	rs := f.spec(r, candidate{clients: m.Clients, locks: m.Locks, time: m.Time})
	var cmd []string
	switch {
	case rs.Workload == workload.ShapeRegister:
		cmd = []string{"lockcheck", "run"}
	case f.lockCmd != "":
		cmd = []string{"lockcheck", "run", "--lock-cmd", strconv.Quote(f.lockCmd), "--promise", rs.Promise}
	case f.lockURL != "":
		cmd = []string{"lockcheck", "run", "--lock-url", f.lockURL, "--promise", rs.Promise}
	default:
		cmd = []string{"lockcheck", "run", "--lock", rs.Lock}
	}
	cmd = append(cmd, rs.Args([]string{"workload", "clients", "locks", "time", "ttl", "seed"}, []string{"store", "nemesis", "no-wait"})...)
	if len(m.Schedule.Steps) > 0 {
		m.Schedule.Source = dir + " (shrunk)"
		path := filepath.Join(out, runner.ScheduleFile)
		if err := m.Schedule.Save(path); err != nil {
			return bad(err)
		}
		sum.Schedule = reports.ShrinkDir + "/" + runner.ScheduleFile
		cmd = append(cmd, "--schedule", path)
	} else {
		cmd = append(cmd, "--nemesis", "none")
		sum.Notes = append(sum.Notes, "no fault is needed: the run fails the same way without any")
	}
	if res.Exhausted {
		sum.Notes = append(sum.Notes, "the budget ran out: the smallest found, perhaps not the smallest there is")
	}
	sum.Command = strings.Join(cmd, " ")
	if err := writeJSON(filepath.Join(out, reports.ShrinkFile), sum); err != nil {
		return bad(err)
	}
	// The run's report links to what was found.
	if _, err := reports.Build(ctx, dir, reports.WithLogger(quiet)); err != nil {
		fmt.Fprintf(stderr, "lockcheck shrink: the run's report not rebuilt: %v\n", err)
	}
	fmt.Fprintf(stdout, "smallest: %s\n", m.String())
	for _, st := range m.Schedule.Steps {
		fmt.Fprintf(stdout, "  %-16s at %-8v for %-8v %s %s\n", st.Kind, st.At.D(), st.For.D(), strings.Join(st.Nodes, ","), st.Value)
	}
	fmt.Fprintf(stdout, "catch rate: %s in %d of %d tries (%d runs, %s)\n", kind, res.Caught, res.Tries, res.Runs, res.Wall.Round(time.Second))
	for _, n := range sum.Notes {
		fmt.Fprintf(stdout, "note: %s\n", n)
	}
	fmt.Fprintf(stdout, "reproduce: %s\n", sum.Command)
	return exitValid
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
