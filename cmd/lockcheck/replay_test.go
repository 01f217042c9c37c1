package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/spec"
)

// writeRun writes a run directory holding history lines.
func writeRun(t *testing.T, lines ...string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "history.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

const (
	metaLease  = `{"index":0,"time":0,"process":-1,"type":"info","f":"meta","value":{"test":"t","lock":"lease","promise":"mutex","nemesis":["client-pause"],"seed":3,"config":{"clients":"5","time":"20s"}}}`
	metaPlugin = `{"index":0,"time":0,"process":-1,"type":"info","f":"meta","value":{"test":"t","lock":"plugin","promise":"mutex","nemesis":["client-pause"],"seed":3}}`
	acquire    = `{"index":1,"time":1000,"process":0,"type":"invoke","f":"acquire","lock":"l"}`
	acquired   = `{"index":2,"time":2000,"process":0,"type":"ok","f":"acquire","lock":"l"}`
	pauseStart = `{"index":3,"time":3000,"process":-1,"type":"info","f":"start-client-pause","value":{"client":0,"lock":"l","ms":4000,"process":0}}`
	pauseStop  = `{"index":4,"time":4000,"process":-1,"type":"info","f":"stop-client-pause","value":{"client":0,"process":0}}`
	meteor     = `{"index":3,"time":3000,"process":-1,"type":"info","f":"start-meteor"}`
)

// Bad input to replay and shrink is one line and exit 2, before any
// cluster is reached.
func TestReplayAndShrinkRejectBadInput(t *testing.T) {
	noFaults := writeRun(t, metaLease, acquire, acquired)
	plugin := writeRun(t, metaPlugin, acquire, acquired, pauseStart, pauseStop)
	valid := writeRun(t, metaLease, acquire, acquired, pauseStart, pauseStop)
	unknownKind := writeRun(t, metaLease, acquire, acquired, meteor)
	noMeta := writeRun(t, strings.Replace(acquire, `"index":1`, `"index":0`, 1), strings.Replace(acquired, `"index":2`, `"index":1`, 1),
		strings.Replace(pauseStart, `"index":3`, `"index":2`, 1), strings.Replace(pauseStop, `"index":4`, `"index":3`, 1))
	sched := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(sched, []byte(`{"steps":[{"kind":"meteor","at":"1s","for":"1s"}]}`), 0o644)
	tests := []struct {
		cmd  func(context.Context, []string, *strings.Builder, *strings.Builder) int
		args []string
		want string
	}{
		{replay, []string{t.TempDir()}, "is not a run directory (no history.jsonl)"},
		{replay, []string{noFaults}, "the history has no fault events: nothing to replay"},
		{replay, []string{noMeta}, "has no meta line naming its lock"},
		{replay, []string{unknownKind}, `unknown fault "meteor"`},
		{replay, []string{plugin}, `the run's lock "plugin" is not one of lockcheck's recipes: give its --lock-cmd or --lock-url`},
		{replay, []string{"--schedule", sched, valid}, `unknown fault "meteor"`},
		{replay, []string{"--repeat", "0", valid}, "--repeat must be 1 or more"},
		{shrinkCmd, []string{t.TempDir()}, "is not a run directory"},
		{shrinkCmd, []string{valid}, "is valid: nothing to shrink"},
		{shrinkCmd, []string{noFaults}, "nothing to replay"},
	}
	for _, tt := range tests {
		var out, errb strings.Builder
		code := tt.cmd(context.Background(), tt.args, &out, &errb)
		if code != exitError {
			t.Errorf("%v: exit %d, want %d (stderr %q)", tt.args, code, exitError, errb.String())
		}
		if !strings.Contains(errb.String(), tt.want) {
			t.Errorf("%v: stderr %q lacks %q", tt.args, errb.String(), tt.want)
		}
		if n := strings.Count(errb.String(), "\n"); n != 1 {
			t.Errorf("%v: %d lines on stderr, want one: %q", tt.args, n, errb.String())
		}
	}
}

func replay(ctx context.Context, args []string, out, errb *strings.Builder) int {
	return runReplay(ctx, args, out, errb)
}

func shrinkCmd(ctx context.Context, args []string, out, errb *strings.Builder) int {
	return runShrink(ctx, args, out, errb)
}

// run --schedule takes a schedule file (and not with --nemesis).
func TestRunSchedule(t *testing.T) {
	good := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(good, []byte(`{"steps":[{"kind":"client-pause","at":"1s","for":"5s"}]}`), 0o644)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--lock", "lease", "--schedule", good, "--nemesis", "pause"}, "give --schedule or --nemesis, not both"},
		{[]string{"--lock", "lease", "--schedule", "/nonexistent/s.json"}, "no such file"},
	} {
		var out, errb strings.Builder
		if code := runRun(context.Background(), tt.args, &out, &errb); code != exitError || !strings.Contains(errb.String(), tt.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tt.args, code, errb.String(), tt.want)
		}
	}
	_, f := newRunFlags()
	f.lock, f.schedule = "lease", good
	_, opts, err := f.options()
	if err != nil {
		t.Fatal(err)
	}
	lock, _, _ := f.options()
	plan, err := lockcheckPlan(lock, opts)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Test.Schedule == nil || len(plan.Test.Nemesis) != 1 || plan.Test.Nemesis[0] != "client-pause" {
		t.Errorf("plan: schedule %v, nemesis %v", plan.Test.Schedule, plan.Test.Nemesis)
	}
}

func lockcheckPlan(lock lockcheck.Lock, opts []lockcheck.Option) (lockcheck.Plan, error) {
	return lockcheck.NewPlan(lock, opts...)
}

// A replay runs what the stored run ran: its pinned clients, its consistency
// (a dc-local run replayed at SERIAL would test another lock) and its
// retiring of stuck names come back from the meta line: from its Spec, and
// from the config of a history written before the meta line had one.
func TestReplayKeepsTheRunsSettings(t *testing.T) {
	specOf := func(mod func(*spec.Spec)) json.RawMessage {
		s := spec.Defaults()
		s.Lock, s.Promise, s.Seed = "lease-fenced", "fenced", 3
		mod(&s)
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		config map[string]string
		spec   json.RawMessage
		check  func(lockcheck.Plan) bool
	}{
		{map[string]string{}, nil, func(p lockcheck.Plan) bool { return !p.Test.PinClients && !p.Test.DCLocal && !p.Test.RetireStuck }},
		{map[string]string{"pins": "0=n1 1=n2"}, nil, func(p lockcheck.Plan) bool { return p.Test.PinClients }},
		{map[string]string{"consistency": "local"}, nil, func(p lockcheck.Plan) bool { return p.Test.DCLocal }},
		{map[string]string{history.ConfigRetireStuck: "true"}, nil, func(p lockcheck.Plan) bool { return p.Test.RetireStuck }},
		{map[string]string{"skew": "2s..5s", "ttl": "4s"}, nil, func(p lockcheck.Plan) bool {
			return p.Test.SkewMin == 2*time.Second && p.Test.SkewMax == 5*time.Second && p.Test.TTL == 4*time.Second
		}},
		{nil, specOf(func(s *spec.Spec) { s.PinClients, s.DCLocal = true, true }), func(p lockcheck.Plan) bool { return p.Test.PinClients && p.Test.DCLocal }},
		{nil, specOf(func(s *spec.Spec) { s.PauseExtra, s.Quiet, s.SkewAhead = time.Second, 0, true }), func(p lockcheck.Plan) bool {
			return p.Test.PauseExtra == time.Second && p.Test.Quiet == 0 && p.Test.SkewAhead && p.Test.Seed == 3
		}},
	}
	for _, tt := range tests {
		m := history.Meta{Test: "t", Lock: "lease-fenced", Promise: history.PromiseFenced, Seed: 3, Config: tt.config, Spec: tt.spec}
		s, err := runner.SpecOf(m)
		if err != nil {
			t.Fatal(err)
		}
		r := storedRun{meta: m, spec: s}
		c := &replayConfig{}
		lock, opts, err := c.options(r, candidate{})
		if p := mustPlan(t, lock, opts, err); !tt.check(p) {
			t.Errorf("config %v, spec %s: plan %+v", tt.config, tt.spec, p.Test)
		}
	}
}

// A run stored before the meta line carried its Spec (testdata/old-meta-run,
// written by lockcheck at bf197c8) still loads, checks and replays with its
// settings.
func TestReplayReadsAnOldHistory(t *testing.T) {
	r, err := loadRun(context.Background(), filepath.Join("testdata", "old-meta-run"))
	if err != nil {
		t.Fatal(err)
	}
	if r.verdict == "" || len(r.schedule.Steps) == 0 {
		t.Errorf("verdict %q, %d steps", r.verdict, len(r.schedule.Steps))
	}
	c := &replayConfig{store: "replays"}
	lock, opts, err := c.options(r, candidate{schedule: r.schedule})
	p := mustPlan(t, lock, opts, err)
	want := spec.Defaults()
	want.Lock, want.Promise, want.Workload, want.Seed, want.Clients, want.Locks = "lease-fenced", "fenced", "cycle", 7, 3, 1
	want.Time, want.TTL, want.Interval, want.RetireStuck = 1500*time.Millisecond, 2*time.Second, 300*time.Millisecond, true
	want.SkewMin, want.SkewMax, want.Store = time.Second, 4*time.Second, "replays"
	got := p.Test.Spec
	want.Name, want.Nemesis = got.Name, got.Nemesis // named afresh; the schedule's kinds
	if !reflect.DeepEqual(got, want) {
		t.Errorf("replay of the old run: %+v, want %+v", got, want)
	}
	if p.Test.Schedule == nil || !slices.Equal(p.Test.Nemesis, r.schedule.Kinds()) {
		t.Errorf("schedule %v, nemesis %v", p.Test.Schedule, p.Test.Nemesis)
	}
}

// A run made with --every-kind replays its schedule: the replay's Spec
// drops the flag, which a schedule refuses.
func TestReplayDropsEveryKind(t *testing.T) {
	r, err := loadRun(context.Background(), filepath.Join("testdata", "old-meta-run"))
	if err != nil {
		t.Fatal(err)
	}
	r.spec.EveryKind = true
	c := &replayConfig{store: "replays"}
	lock, opts, err := c.options(r, candidate{schedule: r.schedule})
	if p := mustPlan(t, lock, opts, err); p.Test.EveryKind || p.Test.Schedule == nil {
		t.Errorf("replay: every-kind %v, schedule %v; want the schedule alone", p.Test.EveryKind, p.Test.Schedule)
	}
}
