package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck"
	"github.com/lockcheck/lockcheck/history"
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
// retiring of stuck names come back from the meta line.
func TestReplayKeepsTheRunsSettings(t *testing.T) {
	tests := []struct {
		config map[string]string
		check  func(lockcheck.Plan) bool
	}{
		{map[string]string{}, func(p lockcheck.Plan) bool { return !p.Test.PinClients && !p.Test.DCLocal && !p.Test.RetireStuck }},
		{map[string]string{"pins": "0=n1 1=n2"}, func(p lockcheck.Plan) bool { return p.Test.PinClients }},
		{map[string]string{"consistency": "local"}, func(p lockcheck.Plan) bool { return p.Test.DCLocal }},
		{map[string]string{history.ConfigRetireStuck: "true"}, func(p lockcheck.Plan) bool { return p.Test.RetireStuck }},
	}
	for _, tt := range tests {
		r := storedRun{meta: history.Meta{Test: "t", Lock: "lease-fenced", Promise: history.PromiseFenced, Seed: 3, Config: tt.config}}
		c := &replayConfig{}
		lock, opts, err := c.options(r, candidate{})
		if p := mustPlan(t, lock, opts, err); !tt.check(p) {
			t.Errorf("config %v: plan %+v", tt.config, p.Test)
		}
	}
}
