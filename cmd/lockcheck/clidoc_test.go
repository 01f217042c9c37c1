package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/cli.md from the flag sets")

// docs/cli.md is what the flag sets say: a flag added, renamed or
// re-described without regenerating the page fails here.
func TestCLIReference(t *testing.T) {
	var b bytes.Buffer
	writeCLIReference(&b)
	path := filepath.Join("..", "..", "docs", "cli.md")
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("docs/cli.md is not what the flag sets say: go test ./cmd/lockcheck -run TestCLIReference -update")
	}
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
