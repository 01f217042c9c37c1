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
		// An earlier package may have left a fault behind (its test failed
		// before healing): heal it rather than fail this package for it.
		// Only after a minute, though: while engineers share one cluster, a
		// fault may be another package's test at work.
		if err = waitHealthyFor(ctx, c, time.Minute); err != nil {
			log.Warn("clustertest: cluster not healthy for a minute; healing it", "err", err)
			if err = heal(ctx, c, log); err == nil {
				err = c.WaitHealthy(ctx)
			}
		}
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

// waitHealthyFor waits up to d for the cluster to be healthy, also through
// faults WaitHealthy reports at once (a paused or stopped node).
func waitHealthyFor(ctx context.Context, c *cluster.Cluster, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		err := c.WaitHealthy(ctx)
		if err == nil || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(2 * time.Second):
		}
	}
}

// heal undoes every fault a test can leave on a node: a paused container, a
// stopped JVM, a killed node, iptables rules in INPUT, a clock offset.
func heal(ctx context.Context, c *cluster.Cluster, log *slog.Logger) error {
	for _, n := range c.Nodes() {
		st, err := n.State(ctx)
		if err != nil {
			return err
		}
		switch st {
		case "paused":
			log.Warn("clustertest: unpausing a node left paused", "node", n.Name)
			if err := n.Unpause(ctx); err != nil {
				return err
			}
		case "running":
		default:
			log.Warn("clustertest: restarting a node left down", "node", n.Name, "state", st)
			if err := n.Restart(ctx); err != nil {
				return err
			}
		}
		if err := n.SignalJVM(ctx, "CONT"); err != nil {
			return err
		}
		if _, err := n.Exec(ctx, "iptables", "-w", "-F", "INPUT"); err != nil {
			return err
		}
		if err := n.SetClockOffset(ctx, 0); err != nil {
			return err
		}
	}
	return nil
}
