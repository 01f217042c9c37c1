// Package clustertest gives integration tests (build tag jepsen) of any
// package a running Cassandra cluster:
//
//	func TestMain(m *testing.M) { clustertest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		c := clustertest.Get(t)
//		...
//	}
//
// Main attaches to the cluster `lockcheck cluster up` left running (name
// "lockcheck", or $LOCKCHECK_CLUSTER), so that `make jepsen` starts one
// cluster for every package; when none runs, it starts one and removes it
// after the package's tests.
package clustertest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/nemesis"
)

var shared *cluster.Cluster

// Main runs the package's tests with a cluster and exits; call it from
// TestMain.
func Main(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	name := os.Getenv("LOCKCHECK_CLUSTER")
	if name == "" {
		name = cluster.DefaultName
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	c, err := cluster.Attach(ctx, cluster.WithName(name), cluster.WithLogger(log))
	started := false
	if errors.Is(err, cluster.ErrNotRunning) {
		log.Info("clustertest: no running cluster; starting one for this package", "cluster", name)
		c, err = cluster.Start(ctx, cluster.WithName(name), cluster.WithLogger(log))
		started = true
	} else if err == nil {
		// A test that failed before healing, or a harness killed mid-run,
		// may have left a fault: every package starts from a known state.
		err = HealLeftovers(ctx, c, log)
	}
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "clustertest: cluster %s: %v\n", name, err)
		return 1
	}
	shared = c
	code := m.Run()
	if started {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := c.Stop(sctx, os.Getenv("LOCKCHECK_CLUSTER_LOGS")); err != nil {
			fmt.Fprintf(os.Stderr, "clustertest: stop cluster %s: %v\n", name, err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// Get returns the cluster of the package's tests; it fails the test when
// TestMain did not call Main.
func Get(tb testing.TB) *cluster.Cluster {
	tb.Helper()
	if shared == nil {
		tb.Fatal("clustertest: no cluster: call clustertest.Main(m) from TestMain")
	}
	return shared
}

// HealLeftovers brings every node of c to its known state with the heal
// `lockcheck run` uses (nemesis.HealLeftovers), and waits for a healthy
// cluster.
func HealLeftovers(ctx context.Context, c *cluster.Cluster, log *slog.Logger) error {
	var targets []nemesis.Target
	for _, n := range c.Nodes() {
		targets = append(targets, nemesis.Target{Name: n.Name, IP: n.IP, Node: n})
	}
	if _, err := nemesis.HealLeftovers(ctx, targets, nil, log); err != nil {
		return err
	}
	return c.WaitHealthy(ctx)
}
