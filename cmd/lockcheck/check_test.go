package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
)

func line(s string) string { return s + "\n" }

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "history.jsonl")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheckExitCodes(t *testing.T) {
	valid := line(`{"index":0,"time":0,"process":0,"type":"invoke","f":"acquire","lock":"l"}`) +
		line(`{"index":1,"time":10,"process":0,"type":"ok","f":"acquire","lock":"l"}`) +
		line(`{"index":2,"time":20,"process":0,"type":"invoke","f":"release","lock":"l"}`) +
		line(`{"index":3,"time":30,"process":0,"type":"ok","f":"release","lock":"l"}`)
	overlap := line(`{"index":0,"time":0,"process":0,"type":"invoke","f":"acquire","lock":"l"}`) +
		line(`{"index":1,"time":10,"process":0,"type":"ok","f":"acquire","lock":"l"}`) +
		line(`{"index":2,"time":20,"process":1,"type":"invoke","f":"acquire","lock":"l"}`) +
		line(`{"index":3,"time":30,"process":1,"type":"ok","f":"acquire","lock":"l"}`) +
		line(`{"index":4,"time":40,"process":-1,"type":"info","f":"end"}`)
	noFinalRead := valid + line(`{"index":4,"time":40,"process":2,"type":"invoke","f":"acquire","lock":"m"}`) +
		line(`{"index":5,"time":50,"process":2,"type":"ok","f":"acquire","lock":"m"}`) +
		line(`{"index":6,"time":60,"process":2,"type":"invoke","f":"add","lock":"m","value":1}`) +
		line(`{"index":7,"time":70,"process":2,"type":"ok","f":"add","lock":"m","value":1}`)
	badLine := line(`{"index":0,"time":0,"process":0,"type":"invoke","f":"acquire","lock":"l"}`) +
		line(`{"index":1,"time":10,"process":0,"type":"done","f":"acquire","lock":"l"}`)
	notUTF8 := line(`{"index":0,"time":0,"process":0,"type":"invoke","f":"acquire","lock":"l"}`) +
		line("{\"index\":1,\"time\":10,\"process\":1,\"type\":\"invoke\",\"f\":\"acquire\",\"lock\":\"l\xff\"}")
	register := line(`{"index":0,"time":0,"process":0,"type":"invoke","f":"reg-insert","key":"k","value":{"new":1}}`) +
		line(`{"index":1,"time":10,"process":0,"type":"ok","f":"reg-insert","key":"k","value":{"new":1}}`) +
		line(`{"index":2,"time":20,"process":0,"type":"invoke","f":"reg-cas","key":"k","value":{"expect":1,"new":2}}`) +
		line(`{"index":3,"time":30,"process":0,"type":"ok","f":"reg-cas","key":"k","value":{"expect":1,"new":2}}`)
	staleRead := register + line(`{"index":4,"time":40,"process":1,"type":"invoke","f":"reg-read","key":"k"}`) +
		line(`{"index":5,"time":50,"process":1,"type":"ok","f":"reg-read","key":"k","value":{"seen":1}}`)
	// A holder killed with no lease at 20 ms, then a waiter in vain to 200
	// ms, in a run whose TTL was 3 s.
	killed := line(`{"index":0,"time":0,"process":-1,"type":"info","f":"meta","value":{"test":"t","config":{"ttl":"3s"}}}`) +
		line(`{"index":1,"time":0,"process":0,"type":"invoke","f":"acquire","lock":"l"}`) +
		line(`{"index":2,"time":10000000,"process":0,"type":"ok","f":"acquire","lock":"l"}`) +
		line(`{"index":3,"time":20000000,"process":-1,"type":"info","f":"start-client-kill","value":{"client":0,"in_flight":"hold","lock":"l","process":0,"restart_ms":5}}`) +
		line(`{"index":4,"time":30000000,"process":1,"type":"invoke","f":"acquire","lock":"l"}`) +
		line(`{"index":5,"time":200000000,"process":1,"type":"fail","f":"acquire","lock":"l"}`)
	tests := []struct {
		name   string
		args   func(path string) []string
		in     string
		code   int
		stdout string
		stderr string
	}{
		{"valid", func(p string) []string { return []string{p} }, valid, exitValid, "VALID", ""},
		{"invalid", func(p string) []string { return []string{p} }, overlap, exitInvalid, "overlapping-holds", ""},
		{"unknown without final read", func(p string) []string { return []string{p} }, noFinalRead, exitUnknown, "UNKNOWN", ""},
		{"bad line", func(p string) []string { return []string{p} }, badLine, exitError, "", `history line 2: unknown type "done"`},
		{"a line not UTF-8", func(p string) []string { return []string{p} }, notUTF8, exitError, "", "history line 2: not valid UTF-8"},
		{"register valid", func(p string) []string { return []string{p} }, register, exitValid, "linearizable-register valid", ""},
		{"register stale read", func(p string) []string { return []string{p} }, staleRead, exitInvalid, `register key "k"`, ""},
		{"missing file", func(p string) []string { return []string{p + ".nope"} }, valid, exitError, "", "no such file"},
		{"no argument", func(p string) []string { return nil }, valid, exitError, "", "usage"},
		{"flags after the file", func(p string) []string { return []string{p, "--timeout", "1m"} }, valid, exitValid, "VALID", ""},
		{"out of time", func(p string) []string { return []string{"--timeout", "1ns", p} }, valid, exitUnknown, "not decided in time", ""},
		{"liveness: availability, not failing", func(p string) []string {
			return []string{"--acquire-timeout", "10ms", "--stuck-bound", "3s", p}
		}, killed, exitValid, "l: available 20.0% (160ms unavailable), 1 grants", ""},
		{"liveness: a stuck bound below the run.s TTL refused", func(p string) []string {
			return []string{"--acquire-timeout", "10ms", "--stuck-bound", "100ms", p}
		}, killed, exitError, "", "--stuck-bound 100ms is below the run's TTL 3s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, tt.in)
			var out, errb bytes.Buffer
			code := runCheck(context.Background(), tt.args(p), &out, &errb)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, out.String(), errb.String())
			}
			if !strings.Contains(out.String(), tt.stdout) || !strings.Contains(errb.String(), tt.stderr) {
				t.Fatalf("stdout %q (want %q), stderr %q (want %q)", out.String(), tt.stdout, errb.String(), tt.stderr)
			}
		})
	}
}

func TestCheckStdin(t *testing.T) {
	defer func(r io.Reader) { stdin = r }(stdin)
	stdin = strings.NewReader(line(`{"index":0,"time":0,"process":0,"type":"invoke","f":"acquire","lock":"l"}`))
	var out, errb bytes.Buffer
	if code := runCheck(context.Background(), []string{"-"}, &out, &errb); code != exitValid {
		t.Fatalf("exit %d: %s %s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "1 invocations without completion") {
		t.Fatalf("summary %q", out.String())
	}
}

func TestCheckJSON(t *testing.T) {
	p := writeFile(t, line(`{"index":0,"time":0,"process":0,"type":"invoke","f":"acquire","lock":"l"}`)+
		line(`{"index":1,"time":10,"process":0,"type":"ok","f":"acquire","lock":"l"}`)+
		line(`{"index":2,"time":20,"process":1,"type":"invoke","f":"acquire","lock":"l"}`)+
		line(`{"index":3,"time":30,"process":1,"type":"ok","f":"acquire","lock":"l"}`)+
		line(`{"index":4,"time":40,"process":-1,"type":"info","f":"end"}`))
	var out, errb bytes.Buffer
	if code := runCheck(context.Background(), []string{"--json", p}, &out, &errb); code != exitInvalid {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var res checker.Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out.String())
	}
	if res.Verdict != checker.Invalid || len(res.Anomalies) != 2 || res.Anomalies[0].Lock != "l" {
		t.Fatalf("result %+v", res)
	}
}

func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "history.jsonl"), []byte(
		line(`{"index":0,"time":0,"process":0,"type":"invoke","f":"acquire","lock":"l"}`)+
			line(`{"index":1,"time":10,"process":0,"type":"ok","f":"acquire","lock":"l"}`)), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := runReport(context.Background(), []string{dir}, &out, &errb); code != exitValid {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, f := range []string{"report.html", "results.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	if code := runReport(context.Background(), []string{filepath.Join(dir, "nope")}, &out, &errb); code != exitError {
		t.Fatalf("report of a missing dir: exit %d", code)
	}
}
