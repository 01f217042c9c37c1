//go:build jepsen

package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster/clustertest"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
)

// The reference plug-ins (seed 000's lease in Python and Java, on their
// ecosystems' real drivers) under the harness: valid without faults, and
// caught under client-pause, the seed's flaw, with the plug-in process
// itself stopped. `make plugins` builds them (`make jepsen` does it first).
// Each run is 12-15 s plus the processes' start (a JVM: 1-2 s, five at
// once about 4 s) and 2 s of quiet.
//
// Its runs fault only the clients: it is a parallel test, whose two
// plug-ins' runs share the -parallel slots with TestMatrix's client rows once
// the package's sequential tests (the node faults among them) have ended.
// TestPluginClientKill, which runs python-lease too, is sequential: no run of
// it overlaps these, whose check for leftover processes it would fail.
func TestReferencePlugins(t *testing.T) {
	t.Parallel()
	env := ClusterEnv{clustertest.Get(t)}
	for _, tc := range []struct {
		plugin, marker string // marker: a word of the plug-in's command line, to find leftovers
	}{
		{"python-lease", "lease_plugin.py"},
		{"java-lease", "lockcheck.LeasePlugin"},
	} {
		// The two plug-ins run side by side (their processes are told
		// apart by marker); each one's runs, one after the other.
		t.Run(tc.plugin, func(t *testing.T) {
			t.Parallel()
			run, err := filepath.Abs(filepath.Join("..", "plugins", tc.plugin, "run"))
			if err != nil {
				t.Fatal(err)
			}
			for _, row := range []struct {
				nemesis []string
				time    time.Duration
				want    checker.Verdict
			}{
				{nil, 12 * time.Second, checker.Valid},
				{[]string{nemesis.ClientPause}, 15 * time.Second, checker.Invalid},
			} {
				t.Run(nemesisName(row.nemesis), func(t *testing.T) {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
					defer cancel()
					rt := Defaults()
					rt.Recipe, rt.Nemesis, rt.Time, rt.Seed, rt.Store = CmdRecipe(run, history.PromiseMutex), row.nemesis, row.time, 7, t.TempDir()
					rt.Clients, rt.Interval, rt.Quiet, rt.Log = 5, 3*time.Second, 2*time.Second, testLogger(t)
					out, err := Run(ctx, env, ReportStore{}, rt)
					if err != nil {
						t.Fatalf("run: %v (log %s)", err, filepath.Join(out.Dir, "lockcheck.log"))
					}
					t.Logf("%s under %v: %s, %d ops, faults %v, %d anomalies; %s",
						tc.plugin, row.nemesis, out.Verdict, out.Ops, out.Faults, len(out.Result.Anomalies), out.Dir)
					if out.Verdict != row.want {
						t.Errorf("verdict %s, want %s; report %s", out.Verdict, row.want, out.Dir)
					}
					if out.Ops < 100 {
						t.Errorf("only %d operations", out.Ops)
					}
					log, err := os.ReadFile(filepath.Join(out.Dir, "lockcheck.log"))
					if err != nil {
						t.Fatal(err)
					}
					if row.want == checker.Invalid && !bytes.Contains(log, []byte(`msg="plug-in stopped"`)) {
						t.Error("no plug-in process was stopped by the client pause")
					}
					if left := processesWith(tc.marker); len(left) > 0 {
						t.Errorf("plug-in processes left running: %v", left)
					}
				})
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

func nemesisName(kinds []string) string {
	if len(kinds) == 0 {
		return "none"
	}
	return strings.Join(kinds, "+")
}
