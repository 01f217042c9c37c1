//go:build jepsen

package runner

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/cluster/clustertest"
	"github.com/lockcheck/lockcheck/nemesis"
)

// rackPower cuts every node's power at once.
var rackPower = []string{nemesis.RackPowerLoss}

// clusterConfig is a cluster other than the shared one, with the rows that
// need it.
type clusterConfig struct {
	name string // also the cluster's name suffix
	opts func(t *testing.T) []cluster.Option
	rows []matrixCase
}

func lazyFS(commitlog string) func(t *testing.T) []cluster.Option {
	return func(t *testing.T) []cluster.Option {
		return []cluster.Option{cluster.WithLazyFS(clustertest.LazyFSBinary(t)), cluster.WithCommitlogSync(commitlog)}
	}
}

// configMatrix: the fixed recipes on Paxos v2, and under power loss with
// the commitlog synced every 10 s (periodic, Cassandra's default) or before
// every acknowledgement (batch), on clusters whose data lives on the lazy
// filesystem. Verdicts are what runs here showed (README, Findings).
var configMatrix = []clusterConfig{
	{name: "v2", opts: func(*testing.T) []cluster.Option { return []cluster.Option{cluster.WithPaxos("v2")} }, rows: []matrixCase{
		{lock: "lease-fenced", nemesis: nodeFaults, time: 90 * time.Second, want: checker.Valid, interval: 2 * time.Second},
		{lock: "music-seq", nemesis: nodeFaults, time: 90 * time.Second, want: checker.Valid, interval: 2 * time.Second, full: true},
	}},
	// Every replica forgets the commitlog's unsynced tail at once: 20 of 20
	// runs invalid (acknowledged adds lost, fencing tokens issued again).
	{name: "periodic", opts: lazyFS("periodic"), rows: []matrixCase{
		{lock: "lease-fenced", nemesis: rackPower, time: 30 * time.Second, interval: 4 * time.Second, want: checker.Invalid, unsafe: true},
		{lock: "music-seq", nemesis: rackPower, time: 30 * time.Second, interval: 4 * time.Second, want: checker.Invalid, unsafe: true, full: true},
	}},
	// The same cut with every write synced before it is acknowledged: 0 of
	// 20 runs invalid.
	{name: "batch", opts: lazyFS("batch"), rows: []matrixCase{
		{lock: "lease-fenced", nemesis: rackPower, time: 30 * time.Second, interval: 4 * time.Second, want: checker.Valid},
		{lock: "music-seq", nemesis: rackPower, time: 30 * time.Second, interval: 4 * time.Second, want: checker.Valid, full: true},
	}},
}

// TestConfigs runs each configuration's rows on a cluster of its own.
// LOCKCHECK_REPEAT=N runs every row N times and logs how many were
// invalid; LOCKCHECK_CONFIGS=v2,batch runs only those configurations.
func TestConfigs(t *testing.T) {
	repeat, _ := strconv.Atoi(os.Getenv("LOCKCHECK_REPEAT"))
	repeat = max(repeat, 1)
	only := os.Getenv("LOCKCHECK_CONFIGS")
	store := matrixStore(t)
	for ci, cfg := range configMatrix {
		if only != "" && !slices.Contains(strings.Split(only, ","), cfg.name) {
			continue
		}
		t.Run(cfg.name, func(t *testing.T) {
			env := ClusterEnv{clustertest.Start(t, cfg.name, cfg.opts(t)...)}
			for i, mc := range cfg.rows {
				name := fmt.Sprintf("%s/%s", mc.lock, nemesisName(mc.nemesis))
				t.Run(name, func(t *testing.T) {
					skipFull(t, mc)
					invalid := 0
					for r := range repeat {
						out := runCase(t, env, store, mc, int64(3000+1000*ci+100*i+r))
						for _, k := range mc.nemesis {
							if out.Faults[k] == 0 {
								t.Errorf("%s: no %s fault was injected (%v)", name, k, out.Faults)
							}
						}
						if out.Verdict == checker.Invalid {
							invalid++
						}
						if mc.want != "" && out.Verdict != mc.want {
							t.Errorf("%s on %s: verdict %s, want %s; report %s", name, cfg.name, out.Verdict, mc.want, out.Dir)
						}
					}
					t.Logf("CONFIG %s %s: %d of %d invalid at %v", cfg.name, name, invalid, repeat, mc.time)
				})
			}
		})
	}
}
