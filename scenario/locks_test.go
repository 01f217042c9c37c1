package scenario

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/internal/golden"
	"github.com/lockcheck/lockcheck/nemesis"
)

func TestCatalogueComplete(t *testing.T) {
	if err := CheckCatalogue(Catalogue); err != nil {
		t.Fatal(err)
	}
}

func TestCheckCatalogueRefuses(t *testing.T) {
	good := Catalogue[len(Catalogue)-1]
	for _, tc := range []struct {
		name  string
		spoil func(*Lock)
		want  string
	}{
		{"short commit", func(l *Lock) { l.Commit = "0024c82" }, "40 hex digits"},
		{"no source", func(l *Lock) { l.Source = "caslock" }, "github.com/OWNER/NAME"},
		{"artifact without coordinate", func(l *Lock) { l.Form = Artifact }, "without its coordinate"},
		{"re-expression with a coordinate", func(l *Lock) { l.Artifact = "x:y:1" }, "re-expression with an artifact"},
		{"unknown form", func(l *Lock) { l.Form = "copy" }, `form "copy"`},
		{"no advice", func(l *Lock) { l.Advice = " " }, "no advice"},
		{"no path", func(l *Lock) { l.Paths = nil }, "no path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := good
			tc.spoil(&l)
			if err := CheckCatalogue([]Lock{l}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CheckCatalogue = %v, want an error with %q", err, tc.want)
			}
		})
	}
	if err := CheckCatalogue([]Lock{good, good}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a lock given twice: %v", err)
	}
}

// Every Go lock of the catalogue (a registered recipe) has asserted rows,
// a quick one among them.
func TestCatalogueGoLocksHaveRows(t *testing.T) {
	for _, l := range Catalogue {
		if l.Language != "Go" {
			continue
		}
		rows := RowsOf(l, Rows)
		quick := false
		for _, r := range rows {
			quick = quick || r.Tier == Quick
		}
		if len(rows) == 0 || !quick {
			t.Errorf("%s: %d rows, quick %v: want rows and a quick one", l.Name, len(rows), quick)
		}
	}
}

// The command of a row is the row as `lockcheck run` flags.
func TestRunCommand(t *testing.T) {
	r := Row{Name: "caslock/coord-clock", Recipe: "caslock", Faults: []string{nemesis.CoordClock}, Pin: true,
		Time: 20 * time.Second, Interval: 3 * time.Second, Seed: 6405, Want: checker.Invalid, Unsafe: true}
	if got, want := RunCommand(r), "lockcheck run --lock caslock --nemesis coord-clock --interval 3s --pin-clients --time 20s --quiet 3s --seed 6405"; got != want {
		t.Errorf("RunCommand = %q\nwant          %q", got, want)
	}
	r = Row{Name: "shedlock/client-clock/leader", Recipe: "shedlock", Command: "plugins/java-locks/run shedlock", Promise: "fenced",
		Faults: []string{nemesis.ClientClock}, Workload: "leader", Locks: 4, Time: 30 * time.Second, Interval: 2 * time.Second, Seed: 9}
	if got, want := RunCommand(r), "lockcheck run --lock-cmd 'plugins/java-locks/run shedlock' --name shedlock --promise fenced --nemesis client-clock --interval 2s --workload leader --locks 4 --time 30s --quiet 3s --seed 9"; got != want {
		t.Errorf("RunCommand = %q\nwant          %q", got, want)
	}
	r = Row{Name: "astyanax/client-clock-ahead", Recipe: "astyanax", Command: "plugins/java-locks/run astyanax", Faults: []string{nemesis.ClientClock},
		SkewAhead: true, SkewMin: 4 * time.Second, SkewMax: 10 * time.Second, Time: 20 * time.Second, Interval: 3 * time.Second, Seed: 6533}
	if got, want := RunCommand(r), "lockcheck run --lock-cmd 'plugins/java-locks/run astyanax' --name astyanax --nemesis client-clock --interval 3s --skew-ahead --skew-min 4s --skew-max 10s --time 20s --quiet 3s --seed 6533"; got != want {
		t.Errorf("RunCommand = %q\nwant          %q", got, want)
	}
	// A scheduled row: flags would draw its faults, so the row itself runs.
	r, _ = Lookup("shedlock/client-pause/shrunk")
	if got, want := RunCommand(r), "lockcheck matrix --rows 'shedlock/client-pause/shrunk'"; got != want {
		t.Errorf("RunCommand = %q\nwant          %q", got, want)
	}
}

// TestLocksPage renders docs/locks.md from the catalogue, the rows and the
// rates, and compares it with the committed page. -update rewrites it.
func TestLocksPage(t *testing.T) {
	rates, err := Rates()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteCatalogue(&buf, Catalogue, Rows, rates); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("..", "docs", "locks.md"), buf.Bytes(), "go test ./scenario -run TestLocksPage -update")
	for _, l := range Catalogue {
		if !strings.Contains(buf.String(), "\n## "+l.Name+"\n") {
			t.Errorf("lock %s has no section", l.Name)
		}
		for _, r := range RowsOf(l, Rows) {
			if !strings.Contains(buf.String(), RunCommand(r)+"\n") {
				t.Errorf("row %s: no command on the page", r.Name)
			}
		}
	}
}

// A lock's table line carries its last rate at the row's settings with the
// anomaly range and kinds, and the availability over the runs beside them
// (two batches pooled: the range over both, their stuck runs added).
func TestLocksPageRateLine(t *testing.T) {
	l := Catalogue[len(Catalogue)-1]
	r := Row{Name: l.Recipe + "/client-pause", Recipe: l.Recipe, Faults: []string{nemesis.ClientPause}, Time: 20 * time.Second,
		Interval: 3 * time.Second, Seed: 1, Want: checker.Invalid, Unsafe: true, Tier: Quick, Mechanism: "It breaks."}
	rates := []Rate{{Row: r.Name, Time: Duration(20 * time.Second), Interval: Duration(3 * time.Second), Runs: 5, Invalid: 4,
		Date: "2026-11-23", Cores: 2, Anomalies: "0-12", Kinds: []string{"lost-add"}, Availability: "62-90", Stuck: 1},
		{Row: r.Name, Time: Duration(20 * time.Second), Interval: Duration(3 * time.Second), Runs: 5, Invalid: 5, First: 5,
			Date: "2026-11-23", Cores: 2, Anomalies: "3", Kinds: []string{"lost-add"}, Availability: "80-100", Stuck: 1}}
	var buf bytes.Buffer
	if err := WriteCatalogue(&buf, []Lock{l}, []Row{r}, rates); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| 9/10 invalid (2026-11-23, 2 batches) | 0-12 (lost-add) | 62-100%, stuck to the end in 2 of 10 runs | quick |",
		"**How it breaks.**\n\n- `" + r.Name + "`: It breaks.",
		"| [jroimartin/caslock](#jroimartincaslock) | Go | re-expression | client-pause | - |",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("page:\n%s\nwant %q", buf.String(), want)
		}
	}
}

// A safe row whose measured runs include an invalid one is not listed as
// holding: the summary and the mechanisms put it with the breaks, counted.
func TestLocksPageContradictedSafeRow(t *testing.T) {
	l := Catalogue[len(Catalogue)-1]
	safe := Row{Name: l.Recipe + "/none", Recipe: l.Recipe, Time: 20 * time.Second, Seed: 1, Want: checker.Valid, Tier: Full,
		Mechanism: "It holds."}
	held := Row{Name: l.Recipe + "/kill", Recipe: l.Recipe, Faults: []string{nemesis.Kill}, Time: 30 * time.Second,
		Interval: 3 * time.Second, Seed: 2, Want: checker.Valid, Tier: Full, Mechanism: "It holds too."}
	rates := []Rate{
		{Row: safe.Name, Time: Duration(20 * time.Second), Runs: 5, Invalid: 1, Date: "2026-11-24", Cores: 2},
		{Row: held.Name, Time: Duration(30 * time.Second), Interval: Duration(3 * time.Second), Runs: 5, Date: "2026-11-24", Cores: 2},
	}
	var buf bytes.Buffer
	if err := WriteCatalogue(&buf, []Lock{l}, []Row{safe, held}, rates); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{
		"| re-expression | no fault (1 of 5 runs) | kill |",
		"**How it breaks.**\n\n- `" + safe.Name + "`: asserted valid, yet invalid in 1 of 5 measured runs. It holds.",
		"**Why it holds.**\n\n- `" + held.Name + "`: It holds too.",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page:\n%s\nwant %q", page, want)
		}
	}
}

// A fault that breaks a lock on one commitlog and not on the other must say
// which, or the summary lists the lock as both holding and breaking under it.
func TestFaultsWordsNameTheCommitlog(t *testing.T) {
	for _, tc := range []struct {
		row  Row
		want string
	}{
		{Row{}, "no fault"},
		{Row{Faults: []string{"kill"}, Workload: "leader"}, "kill (leader)"},
		{Row{Faults: []string{"rack-power-loss"}, Cluster: Cluster{LazyFS: true}}, "rack-power-loss (commitlog periodic)"},
		{Row{Faults: []string{"rack-power-loss"}, Cluster: Cluster{LazyFS: true, Commitlog: "batch"}, Workload: "leader"}, "rack-power-loss (leader, commitlog batch)"},
	} {
		if got := faultsWords(tc.row); got != tc.want {
			t.Errorf("faultsWords(%+v) = %q, want %q", tc.row, got, tc.want)
		}
	}
}
