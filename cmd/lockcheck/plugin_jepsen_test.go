//go:build jepsen

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/cluster/clustertest"
	"github.com/lockcheck/lockcheck/lockcmd"
)

// A plug-in that cannot start or fails its setup ends `lockcheck run` with
// one line and exit 2, and leaves nothing running (here a child the
// plug-in started, which only the process group's kill reaches).
func TestRunBadPlugin(t *testing.T) {
	c := clustertest.Get(t)
	for _, tc := range []struct{ name, command, want string }{
		{"not found", "no-such-plugin --x", "sh: 1: no-such-plugin: not found"},
		{"not the protocol", "sleep 97 & echo hello; cat >/dev/null", `reply to setup 1 is not a JSON object: "hello"`},
		{"fails setup", `sleep 98 & read l; echo '{"id":1,"type":"fail","error":"no schema for you"}'; cat >/dev/null`, "no schema for you"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := runRun(context.Background(), []string{"--cluster", c.Name(), "--lock-cmd", tc.command,
				"--time", "5s", "--store", t.TempDir()}, &out, &errb)
			lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
			last := lines[len(lines)-1]
			if code != exitError || !strings.Contains(last, tc.want) || out.Len() > 0 {
				t.Errorf("exit %d, stdout %q, last line %q; want exit 2 and one line saying %q", code, out.String(), last, tc.want)
			}
			for _, l := range lines[:len(lines)-1] {
				if !strings.HasPrefix(l, "lockcheck run: using") && !strings.HasPrefix(l, "lockcheck run: "+lockcmd.Name(tc.command)+" under") {
					t.Errorf("more than the error on stderr: %q", l)
				}
			}
			for _, marker := range []string{"sleep 97", "sleep 98", "no-such-plugin"} {
				if left := processesWith(marker); len(left) > 0 {
					t.Errorf("%q still running: %v", marker, left)
				}
			}
		})
	}
}

// processesWith lists the pids whose command line contains s.
func processesWith(s string) []string {
	var pids []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err == nil && strings.Contains(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})), s) {
			pids = append(pids, filepath.Base(d))
		}
	}
	return pids
}
