package nemesis

import (
	"bytes"
	"flag"
	"os"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/faults.md from the kinds table")

// The committed fault reference is the one the table renders (golden file):
// a kind added, changed or removed changes the page in the same commit.
func TestFaultReference(t *testing.T) {
	const path = "../docs/faults.md"
	got := Reference()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("docs/faults.md is not what the table renders: run `go test ./nemesis -run TestFaultReference -update` and commit it")
	}
	// Every kind, and every field of its values with its meaning, is there.
	page := string(got)
	for _, k := range table {
		if !strings.Contains(page, "\n## "+k.Name+"\n") {
			t.Errorf("no section for %s", k.Name)
		}
		for _, v := range []any{k.StartValue, k.StopValue} {
			ty := reflect.TypeOf(v)
			for i := range ty.NumField() {
				if ty.Field(i).Tag.Get("doc") == "" {
					t.Errorf("%s: field %s of %s has no doc tag", k.Name, ty.Field(i).Name, ty.Name())
				}
			}
		}
	}
}
