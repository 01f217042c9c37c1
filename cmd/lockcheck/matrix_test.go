package main

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/scenario"
)

// Bad input to `lockcheck matrix` is refused with one line and exit 2
// before anything touches Docker.
func TestMatrixRejectsBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tier", "slow"}, `tier "slow": want quick, full or all`},
		{[]string{"--repeat", "0"}, "--repeat must be at least 1, got 0"},
		{[]string{"--first", "-1"}, "--first must be at least 0, got -1"},
		{[]string{"--idle-below", "-1"}, "--idle-below must be a load above 0, got -1"},
		{[]string{"--rows", "no-such-row"}, `no row of tier all matches --rows "no-such-row"`},
		{[]string{"--rows", "music-seq/node-faults", "--tier", "quick"}, "no row of tier quick matches"},
		{[]string{"--cluster", "Bad_Name", "--rows", "racy"}, "--cluster: "},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--bogus"}, "flag provided but not defined"},
	} {
		var stdout, stderr bytes.Buffer
		code := dispatch(context.Background(), append([]string{"matrix"}, tc.args...), &stdout, &stderr)
		if code != exitError || !strings.Contains(stderr.String(), tc.want) || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("matrix %v: exit %d, stderr %q; want exit 2 and one line with %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}

func TestMatrixList(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := dispatch(context.Background(), []string{"matrix", "--list", "--rows", "^(periodic|batch)/(lease-fenced|music-seq)/rack-power-loss$"}, &stdout, &stderr); code != exitValid {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[1], "periodic/lease-fenced/rack-power-loss  full   invalid >= 9/10") {
		t.Errorf("--list --rows (the four recipes' rack-power-loss rows):\n%s\nwant a header and the 4 rack-power-loss rows", stdout.String())
	}
	stdout.Reset()
	dispatch(context.Background(), []string{"matrix", "--list"}, &stdout, &stderr)
	if strings.Contains(stdout.String(), "music-seq/node-faults ") || !strings.Contains(stdout.String(), "racy/none") {
		t.Errorf("--list without --rows lists the quick tier only:\n%s", stdout.String())
	}
}

// A recorded rate is a line of rates.jsonl that the scenario package reads
// back and accepts.
func TestWriteRate(t *testing.T) {
	row, ok := scenario.Lookup("bakery-one/coord-partition")
	if !ok {
		t.Fatal("no row bakery-one/coord-partition")
	}
	res := rowRuns{Result: scenario.Result{Row: row}, loads: []float64{12.4, 30.6, 18}, first: 5}
	for i, v := range []checker.Verdict{checker.Invalid, checker.Invalid, checker.Unknown} {
		res.Tally.Add(row, v, map[string]int{"coord-partition": 1}, 0)
		res.Tally.Saw(slices.Repeat([]checker.Anomaly{{Kind: "lost-add"}, {Kind: "overlapping-holds"}}, 3-i))
	}
	// A run in which the row's fault was never dealt is a run, and is
	// recorded as one that shows nothing of the row.
	res.Tally.Add(row, checker.Valid, map[string]int{}, 0)
	var buf bytes.Buffer
	if err := writeRate(&buf, row, res); err != nil {
		t.Fatal(err)
	}
	rates, err := scenario.ReadRates(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(rates) != 1 {
		t.Fatalf("%d rates, want 1", len(rates))
	}
	rt := rates[0]
	if rt.Row != row.Name || rt.Runs != 4 || rt.Invalid != 2 || rt.Unknown != 1 || rt.NoFault != 1 || rt.Load != "12-31" ||
		time.Duration(rt.Time) != row.Time || time.Duration(rt.Interval) != row.Interval || rt.Cores < 1 || rt.First != 5 {
		t.Errorf("rate %+v does not carry the row's runs", rt)
	}
	if rt.Anomalies != "2-6" || !slices.Equal(rt.Kinds, []string{"lost-add", "overlapping-holds"}) {
		t.Errorf("rate's anomalies %q, kinds %v, want 2-6 of lost-add and overlapping-holds", rt.Anomalies, rt.Kinds)
	}
	if err := scenario.CheckRates(scenario.Rows, rates); err != nil {
		t.Error(err)
	}
	if rt.IdleBelow != 0 {
		t.Errorf("idle bound %v recorded for runs that did not wait", rt.IdleBelow)
	}
	// Runs that waited for an idle machine record the bound when every run
	// started under it, and nothing when one did not.
	for _, tc := range []struct {
		missed bool
		want   float64
	}{{false, 2}, {true, 0}} {
		res.idleBelow, res.idleMissed = 2, tc.missed
		buf.Reset()
		if err := writeRate(&buf, row, res); err != nil {
			t.Fatal(err)
		}
		if rates, err := scenario.ReadRates(&buf); err != nil || rates[0].IdleBelow != tc.want {
			t.Errorf("a run above the bound %v: recorded %+v (%v), want idle below %v", tc.missed, rates, err, tc.want)
		}
	}
}

// waitIdle returns at once on a machine under the bound, and at once when
// the wait is cancelled, with the load it saw.
func TestWaitIdle(t *testing.T) {
	if _, ok := loadAverage(); !ok {
		t.Skip("no /proc/loadavg")
	}
	var stderr bytes.Buffer
	start := time.Now()
	if load := waitIdle(context.Background(), 1e9, &stderr); load < 0 || time.Since(start) > time.Second || stderr.Len() > 0 {
		t.Errorf("under the bound: load %v after %v, said %q; want at once, silently", load, time.Since(start), stderr.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start = time.Now()
	if waitIdle(ctx, -1, &stderr); time.Since(start) > time.Second || stderr.Len() > 0 {
		t.Errorf("cancelled: returned after %v, said %q; want at once, silently", time.Since(start), stderr.String())
	}
}

// A row is recorded when all its runs were dealt, broken ones counted
// unknown, unless runs broke and not one gave a verdict.
func TestRecordable(t *testing.T) {
	broke := errors.New("run 1: reports: mkdir store: not a directory")
	for _, tc := range []struct {
		name  string
		tally scenario.Tally
		err   error
		want  bool
	}{
		{"every run judged", scenario.Tally{Runs: 3, Invalid: 2, Valid: 1}, nil, true},
		{"one run broke", scenario.Tally{Runs: 3, Invalid: 2, Unknown: 1}, broke, true},
		{"unknown verdicts, nothing broke", scenario.Tally{Runs: 3, Unknown: 3}, nil, true},
		{"every run broke", scenario.Tally{Runs: 3, Unknown: 3}, broke, false},
		{"interrupted", scenario.Tally{Runs: 2, Invalid: 2}, nil, false},
	} {
		if got := recordable(tc.tally, 3, tc.err); got != tc.want {
			t.Errorf("%s: recordable = %t, want %t", tc.name, got, tc.want)
		}
	}
}
