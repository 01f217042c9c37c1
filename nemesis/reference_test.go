package nemesis

import (
	"reflect"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/internal/golden"
)

// The committed fault reference is the one the table renders (golden file):
// a kind added, changed or removed changes the page in the same commit.
func TestFaultReference(t *testing.T) {
	got := Reference()
	golden.Check(t, "../docs/faults.md", got, "go test ./nemesis -run TestFaultReference -update")
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
