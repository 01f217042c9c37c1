// Package golden checks the reference pages generated from the code's
// tables (docs/faults.md, docs/cli.md, docs/findings.md, docs/recipes.md)
// against what is committed: a table changed without its page fails the
// test that renders it, and `go test ./PKG -run TEST -update` rewrites it.
package golden

import (
	"bytes"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated pages the tests render")

// Check compares got with the file at path (relative to the test's
// package), after writing it there under -update. regen is the command
// that rewrites it, for the failure message.
func Check(tb testing.TB, path string, got []byte, regen string) {
	tb.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%v (generate it: %s)", err, regen)
	}
	if !bytes.Equal(got, want) {
		tb.Errorf("%s is not what the code's tables render: run `%s` and commit it", path, regen)
	}
}
