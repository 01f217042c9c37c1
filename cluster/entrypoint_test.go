package cluster

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeLibfaketime is a stand-in for libfaketimeMT.so.1: an ELF header and
// the environment variable names the library reads, NUL-separated as in
// its string table.
func fakeLibfaketime(names ...string) []byte {
	b := []byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00")
	for _, n := range names {
		b = append(b, n...)
		b = append(b, 0)
	}
	return b
}

// The names both releases read; 0.9.9 added FAKETIME_FORCE_MONOTONIC_FIX.
var libfaketimeNames = []string{
	"FAKETIME_SHARED", "FAKETIME_DONT_FAKE_MONOTONIC", "FAKETIME_TIMESTAMP_FILE",
	"FAKETIME_CACHE_DURATION", "FAKETIME_NO_CACHE", "FAKETIME_SKIP_CMDS",
}

// TestEntrypointFaketimeMono runs the node entrypoint's decision (which
// monotonic-clock settings the JVM's libfaketime is given) with sh on fake
// libraries: giving 0.9.8 (the 4.x images) FAKETIME_DONT_FAKE_MONOTONIC
// made every timed wait in the JVM spin; not giving it to 0.9.10 (5.0)
// would fake the monotonic clock with the wall clock's steps.
func TestEntrypointFaketimeMono(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on PATH")
	}
	script, err := imageFS.ReadFile("image/entrypoint.sh")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	entry := filepath.Join(dir, "entrypoint.sh")
	if err := os.WriteFile(entry, script, 0o755); err != nil {
		t.Fatal(err)
	}
	libs := map[string][]byte{
		"0.9.10": fakeLibfaketime(append(libfaketimeNames, "FAKETIME_FORCE_MONOTONIC_FIX", "FAKETIME_DEBUG")...),
		"0.9.8":  fakeLibfaketime(append(libfaketimeNames, "FAKETIME_DEBUG")...),
		// The name must be the library's whole variable, not a prefix of it.
		"prefix only": fakeLibfaketime(append(libfaketimeNames, "FAKETIME_FORCE_MONOTONIC")...),
	}
	for name, b := range libs {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const both = "FAKETIME_DONT_FAKE_MONOTONIC=1 FAKETIME_FORCE_MONOTONIC_FIX=0"
	for _, tc := range []struct {
		lib  string
		want string
	}{
		{"0.9.10", both},
		{"0.9.8", ""},
		{"prefix only", ""},
		// No library to read: neither, as for 0.9.8 (the entrypoint
		// fails earlier when it finds no library at all).
		{"missing", ""},
	} {
		t.Run(tc.lib, func(t *testing.T) {
			cmd := exec.Command(sh, entry, "faketime-mono", filepath.Join(dir, tc.lib))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("entrypoint.sh faketime-mono: %v: %s", err, stderr.String())
			}
			if got := strings.TrimSpace(string(out)); got != tc.want {
				t.Errorf("settings for libfaketime %s = %q, want %q", tc.lib, got, tc.want)
			}
		})
	}
	t.Run("usage", func(t *testing.T) {
		err := exec.Command(sh, entry, "faketime-mono").Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 78 {
			t.Errorf("faketime-mono without a library: %v, want exit 78", err)
		}
	})
}
