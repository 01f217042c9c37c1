package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

// writeLiveness prints each lock's availability and every stuck period
// (not failing: liveness is not part of the verdict).
func writeLiveness(w io.Writer, v *checker.Liveness) {
	if v == nil {
		return
	}
	fmt.Fprintf(w, "\n%s (not failing):\n", v.Summary())
	for i, l := range v.Locks {
		if i == 20 {
			fmt.Fprintf(w, "  ... %d more locks (see --json)\n", len(v.Locks)-i)
			break
		}
		fmt.Fprintf(w, "  %s: available %.1f%% (%s unavailable), %d grants\n", l.Lock, 100*l.Availability,
			(time.Duration(l.UnavailableMS) * time.Millisecond).String(), l.Grants)
		for _, s := range l.Stuck {
			fmt.Fprintf(w, "    stuck (%s) %s\n", s.Cause, s.Message)
		}
	}
}

// stdin is where `lockcheck check -` reads (a variable for tests).
var stdin io.Reader = os.Stdin

// checkFlags are `lockcheck check`'s flags.
type checkFlags struct {
	json    bool
	timeout time.Duration
	// acquireTimeout and stuckBound are liveness's, over the run's own.
	acquireTimeout, stuckBound time.Duration
}

func newCheckFlags() (*flag.FlagSet, *checkFlags) {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	f := &checkFlags{}
	fs.BoolVar(&f.json, "json", false, "print the result as JSON (the results.json format)")
	fs.DurationVar(&f.timeout, "timeout", 0, "give up after this long; the verdict is then unknown (0: no limit)")
	fs.DurationVar(&f.acquireTimeout, "acquire-timeout", 0, "liveness: the acquire time-out availability is counted with (default: the run's, else 5s)")
	fs.DurationVar(&f.stuckBound, "stuck-bound", 0, "liveness: how long a lock left held by a dead holder may go without a grant before it is stuck (default: the run's, else the TTL plus two acquire time-outs; not below the run's TTL)")
	return fs, f
}

const checkUsage = `usage: lockcheck check [--json] [--timeout D] [--acquire-timeout D] [--stuck-bound D] HISTORY.jsonl   (- reads stdin)
exit status: 0 valid, 1 invalid, 2 bad input, 3 unknown`

// withUsage sends fs's errors and usage (the command's usage text, then
// its flags) to stderr.
func withUsage(fs *flag.FlagSet, stderr io.Writer, usage string) {
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, usage)
		fs.PrintDefaults()
	}
}

// runCheck: lockcheck check [--json] [--timeout D] HISTORY.jsonl
func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, f := newCheckFlags()
	withUsage(fs, stderr, checkUsage)
	arg, code, ok := parseOneArg(fs, args)
	if !ok {
		return code
	}
	var opts []checker.Option
	if f.timeout > 0 {
		opts = append(opts, checker.WithTimeout(f.timeout))
	}
	if f.acquireTimeout < 0 || f.stuckBound < 0 {
		fmt.Fprintf(stderr, "lockcheck check: --acquire-timeout and --stuck-bound must not be negative\n")
		return exitError
	}
	opts = append(opts, checker.WithAcquireTimeout(f.acquireTimeout), checker.WithStuckBound(f.stuckBound))
	start := time.Now()
	defer tuneGC(checkMemLimit)()
	var (
		res checker.Result
		err error
	)
	if arg == "-" {
		res, err = checker.CheckReader(ctx, stdin, opts...)
	} else {
		res, err = checker.CheckFile(ctx, arg, opts...)
	}
	if err != nil {
		fmt.Fprintf(stderr, "lockcheck check: %s: %v\n", arg, err)
		return exitError
	}
	if ttl := runTTL(res.Meta); f.stuckBound > 0 && f.stuckBound < ttl {
		fmt.Fprintf(stderr, "lockcheck check: --stuck-bound %v is below the run's TTL %v: every lease waited out after its holder died would be called stuck\n", f.stuckBound, ttl)
		return exitError
	}
	if f.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			fmt.Fprintf(stderr, "lockcheck check: %v\n", err)
			return exitError
		}
	} else {
		writeSummary(stdout, arg, res, time.Since(start))
	}
	return verdictCode(res.Verdict)
}

// runTTL is the TTL a run's meta line records (0: none said).
func runTTL(m *history.Meta) time.Duration {
	if m == nil {
		return 0
	}
	d, _ := time.ParseDuration(m.Config["ttl"])
	return d
}

func verdictCode(v checker.Verdict) int {
	switch v {
	case checker.Valid:
		return exitValid
	case checker.Invalid:
		return exitInvalid
	}
	return exitUnknown
}

// parseOneArg parses the flags and the single operand of check and report.
// When ok is false the command exits with code: 0 for -h, 2 for bad input.
func parseOneArg(fs *flag.FlagSet, args []string) (arg string, code int, ok bool) {
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return "", exitValid, false
		}
		return "", exitError, false
	}
	if len(rest) != 1 {
		fs.Usage()
		return "", exitError, false
	}
	return rest[0], 0, true
}

// parseInterspersed parses flags that may come before or after the
// positional arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return rest, nil
		}
		if args[0] == "--" {
			return append(rest, args[1:]...), nil
		}
		rest = append(rest, args[0])
		args = args[1:]
	}
}

// writeSummary prints a result for people.
func writeSummary(w io.Writer, path string, res checker.Result, took time.Duration) {
	fmt.Fprintf(w, "%s: %s\n", path, strings.ToUpper(string(res.Verdict)))
	if res.Meta != nil {
		fmt.Fprintf(w, "  test %q, lock %q, promise %q\n", res.Meta.Test, res.Meta.Lock, res.Promise)
	} else {
		fmt.Fprintln(w, "  no meta line: every property is judged")
	}
	if res.SetupFailed != "" {
		fmt.Fprintf(w, "  failed set-up, no test ran: %s\n", res.SetupFailed)
	}
	if res.Meta != nil {
		for _, f := range res.Meta.Foreign {
			fmt.Fprintf(w, "  not lockcheck's, present through the run: %s: %s\n", f.Node, f.What)
		}
	}
	if res.Pending > 0 {
		fmt.Fprintf(w, "  %d invocations without completion, checked as info (killed run?)\n", res.Pending)
	}
	if res.Truncated {
		fmt.Fprintln(w, "  an unterminated last line was dropped")
	}
	fmt.Fprintf(w, "  checked in %s\n\n", took.Round(time.Millisecond))
	fmt.Fprintln(w, "checks:")
	for _, c := range res.Checks {
		note := ""
		switch {
		case c.Skipped:
			note = " (skipped)"
		case !c.Judged && c.Name != checker.CheckStatistics:
			note = " (not judged: outside the promise)"
		}
		fmt.Fprintf(w, "  %-21s %-8s %s%s\n", c.Name, c.Verdict, c.Detail, note)
	}
	printAnomalies := func(title string, as []checker.Anomaly, omitted int) {
		if len(as) == 0 {
			return
		}
		fmt.Fprintf(w, "\n%s (%d", title, len(as)+omitted)
		if omitted > 0 {
			fmt.Fprintf(w, ", %d shown", len(as))
		}
		fmt.Fprintln(w, "):")
		for i, a := range as {
			if i == 20 {
				fmt.Fprintf(w, "  ... %d more (see --json)\n", len(as)-i)
				break
			}
			fmt.Fprintf(w, "  %s %s\n", a.Kind, a.Message)
		}
	}
	printAnomalies("anomalies", res.Anomalies, res.AnomaliesOmitted)
	printAnomalies("findings (shown, not failing)", res.Findings, 0)
	writeLiveness(w, res.Liveness)

	fmt.Fprintln(w, "\noperations (ok/fail/info, latency of ok p50/p99/max ms):")
	fs := make([]string, 0, len(res.Stats.ByF))
	for f := range res.Stats.ByF {
		fs = append(fs, f)
	}
	sort.Strings(fs)
	for _, f := range fs {
		c, l := res.Stats.ByF[f], res.Stats.LatencyOK[f]
		fmt.Fprintf(w, "  %-10s %7d/%d/%d", f, c.OK, c.Fail, c.Info)
		if c.Pending > 0 {
			fmt.Fprintf(w, " +%d pending", c.Pending)
		}
		if l.Count > 0 {
			fmt.Fprintf(w, "   %.1f/%.1f/%.1f", l.P50, l.P99, l.Max)
		}
		fmt.Fprintln(w)
	}
}
