package matrix

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/scenario"
)

// Every row of the scenario table makes a run the runner accepts: its
// recipe exists, its faults and settings pass Validate, and its cluster
// configuration can be built. A shrunk row's empty schedule deals no fault.
func TestScenarioRowsRun(t *testing.T) {
	// The lazy filesystem's binary only has to be a file here.
	lazyFS := filepath.Join(t.TempDir(), "lockcheck-lazyfs")
	if err := os.WriteFile(lazyFS, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, row := range scenario.Rows {
		tc, err := Test(row, 2)
		if err != nil {
			t.Errorf("%s: %v", row.Name, err)
			continue
		}
		if tc.Recipe.Name != row.Recipe || tc.Time != row.Time || tc.Interval != row.Interval ||
			tc.Seed != row.Seed+2 || tc.PinClients != row.Pin || !slices.Equal(tc.Nemesis, row.Faults) ||
			tc.Clients != row.ClientCount() || tc.Locks != row.LockCount() || tc.Workload != row.Shape() ||
			(row.Schedule == nil || len(row.Schedule.Steps) == 0) != (tc.Schedule == nil) {
			t.Errorf("%s: test %+v does not carry the row", row.Name, tc)
		}
		if _, err := ClusterOptions(row.Cluster, lazyFS); err != nil {
			t.Errorf("%s: cluster %s: %v", row.Name, row.Cluster, err)
		}
	}
}

func TestRefusesBadRows(t *testing.T) {
	row := scenario.Rows[0]
	row.Recipe = "no-such-lock"
	if _, err := Test(row, 0); err == nil {
		t.Error("a row with an unknown recipe: no error")
	}
	row = scenario.Rows[0]
	row.Clients = 1000
	if _, err := Test(row, 0); err == nil {
		t.Error("a row with 1000 clients: no error")
	}
}

// A row that names a plug-in runs it from the repository's root (here
// the reference plug-in python-lease, two directories up), under the
// row's name and promise.
func TestOfPlugin(t *testing.T) {
	row := scenario.Row{Name: "pylease/client-pause", Recipe: "pylease", Command: "plugins/python-lease/run --quiet",
		Promise: "fenced", Faults: []string{"client-pause"}, Time: 20 * time.Second, Interval: 3 * time.Second, Seed: 9,
		Want: "invalid", Unsafe: true, Tier: scenario.Quick, Mechanism: "m"}
	if err := row.Check(); err != nil {
		t.Fatal(err)
	}
	tc, err := Test(row, 0)
	if err != nil {
		t.Fatal(err)
	}
	if tc.Recipe.Name != "pylease" || tc.Recipe.Promise != "fenced" || tc.Recipe.Setup == nil {
		t.Errorf("recipe %+v, want the plug-in named pylease, fenced", tc.Recipe)
	}
	root, _ := filepath.Abs("..")
	if got, want := repoCommandOf(t, row.Command), filepath.Join(root, "plugins/python-lease/run")+" --quiet"; got != want {
		t.Errorf("command %q, want %q", got, want)
	}
	row.Command = "plugins/no-such-plugin/run"
	if _, err := Test(row, 0); err == nil || !strings.Contains(err.Error(), "no directory plugins/no-such-plugin") {
		t.Errorf("a plug-in that is not in the checkout: %v", err)
	}
}

func repoCommandOf(t *testing.T, command string) string {
	t.Helper()
	c, err := repoCommand(command)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClusterOptions(t *testing.T) {
	if opts, err := ClusterOptions(scenario.Cluster{Nodes: 4, Spares: 1, Paxos: "v2", SkipPaxosRepair: true}, ""); err != nil || len(opts) != 4 {
		t.Errorf("4 nodes, a spare, v2 without Paxos repair: %d options, %v", len(opts), err)
	}
	if _, err := ClusterOptions(scenario.Cluster{SkipPaxosRepair: true}, ""); !errors.Is(err, cluster.ErrBadOption) {
		t.Errorf("skip Paxos repair on v1: %v, want ErrBadOption", err)
	}
	if opts, err := ClusterOptions(scenario.Cluster{Version: "4.1.5", Paxos: "v2", PaxosStatePurging: "repaired"}, ""); err != nil || len(opts) != 3 {
		t.Errorf("4.1.5, v2, purging repaired: %d options, %v", len(opts), err)
	}
	if _, err := ClusterOptions(scenario.Cluster{Version: "4.0", PaxosStatePurging: "gc_grace"}, ""); !errors.Is(err, cluster.ErrBadOption) {
		t.Errorf("paxos state purging on 4.0: %v, want ErrBadOption", err)
	}
	if _, err := ClusterOptions(scenario.Cluster{DCs: 2}, ""); !errors.Is(err, cluster.ErrBadOption) {
		t.Errorf("two data centres of 3 nodes: %v, want ErrBadOption", err)
	}
	if opts, err := ClusterOptions(scenario.Cluster{Nodes: 4, DCs: 2}, ""); err != nil || len(opts) != 2 {
		t.Errorf("two data centres of 4 nodes: %d options, %v", len(opts), err)
	}
	if _, err := ClusterOptions(scenario.Cluster{LazyFS: true}, ""); err == nil {
		t.Error("lazyfs without its binary: no error")
	}
	if _, err := ClusterOptions(scenario.Cluster{Paxos: "v3"}, ""); !errors.Is(err, cluster.ErrBadOption) {
		t.Errorf("paxos v3: %v, want ErrBadOption", err)
	}
	if _, err := ClusterOptions(scenario.Cluster{Version: "4.0", Paxos: "v2"}, ""); !errors.Is(err, cluster.ErrBadOption) {
		t.Errorf("paxos v2 on 4.0: %v, want ErrBadOption", err)
	}
	if opts, err := ClusterOptions(scenario.Cluster{Version: "4.1", Paxos: "v2"}, ""); err != nil || len(opts) != 2 {
		t.Errorf("4.1 with paxos v2: %d options, %v", len(opts), err)
	}
	opts, err := ClusterOptions(scenario.Cluster{Paxos: "v2", Nodes: 5}, "")
	if err != nil || len(opts) != 2 {
		t.Errorf("paxos v2 on 5 nodes: %d options, %v", len(opts), err)
	}
}
