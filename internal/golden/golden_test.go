package golden

import (
	"os"
	"path/filepath"
	"testing"
)

// recorder is a testing.TB that keeps failures instead of reporting them.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }
func (r *recorder) Fatal(...any)          { r.failed = true }

func TestCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "page.md")
	if err := os.WriteFile(path, []byte("same\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		got  string
		fail bool
	}{
		{"equal", path, "same\n", false},
		{"differs", path, "other\n", true},
		{"missing page", filepath.Join(t.TempDir(), "none.md"), "same\n", true},
	}
	for _, tt := range tests {
		r := &recorder{TB: t}
		Check(r, tt.path, []byte(tt.got), "regen")
		if r.failed != tt.fail {
			t.Errorf("%s: failed %t, want %t", tt.name, r.failed, tt.fail)
		}
	}
}
