package main

import (
	"bytes"
	"flag"
	"path/filepath"
	"testing"

	"github.com/lockcheck/lockcheck/internal/golden"
)

// docs/cli.md is what the flag sets say: a flag added, renamed or
// re-described without regenerating the page fails here.
func TestCLIReference(t *testing.T) {
	var b bytes.Buffer
	writeCLIReference(&b)
	golden.Check(t, filepath.Join("..", "..", "docs", "cli.md"), b.Bytes(), "go test ./cmd/lockcheck -run TestCLIReference -update")
}

// Every subcommand's flags are in the reference, and no usage text puts
// backquotes in a flag's placeholder (flag.UnquoteUsage takes `x` as it).
func TestFlagUsages(t *testing.T) {
	for _, c := range flagSets {
		c.flags().VisitAll(func(f *flag.Flag) {
			if name, _ := flag.UnquoteUsage(f); name != "" && bytes.ContainsAny([]byte(name), " -") {
				t.Errorf("%s --%s: placeholder %q (backquotes in its usage?)", c.name, f.Name, name)
			}
		})
	}
	for name := range commands {
		if name == "cluster" {
			continue
		}
		found := false
		for _, c := range flagSets {
			found = found || c.name == name
		}
		if !found {
			t.Errorf("lockcheck %s has no entry in flagSets (docs/cli.md)", name)
		}
	}
}
