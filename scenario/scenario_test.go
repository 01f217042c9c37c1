package scenario

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/golden"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/register"
	"github.com/lockcheck/lockcheck/workload"
)

func TestRowsConsistent(t *testing.T) {
	if err := Check(Rows); err != nil {
		t.Fatal(err)
	}
}

// good is a consistent row the cases below spoil one field at a time.
func good() Row {
	return Row{
		Name: "lease/client-pause", Recipe: "lease", Faults: []string{nemesis.ClientPause},
		Time: 20 * time.Second, Interval: 3 * time.Second, Seed: 7,
		Want: checker.Invalid, Unsafe: true, Tier: Quick, Mechanism: "a stalled holder",
	}
}

func TestCheckRefusesInconsistentRows(t *testing.T) {
	if err := good().Check(); err != nil {
		t.Fatalf("the good row: %v", err)
	}
	for _, tc := range []struct {
		name  string
		spoil func(*Row)
		want  string
	}{
		{"unsafe without want invalid", func(r *Row) { r.Want = checker.Valid }, "unsafe but want valid"},
		{"want invalid without unsafe", func(r *Row) { r.Unsafe = false }, "want invalid but not unsafe"},
		{"no verdict", func(r *Row) { r.Want, r.Unsafe = "", false }, "a row asserts valid or invalid"},
		{"unknown verdict", func(r *Row) { r.Want = checker.Unknown }, "a row asserts valid or invalid"},
		{"no tier", func(r *Row) { r.Tier = "" }, "tier"},
		{"no time", func(r *Row) { r.Time = 0 }, "--time must be positive"},
		{"no interval", func(r *Row) { r.Interval = 0 }, "--interval must be positive"},
		{"too many clients", func(r *Row) { r.Clients = 101 }, "--clients must be 1..100, got 101"},
		{"no seed", func(r *Row) { r.Seed = 0 }, "seed"},
		{"no mechanism", func(r *Row) { r.Mechanism = " " }, "no mechanism"},
		{"unknown kind", func(r *Row) { r.Faults, r.Name = []string{"meteor"}, "lease/meteor" }, "unknown fault"},
		{"aimed without pins", func(r *Row) { r.Faults, r.Name = []string{nemesis.CoordClock}, "lease/coord-clock" }, "needs Pin"},
		{"paxos upgrade on a cluster of others", func(r *Row) { r.Faults, r.Name = []string{nemesis.PaxosUpgrade}, "lease/paxos-upgrade" }, "cluster of its own with PaxosUpgrade"},
		{"unknown shape", func(r *Row) { r.Workload, r.Name = "swarm", "lease/client-pause/swarm" }, "workload"},
		{"name hides the faults", func(r *Row) { r.Name = "lease" }, `want "lease/client-pause"`},
		{"name hides the cluster", func(r *Row) { r.Cluster = Cluster{Paxos: "v2"} }, `want "v2/lease/client-pause"`},
		{"name hides the shape", func(r *Row) { r.Workload = workload.ShapeLeader }, `want "lease/client-pause/leader"`},
		{"name with a space", func(r *Row) { r.Name = "lease client-pause" }, "lower-case words"},
		{"name hides the schedule", func(r *Row) { r.Schedule = &pauseSchedule }, `want "lease/client-pause/shrunk"`},
		{"schedule of other kinds", func(r *Row) {
			r.Name, r.Schedule = "lease/client-pause/shrunk", &nemesis.Schedule{Steps: []nemesis.Step{{Kind: nemesis.ClientClock, For: nemesis.Duration(s)}}}
		}, "want the schedule's kinds [client-clock]"},
		{"schedule longer than the row", func(r *Row) { r.Name, r.Schedule, r.Time = "lease/client-pause/shrunk", &pauseSchedule, 3*s }, "after the row's time"},
		{"skew bounds without client-clock", func(r *Row) { r.SkewMin, r.SkewMax = 4*s, 8*s }, "skew bounds without client-clock or coord-clock"},
		{"aim at the write without its faults", func(r *Row) { r.AimWrite = true }, "aim at the write without coord-net-delay or coord-slow-node"},
		{"skew bounds reversed", func(r *Row) {
			r.Name, r.Faults, r.SkewMin, r.SkewMax = "lease/client-clock", []string{nemesis.ClientClock}, 8*s, 4*s
		}, "skew bounds must be 0 < skew-min <= skew-max"},
		{"skew bounds without a minimum", func(r *Row) {
			r.Name, r.Faults, r.SkewMax = "lease/client-clock", []string{nemesis.ClientClock}, 8*s
		}, "skew bounds must be 0 < skew-min <= skew-max"},
		{"empty schedule with faults", func(r *Row) {
			r.Name, r.Schedule = "lease/client-pause/shrunk", &nemesis.Schedule{Source: "lease/client-pause, seed 1"}
		}, "want the schedule's kinds []"},
		{"empty schedule without its source", func(r *Row) {
			r.Name, r.Faults, r.Schedule = "lease/none/shrunk", nil, &nemesis.Schedule{}
		}, "an empty schedule names its source"},
		{"promise of a recipe", func(r *Row) { r.Promise = history.PromiseFenced }, "without a command"},
		{"plug-in with a bad name", func(r *Row) { r.Command, r.Recipe, r.Name = "plugins/x/run", "X_lock", "X_lock/client-pause" }, "a plug-in's name"},
		{"plug-in outside the repository", func(r *Row) { r.Command = "/usr/bin/lock" }, "a path inside the repository"},
		{"plug-in above the repository", func(r *Row) { r.Command = "../x/run" }, "a path inside the repository"},
		{"catch bar above 9", func(r *Row) { r.Catch = 10 }, "1 to 9 runs of 10"},
		{"negative catch bar", func(r *Row) { r.Catch = -1 }, "1 to 9 runs of 10"},
		{"catch bar on a safe row", func(r *Row) { r.Want, r.Unsafe, r.Catch = checker.Valid, false, 4 }, "only a known-unsafe row"},
		{"load bound on an unsafe row", func(r *Row) { r.Load = &LoadBound{Row: "x/y", Kinds: lateWrites} }, "only a safe row's verdict"},
		{"load bound without kinds", func(r *Row) { r.Want, r.Unsafe, r.Load = checker.Valid, false, &LoadBound{Row: "x/y"} }, "without its slowness row"},
		{"load bound without its row", func(r *Row) { r.Want, r.Unsafe, r.Load = checker.Valid, false, &LoadBound{Kinds: lateWrites} }, "without its slowness row"},
		{"plug-in with an unknown promise", func(r *Row) { r.Command, r.Promise = "plugins/x/run", "linear" }, `promise "linear"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := good()
			tc.spoil(&r)
			err := r.Check()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check() = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// A row may name a plug-in: its Recipe is then the plug-in's name.
func TestPluginRowChecks(t *testing.T) {
	r := good()
	r.Command, r.Recipe, r.Promise, r.Name = "plugins/shedlock/run --x", "shedlock", history.PromiseMutex, "shedlock/client-pause"
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
}

// A flaw that needs no fault shrinks to an empty schedule: the row runs
// with none and keeps its /shrunk name.
func TestEmptyScheduleRowChecks(t *testing.T) {
	r := good()
	r.Name, r.Faults, r.Schedule = "lease/none/shrunk", nil, &nemesis.Schedule{Source: "lease/none, seed 1"}
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestCheckRefusesDuplicates(t *testing.T) {
	a, b := good(), good()
	if err := Check([]Row{a, b}); err == nil || !strings.Contains(err.Error(), "name used twice") || !strings.Contains(err.Error(), "seed 7") {
		t.Fatalf("Check(two equal rows) = %v, want name and seed used twice", err)
	}
}

// The shared cluster is the zero configuration; every other one has a key
// that its rows' names start with, and the keys the configs matrix always
// had stay.
func TestClusterKeys(t *testing.T) {
	for _, tc := range []struct {
		c    Cluster
		want string
	}{
		{Cluster{}, ""},
		{Cluster{Nodes: 3, Paxos: "v1", Commitlog: "periodic"}, ""},
		{Cluster{Paxos: "v2"}, "v2"},
		{Cluster{LazyFS: true}, "periodic"},
		{Cluster{LazyFS: true, Commitlog: "batch"}, "batch"},
		{Cluster{Commitlog: "batch"}, "sync-batch"},
		{Cluster{Nodes: 5, DCs: 2, Version: "4.1"}, "5n-2dc-c4.1"},
		{Cluster{Accord: "full", Version: "6.0-alpha"}, "accord-c6.0-alpha"},
		{Cluster{Nodes: 1, Accord: "mixed_reads", Version: "6.0-alpha"}, "1n-accord-mr-c6.0-alpha"},
		{Cluster{Accord: "full", AccordStopMarker: "REBOOTSTRAP", Version: "6.0-alpha"}, "accord-rb-c6.0-alpha"},
		{Cluster{Nodes: 4, Spares: 1, Paxos: PaxosV2, SkipPaxosRepair: true}, "4n-v2-1spare-skip"},
		{Cluster{Paxos: PaxosV2, PaxosStatePurging: purgeGCGrace, Version: "4.1"}, "v2-pgc-c4.1"},
		{c19617Cluster("4.1.5"), "v2-prep-nc-c4.1.5"},
	} {
		if got := tc.c.Key(); got != tc.want {
			t.Errorf("%+v.Key() = %q, want %q", tc.c, got, tc.want)
		}
		if got := tc.c.Shared(); got != (tc.want == "") {
			t.Errorf("%+v.Shared() = %v", tc.c, got)
		}
	}
}

func TestTallyMet(t *testing.T) {
	unsafe, safe, rare := good(), good(), good()
	safe.Want, safe.Unsafe = checker.Valid, false
	rare.Catch = 4
	injected := map[string]int{nemesis.ClientPause: 2}
	tally := func(row Row, vs ...checker.Verdict) Tally {
		var t Tally
		for _, v := range vs {
			t.Add(row, v, injected, 0)
		}
		return t
	}
	rep := func(v checker.Verdict, n int) []checker.Verdict { return slices.Repeat([]checker.Verdict{v}, n) }
	// A row bound by the load: its late writes are the load's, two holders
	// are not.
	loaded := safe
	loaded.Load = &LoadBound{Row: "lease/coord-gc-stall", Kinds: lateWrites}
	// seen tells t of runs' anomalies: the kinds in the last run, none in
	// the others.
	seen := func(t Tally, runs int, kinds ...string) Tally {
		for range runs - 1 {
			t.Saw(nil)
		}
		var as []checker.Anomaly
		for _, k := range kinds {
			as = append(as, checker.Anomaly{Kind: k})
		}
		t.Saw(as)
		return t
	}
	for _, tc := range []struct {
		name string
		row  Row
		t    Tally
		want bool
	}{
		{"unsafe, one run invalid", unsafe, tally(unsafe, checker.Invalid), true},
		{"unsafe, one run valid", unsafe, tally(unsafe, checker.Valid), false},
		{"unsafe, one run unknown", unsafe, tally(unsafe, checker.Unknown), false},
		{"unsafe, 9 of 10", unsafe, tally(unsafe, append(rep(checker.Invalid, 9), checker.Valid)...), true},
		{"unsafe, 8 of 10", unsafe, tally(unsafe, append(rep(checker.Invalid, 8), checker.Valid, checker.Unknown)...), false},
		{"unsafe, 1 of 2", unsafe, tally(unsafe, checker.Invalid, checker.Valid), false},
		{"unsafe, no runs", unsafe, Tally{}, false},
		{"a bar of 4: 4 of 10", rare, tally(rare, append(rep(checker.Invalid, 4), rep(checker.Valid, 6)...)...), true},
		{"a bar of 4: 3 of 10", rare, tally(rare, append(rep(checker.Invalid, 3), rep(checker.Valid, 7)...)...), false},
		{"safe, 20 valid", safe, tally(safe, rep(checker.Valid, 20)...), true},
		{"safe, one invalid in 20", safe, tally(safe, append(rep(checker.Valid, 19), checker.Invalid)...), false},
		{"safe, one unknown", safe, tally(safe, checker.Valid, checker.Unknown), false},
		{"load-bound, all valid", loaded, seen(tally(loaded, rep(checker.Valid, 3)...), 3), true},
		{"load-bound, a late write", loaded, seen(tally(loaded, checker.Valid, checker.Invalid), 2, checker.KindStaleWrite, checker.KindLostAdd), true},
		{"load-bound, two holders", loaded, seen(tally(loaded, checker.Valid, checker.Invalid), 2, checker.KindStaleWrite, checker.KindOverlap), false},
		{"load-bound, kinds not seen", loaded, tally(loaded, checker.Valid, checker.Invalid), false},
		{"load-bound, one unknown", loaded, seen(tally(loaded, checker.Invalid, checker.Unknown), 2, checker.KindStaleWrite), false},
	} {
		if got := tc.t.Met(tc.row); got != tc.want {
			t.Errorf("%s: Met(%+v) = %v, want %v", tc.name, tc.t, got, tc.want)
		}
	}

	var tl Tally
	if missing := tl.Add(safe, checker.Valid, map[string]int{nemesis.Kill: 1}, 0); !slices.Equal(missing, []string{nemesis.ClientPause}) {
		t.Errorf("missing = %v, want [client-pause]", missing)
	}
	if tl.NoFault != 1 || tl.Met(safe) {
		t.Errorf("a valid run without its fault: %+v met %v, want NoFault 1 and not met", tl, tl.Met(safe))
	}
	// A run that dealt every kind but left a step of its schedule undealt
	// (the second kill of a row that kills twice) shows no more of the row.
	var part Tally
	if missing := part.Add(safe, checker.Valid, map[string]int{nemesis.Kill: 1, nemesis.ClientPause: 1}, 1); len(missing) > 0 || part.NoFault != 1 || part.Met(safe) {
		t.Errorf("a valid run with a step undealt: missing %v, %+v met %v, want NoFault 1 and not met", missing, part, part.Met(safe))
	}
}

// A once-through matrix gives an unsafe row enough runs to be caught at its
// bar in 99 passes of 100, and a lower bar more runs.
func TestTries(t *testing.T) {
	for _, tc := range []struct{ catch, want int }{{0, 3}, {9, 3}, {8, 3}, {5, 7}, {4, 10}, {1, 44}} {
		r := good()
		r.Catch = tc.catch
		if got := r.Tries(); got != tc.want {
			t.Errorf("catch %d: Tries() = %d, want %d", tc.catch, got, tc.want)
		}
	}
}

func TestNodesUntouched(t *testing.T) {
	for _, tc := range []struct {
		faults []string
		want   bool
	}{
		{nil, true},
		{[]string{"client-pause"}, true},
		{[]string{"client-clock", "client-kill", "client-gc-stall"}, true},
		{[]string{"coord-clock"}, false},
		{[]string{"client-pause", "partition"}, false},
		{[]string{"net-delay"}, false},
		{[]string{"a-kind-nobody-declared"}, false}, // unknown: taken for a node kind
	} {
		r := good()
		r.Faults = tc.faults
		if got := r.NodesUntouched(); got != tc.want {
			t.Errorf("faults %v: NodesUntouched() = %v, want %v", tc.faults, got, tc.want)
		}
	}
}

func names(rows []Row) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Name)
	}
	return out
}

func TestSelect(t *testing.T) {
	rows := []Row{
		{Name: "racy/none", Tier: Quick},
		{Name: "lease/client-pause", Tier: Quick},
		{Name: "lease-fenced/client-pause", Tier: Quick},
		{Name: "lease-fenced/client-pause/leader", Tier: Full},
		{Name: "periodic/lease-fenced/rack-power-loss", Tier: Quick},
		{Name: "batch/music-seq/rack-power-loss", Tier: Full},
	}
	for _, tc := range []struct {
		tier, pattern string
		want          []string
	}{
		{"all", "", names(rows)},
		{"quick", "", []string{"racy/none", "lease/client-pause", "lease-fenced/client-pause", "periodic/lease-fenced/rack-power-loss"}},
		{"full", "", []string{"lease-fenced/client-pause/leader", "batch/music-seq/rack-power-loss"}},
		// A regular expression matches anywhere, as go test -run does.
		{"all", "racy", []string{"racy/none"}},
		{"all", "^lease/", []string{"lease/client-pause"}},
		{"all", "^(racy/none|lease/client-pause)$", []string{"racy/none", "lease/client-pause"}},
		// A glob matches the whole name; * crosses "/".
		{"all", "*/client-pause", []string{"lease/client-pause", "lease-fenced/client-pause"}},
		{"all", "*rack-power-loss", []string{"periodic/lease-fenced/rack-power-loss", "batch/music-seq/rack-power-loss"}},
		{"quick", "*rack-power-loss", []string{"periodic/lease-fenced/rack-power-loss"}},
		{"all", "lease-fenced/client-pause/leade?", []string{"lease-fenced/client-pause/leader"}},
		{"all", "nothing", nil},
	} {
		got, err := Select(rows, tc.tier, tc.pattern)
		if err != nil {
			t.Fatalf("Select(%q, %q): %v", tc.tier, tc.pattern, err)
		}
		if !slices.Equal(names(got), tc.want) {
			t.Errorf("Select(%q, %q) = %v, want %v", tc.tier, tc.pattern, names(got), tc.want)
		}
	}
	if _, err := Select(rows, "slow", ""); err == nil {
		t.Error("Select with tier slow: no error")
	}
}

func TestWriteTable(t *testing.T) {
	unsafe, safe := good(), good()
	safe.Name, safe.Want, safe.Unsafe = "lease-fenced/client-pause", checker.Valid, false
	var buf bytes.Buffer
	err := WriteTable(&buf, []Result{
		{Row: unsafe, Tally: Tally{Runs: 10, Invalid: 9, Valid: 1}},
		{Row: safe, Tally: Tally{Runs: 20, Invalid: 1, Valid: 19}},
		{Row: safe, Tally: Tally{Runs: 2, Valid: 2, NoFault: 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `ROW                        EXPECTED         RUNS  INVALID  VALID  UNKNOWN  CATCH RATE  RESULT
lease/client-pause         invalid >= 9/10  10    9        1      0        9/10 (90%)  pass
lease-fenced/client-pause  valid every run  20    1        19     0        1/20 (5%)   FAIL
lease-fenced/client-pause  valid every run  2     0        2      0        0/2 (0%)    FAIL (1 runs without the fault)
`
	if buf.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", buf.String(), want)
	}
}

func TestRatesFitRows(t *testing.T) {
	rates, err := Rates()
	if err != nil {
		t.Fatal(err)
	}
	if len(rates) == 0 {
		t.Fatal("rates.jsonl holds no rate")
	}
	if err := CheckRates(Rows, rates); err != nil {
		t.Fatal(err)
	}
}

func TestReadRatesRefusesBadLines(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"row":"racy/none","time":"fast"}`, "line 1"},
		{"\n" + `{"row":"racy/none","colour":"red"}`, "line 2"},
		{`not json`, "line 1"},
	} {
		if _, err := ReadRates(strings.NewReader(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadRates(%q) = %v, want an error naming %q", tc.in, err, tc.want)
		}
	}
	bad := []Rate{
		{Row: "gone/none", Time: Duration(time.Second), Interval: Duration(time.Second), Runs: 1, Date: "2026-11-23", Cores: 2},
		{Row: "racy/none", Time: Duration(time.Second), Interval: Duration(time.Second), Runs: 1, Invalid: 2, Date: "2026-11-23", Cores: 2},
		{Row: "racy/none", Time: Duration(time.Second), Interval: Duration(time.Second), Runs: 1, Date: "yesterday", Cores: 2},
		{Row: "racy/none", Time: Duration(time.Second), Interval: Duration(time.Second), Runs: 2, NoFault: 3, Date: "2026-11-23", Cores: 2},
	}
	err := CheckRates(Rows, bad)
	for _, want := range []string{`no row "gone/none"`, "2 invalid and 0 unknown of 1 runs", `date "yesterday"`, "3 runs without a fault kind of 2 runs"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckRates = %v, want %q", err, want)
		}
	}
}

func TestRateAt(t *testing.T) {
	r := good() // 20 s, interval 3 s, with faults
	at := func(tm, iv time.Duration) Rate { return Rate{Time: Duration(tm), Interval: Duration(iv)} }
	if !at(20*time.Second, 3*time.Second).At(r) || at(20*time.Second, 4*time.Second).At(r) || at(30*time.Second, 3*time.Second).At(r) {
		t.Error("a row with faults: a rate is at its settings only with its time and interval")
	}
	r.Faults = nil
	if !at(20*time.Second, 4*time.Second).At(r) {
		t.Error("a row without faults: the interval does not matter")
	}
}

// Batches of other seeds pool into the rate the docs show; a line that ran
// seeds again is an older measurement and ends the pool; lines at other
// settings or of other rows never count.
func TestMeasuredPoolsBatches(t *testing.T) {
	r := good() // 20 s, interval 3 s, with faults
	line := func(first, runs, invalid int, load, anomalies string, kinds ...string) Rate {
		return Rate{Row: r.Name, Time: Duration(r.Time), Interval: Duration(r.Interval), Runs: runs, Invalid: invalid,
			First: first, Date: "2026-11-24", Cores: 2, Load: load, Anomalies: anomalies, Kinds: kinds}
	}
	other := line(0, 50, 50, "1", "9")
	other.Row = "another/row"
	elsewhere := line(20, 10, 0, "1", "0")
	elsewhere.Time = Duration(99 * time.Second)
	for _, tc := range []struct {
		name                   string
		rates                  []Rate
		runs, invalid, batches int
		load, anomalies, kinds string
	}{
		{"one line", []Rate{line(0, 10, 9, "3-5", "0-4", "lost-add")}, 10, 9, 1, "3-5", "0-4", "lost-add"},
		{"two batches", []Rate{line(0, 13, 12, "11-20", "1-3", "lost-add"), line(13, 7, 7, "4", "2-8", "overlapping-holds")},
			20, 19, 2, "4-20", "1-8", "lost-add,overlapping-holds"},
		{"a re-measure supersedes", []Rate{line(0, 10, 3, "9", "0-1"), line(10, 5, 5, "9", "1"), line(5, 10, 10, "2", "4-6")},
			10, 10, 1, "2", "4-6", ""},
		{"a batch beside a re-measure pools", []Rate{line(0, 10, 3, "9", "0-1"), line(10, 5, 5, "9", "1"), line(0, 10, 10, "2", "4-6")},
			15, 15, 2, "2-9", "1-6", ""},
		{"other rows and settings do not count", []Rate{line(0, 5, 5, "idle", "1-2"), other, elsewhere, line(5, 5, 4, "7-9", "0-3")},
			10, 9, 2, "7-9", "0-3", ""},
	} {
		rt, batches, ok := Measured(r, tc.rates)
		if !ok || rt.Runs != tc.runs || rt.Invalid != tc.invalid || batches != tc.batches || rt.Load != tc.load ||
			rt.Anomalies != tc.anomalies || strings.Join(rt.Kinds, ",") != tc.kinds {
			t.Errorf("%s: %d/%d in %d batches, load %q, anomalies %q, kinds %v; want %d/%d in %d, %q, %q, %s",
				tc.name, rt.Invalid, rt.Runs, batches, rt.Load, rt.Anomalies, rt.Kinds, tc.invalid, tc.runs, tc.batches, tc.load, tc.anomalies, tc.kinds)
		}
	}
	// A run that left a fault kind undealt, run again with its seed, is
	// replaced by the rerun; the batches around it still pool. A rerun of a
	// run that dealt every fault is a re-measure, as before.
	undealt := line(10, 1, 0, "60", "0")
	undealt.NoFault = 1
	if rt, batches, _ := Measured(r, []Rate{line(0, 10, 0, "5", "0"), undealt, line(11, 2, 0, "9", "0"), line(10, 1, 0, "3", "0")}); rt.Runs != 13 || rt.NoFault != 0 || batches != 3 {
		t.Errorf("rerun of an undealt run: %d runs, %d without a fault kind, %d batches; want 13, 0, 3", rt.Runs, rt.NoFault, batches)
	}
	dealt := line(10, 1, 0, "60", "0")
	if rt, _, _ := Measured(r, []Rate{line(0, 10, 0, "5", "0"), dealt, line(10, 1, 0, "3", "0")}); rt.Runs != 1 {
		t.Errorf("rerun of a dealt run: %d runs pooled; want 1 (a re-measure supersedes)", rt.Runs)
	}
	// An idle start holds for the pool only when every batch waited for one.
	idle := func(first int, below float64) Rate { l := line(first, 5, 0, "4-8", "0"); l.IdleBelow = below; return l }
	for _, tc := range []struct {
		name  string
		rates []Rate
		want  float64
	}{
		{"every batch idle", []Rate{idle(0, 1.5), idle(5, 2)}, 2},
		{"one batch not waited for", []Rate{idle(0, 2), line(5, 5, 0, "4-8", "0")}, 0},
		{"none waited for", []Rate{line(0, 5, 0, "4-8", "0"), line(5, 5, 0, "4-8", "0")}, 0},
	} {
		if rt, _, _ := Measured(r, tc.rates); rt.IdleBelow != tc.want {
			t.Errorf("%s: idle below %v, want %v", tc.name, rt.IdleBelow, tc.want)
		}
	}
	// Runs without a verdict or without every fault kind pool as runs do.
	a, b := line(0, 6, 0, "1", "0"), line(6, 6, 0, "1", "0")
	a.Unknown, b.NoFault = 1, 1
	if rt, _, _ := Measured(r, []Rate{a, b}); rt.Runs != 12 || rt.Unknown != 1 || rt.NoFault != 1 {
		t.Errorf("pooled %d runs, %d unknown, %d without a fault kind; want 12, 1, 1", rt.Runs, rt.Unknown, rt.NoFault)
	}
	if _, _, ok := Measured(r, []Rate{other, elsewhere}); ok {
		t.Error("a row with no line at its settings has no measured rate")
	}
}

// TestFindingsPage renders docs/findings.md from the rows and the rates and
// compares it with the committed page: the verdicts the docs claim are the
// verdicts the tests assert. -update rewrites the page.
func TestFindingsPage(t *testing.T) {
	rates, err := Rates()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteFindings(&buf, Rows, rates); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("..", "docs", "findings.md"), buf.Bytes(), "go test ./scenario -run TestFindingsPage -update")
	for _, r := range Rows {
		if !strings.Contains(buf.String(), "\n### "+r.Name+"\n") {
			t.Errorf("row %s has no section", r.Name)
		}
	}
}

// Each row's table line says the verdict the row asserts and its rate at
// its settings, pooled over the batches of other seeds, with their dates
// and machine; a rate at other settings is not the row's.
func TestFindingsRowLine(t *testing.T) {
	r := good()
	rates := []Rate{
		{Row: r.Name, Time: Duration(20 * time.Second), Interval: Duration(3 * time.Second), Runs: 10, Invalid: 9, Date: "2026-11-22", Cores: 2, Load: "3-5"},
		{Row: r.Name, Time: Duration(30 * time.Second), Interval: Duration(3 * time.Second), Runs: 10, Invalid: 10, Date: "2026-11-23", Cores: 2},
		{Row: r.Name, Time: Duration(20 * time.Second), Interval: Duration(3 * time.Second), Runs: 10, Invalid: 10, Date: "2026-11-24", Cores: 2, Load: "8", First: 10},
	}
	var buf bytes.Buffer
	if err := WriteFindings(&buf, []Row{r}, rates); err != nil {
		t.Fatal(err)
	}
	want := "| [`lease/client-pause`](#leaseclient-pause) | `lease` | client-pause | 3 nodes, Paxos v1 (shared) | 20 s | 3 s | quick | **invalid**, caught >= 9/10 | 19/20 (2 batches) | 2026-11-22 to 2026-11-24 | 2 cores, load 3-8 |"
	if !strings.Contains(buf.String(), want) {
		t.Errorf("page:\n%s\nwant the line\n%s", buf.String(), want)
	}
	if strings.Contains(buf.String(), "2026-11-23") {
		t.Errorf("page:\n%s\nshows the 30 s rate, measured at other settings", buf.String())
	}
}

func TestGroups(t *testing.T) {
	v2 := Cluster{Paxos: "v2"}
	rows := []Row{{Name: "a"}, {Name: "v2/b", Cluster: v2}, {Name: "c"}, {Name: "v2/d", Cluster: v2}}
	g := Groups(rows)
	if len(g) != 2 || g[0].Cluster.Key() != "" || g[1].Cluster.Key() != "v2" ||
		!slices.Equal(names(g[0].Rows), []string{"a", "c"}) || !slices.Equal(names(g[1].Rows), []string{"v2/b", "v2/d"}) {
		t.Errorf("Groups = %+v", g)
	}
}

var pauseSchedule = nemesis.Schedule{Steps: []nemesis.Step{{Kind: nemesis.ClientPause, At: nemesis.Duration(2 * s), For: nemesis.Duration(5 * s)}}}

// A row bound by the load names a slowness row of the same lock that is
// asserted unsafe: the on-demand form of what the load did.
func TestLoadBoundsNameTheirSlownessRow(t *testing.T) {
	byName := map[string]Row{}
	for _, r := range Rows {
		byName[r.Name] = r
	}
	n := 0
	for _, r := range Rows {
		if r.Load == nil {
			continue
		}
		n++
		s, ok := byName[r.Load.Row]
		switch {
		case !ok:
			t.Errorf("%s: its slowness row %q is no row", r.Name, r.Load.Row)
		case !s.Unsafe:
			t.Errorf("%s: its slowness row %s is not asserted unsafe", r.Name, s.Name)
		case s.Recipe != r.Recipe:
			t.Errorf("%s: its slowness row %s is of lock %s", r.Name, s.Name, s.Recipe)
		}
	}
	if n == 0 {
		t.Error("no row is bound by the load")
	}
}

// Every row's cluster of its own is named NAME-KEY, "lockcheck-KEY" by
// default, and a cluster's name is at most 31 characters (Docker's names
// and the cluster's validation): no row's key may make it longer.
func TestClusterNamesFit(t *testing.T) {
	for _, r := range Rows {
		if k := r.Cluster.Key(); k != "" && len("lockcheck-"+k) > 31 {
			t.Errorf("row %s: cluster lockcheck-%s is %d characters, over 31", r.Name, k, len("lockcheck-"+k))
		}
	}
	long := good()
	long.Cluster = Cluster{Nodes: 1, Accord: "mixed_reads", AccordStopMarker: "REBOOTSTRAP", Version: "6.0-alpha"}
	long.Name = long.canonicalName()
	if err := long.Check(); err == nil || !strings.Contains(err.Error(), "over 21") {
		t.Errorf("a row on cluster key %q: %v, want it refused", long.Cluster.Key(), err)
	}
	if registerTable != register.Table {
		t.Errorf("the ticket rows' table %q is not the register's %q", registerTable, register.Table)
	}
}
