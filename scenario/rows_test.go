package scenario

import (
	"encoding/json"
	"path/filepath"
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
