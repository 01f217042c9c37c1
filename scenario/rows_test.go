package scenario

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lockcheck/lockcheck/internal/golden"
)

// TestRowsSnapshot compares every row, every field and the table's order,
// with testdata/rows.json: rates.jsonl attaches rates by name and seed
// settings, the jepsen tests assert the verdicts, and docs/findings.md and
// docs/locks.md list the rows in table order, so a change in how the rows
// are written (axes, the expectation table, the hand-written list) must
// leave every row as it was. A row added or changed on purpose shows here
// as a diff of that row: `go test ./scenario -update` rewrites the file.
func TestRowsSnapshot(t *testing.T) {
	got, err := json.MarshalIndent(Rows, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "rows.json"), append(got, '\n'), "go test ./scenario -run TestRowsSnapshot -update")
}

// Every lock of the catalogue that the expectation table names (its Go
// locks, JavaLocks) is tried under every fault set of CatalogueFaults on
// the shared cluster: a lock added to an axis without an expectation for
// one of them fails here, naming the row it lacks.
func TestCatalogueCross(t *testing.T) {
	var locks []string
	for _, e := range catalogueExpect {
		if !slices.Contains(locks, e.Lock) {
			locks = append(locks, e.Lock)
		}
	}
	for _, j := range JavaLocks {
		locks = append(locks, j.Name)
	}
	if len(locks) < 2 {
		t.Fatalf("catalogue locks %v: want the Go and the Java ones", locks)
	}
	for _, l := range locks {
		for _, f := range CatalogueFaults {
			name := Expect{Lock: l, Faults: f}.Row().Name
			if _, ok := Lookup(name); !ok {
				t.Errorf("lock %s has no expectation under %s: want a line for %s", l, Row{Faults: f.Kinds}.FaultsName(), name)
			}
		}
	}
}

// A Java lock runs its plug-in in every row, and has its words in the
// catalogue (docs/locks.md).
func TestJavaLocksAxis(t *testing.T) {
	for _, j := range JavaLocks {
		if !slices.ContainsFunc(Catalogue, func(l Lock) bool { return l.Recipe == j.Name }) {
			t.Errorf("Java lock %s: no entry in Catalogue", j.Name)
		}
		for _, r := range Rows {
			if r.Recipe == j.Name && r.Command != j.Command() {
				t.Errorf("row %s: command %q, want %q", r.Name, r.Command, j.Command())
			}
		}
		if r := j.stallRow(); r.Tier != Quick || r.Schedule == nil {
			t.Errorf("Java lock %s: its stall row %s is not a quick scheduled row", j.Name, r.Name)
		}
	}
}

// A release line's expectations leave the version to the line, so that
// each of its rows runs on it.
func TestReleasesAxis(t *testing.T) {
	for _, rl := range Releases {
		for _, e := range rl.Expect {
			if e.Cluster.Version != "" {
				t.Errorf("release %q: an expectation names version %q; the line sets it", rl.Line, e.Cluster.Version)
			}
		}
	}
}
