//go:build jepsen

package runner

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/cluster/clustertest"
	"github.com/lockcheck/lockcheck/nemesis"
)

// powerFaults cut one node's power or a rack's (two or three nodes) at once.
var powerFaults = []string{nemesis.PowerLoss, nemesis.RackPowerLoss}

// powerMatrix: the fixed recipes under power loss, on a cluster whose data
// lives on the lazy filesystem, with the commitlog synced every 10 s
// (periodic, Cassandra's default) and before every acknowledgement (batch).
// Verdicts are what runs here showed (README, Findings: power loss).
var powerMatrix = []struct {
	commitlog string
	rows      []matrixCase
}{
	{"periodic", []matrixCase{
		{lock: "lease-fenced", nemesis: powerFaults, time: 40 * time.Second, interval: 8 * time.Second},
		{lock: "music-seq", nemesis: powerFaults, time: 40 * time.Second, interval: 8 * time.Second},
	}},
	{"batch", []matrixCase{
		{lock: "lease-fenced", nemesis: powerFaults, time: 40 * time.Second, interval: 8 * time.Second},
		{lock: "music-seq", nemesis: powerFaults, time: 40 * time.Second, interval: 8 * time.Second},
	}},
}

// TestPowerLoss runs the power matrix, each commitlog mode on a lazy
// filesystem cluster of its own. LOCKCHECK_REPEAT=N runs each row N times
// and logs how many were invalid.
func TestPowerLoss(t *testing.T) {
	bin := clustertest.LazyFSBinary(t)
	repeat, _ := strconv.Atoi(os.Getenv("LOCKCHECK_REPEAT"))
	if repeat < 1 {
		repeat = 1
	}
	store := matrixStore(t)
	for _, mode := range powerMatrix {
		t.Run(mode.commitlog, func(t *testing.T) {
			c := clustertest.Start(t, "power", cluster.WithLazyFS(bin), cluster.WithCommitlogSync(mode.commitlog))
			env := ClusterEnv{c}
			for i, mc := range mode.rows {
				name := fmt.Sprintf("%s/%s", mc.lock, nemesisName(mc.nemesis))
				t.Run(name, func(t *testing.T) {
					invalid := 0
					for r := range repeat {
						out := runCase(t, env, store, mc, int64(3000+100*i+r))
						for _, k := range mc.nemesis {
							if out.Faults[k] == 0 {
								t.Logf("%s: no %s fault in this run (%v)", name, k, out.Faults)
							}
						}
						if out.Verdict == checker.Invalid {
							invalid++
						}
						if mc.want != "" && out.Verdict != mc.want {
							t.Errorf("%s, commitlog %s: verdict %s, want %s; report %s", name, mode.commitlog, out.Verdict, mc.want, out.Dir)
						}
					}
					t.Logf("POWER %s commitlog %s: %d of %d invalid at %v", name, mode.commitlog, invalid, repeat, mc.time)
				})
			}
		})
	}
}
