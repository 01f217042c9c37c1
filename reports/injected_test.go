package reports

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// A run says what it was asked to inject and what it dealt: a requested
// kind never dealt is in results.json and on the report, the long name is
// shown short, and an invalid run offers its replay and shrink, or links
// the smallest reproduction once shrink found it.
func TestReportSaysWhatWasInjected(t *testing.T) {
	kinds := []string{"partition", "pause", "kill", "clock", "client-pause"}
	ops := overlapping()
	meta, _ := json.Marshal(history.Meta{Test: "racy-" + strings.Join(kinds, "_"), Lock: "racy", Promise: history.PromiseMutex, Nemesis: kinds})
	ops[0].Value = meta
	dir := filepath.Join(t.TempDir(), "store", "t", "20260101T000000")
	writeHistory(t, dir, ops)
	res, err := Build(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	in := res.Injected
	if in == nil || in.Dealt["partition"] != 1 || !slices.Equal(in.Never, []string{"pause", "kill", "clock", "client-pause"}) {
		t.Fatalf("injected %+v", in)
	}
	b, _ := os.ReadFile(filepath.Join(dir, ResultsFile))
	if !strings.Contains(string(b), `"never_dealt": [`) {
		t.Error("results.json lacks never_dealt")
	}
	page := func() string {
		b, err := os.ReadFile(filepath.Join(dir, ReportFile))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	html := page()
	for _, want := range []string{
		"Requested and never dealt: pause, kill, clock, client-pause",
		"<h1 title=\"racy-partition_pause_kill_clock_client-pause / 20260101T000000\">racy-5-faults / 20260101T000000</h1>",
		"lockcheck shrink " + dir,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// After a shrink, the report links its result instead.
	if err := os.MkdirAll(filepath.Join(dir, ShrinkDir), 0o755); err != nil {
		t.Fatal(err)
	}
	sum, _ := json.Marshal(Shrunk{Anomaly: "overlapping-holds", Schedule: "shrink/schedule.json", Steps: 1, Caught: 9, Tries: 10,
		Clients: 2, Locks: 1, Time: "8s", Command: "lockcheck run --lock racy --schedule x"})
	os.WriteFile(filepath.Join(dir, ShrinkDir, ShrinkFile), sum, 0o644)
	if _, err := Build(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	html = page()
	if !strings.Contains(html, `Smallest reproduction found: <a href="shrink/schedule.json">1 fault</a>, 2 clients, 1 lock, 8s: overlapping-holds in 9 of 10 tries.`) ||
		strings.Contains(html, "lockcheck shrink "+dir) {
		t.Error("the report does not link the shrunk reproduction in place of the offer")
	}
}

func TestShortName(t *testing.T) {
	for _, tt := range []struct {
		test  string
		kinds []string
		want  string
	}{
		{"lease-fenced-partition_pause_kill_clock_client-pause_client-clock_loss", []string{"partition", "pause", "kill", "clock", "client-pause", "client-clock", "loss"}, "lease-fenced-7-faults"},
		{"lease-client-pause_client-clock-leader", []string{"client-pause", "client-clock"}, "lease-client-pause_client-clock-leader"},
		{"mine", []string{"a", "b", "c", "d"}, "mine"},
	} {
		if got := ShortName(tt.test, tt.kinds); got != tt.want {
			t.Errorf("ShortName(%q) = %q, want %q", tt.test, got, tt.want)
		}
	}
}
