//go:build jepsen

package runner

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster/clustertest"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
)

// A store that fills up during a run, as a long campaign's does: the run
// stops its clients and faults at once, heals the cluster, says the store
// failed (a StoreError, which the CLI prints as one line, exit 2), and the
// history keeps every operation recorded before the failure and checks.
func TestStoreFillsUpDuringRun(t *testing.T) {
	env := ClusterEnv{clustertest.Get(t)}
	store := t.TempDir()
	if err := unix.Mount("tmpfs", store, "tmpfs", 0, "size=16m"); err != nil {
		t.Skipf("mounting a small tmpfs for the store needs root (CAP_SYS_ADMIN): %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(store, unix.MNT_DETACH) })

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rt := Defaults()
	rt.Recipe, rt.Nemesis, rt.Time, rt.Seed, rt.Store = Recipes()["lease"], []string{nemesis.Partition}, 60*time.Second, 51, store
	rt.Clients, rt.Interval, rt.Log = 3, 2*time.Second, testLogger(t)

	// Fill the store once the clients are running and a few seconds
	// into the faults.
	filled := make(chan error, 1)
	go func() {
		filled <- fillWhenRunning(ctx, store, 7*time.Second)
	}()
	out, err := Run(ctx, env, ReportStore{}, rt)
	if ferr := <-filled; ferr != nil {
		t.Fatalf("filling the store: %v", ferr)
	}
	var se *StoreError
	if !errors.As(err, &se) {
		t.Fatalf("run on a store that filled up: err %v, want a StoreError", err)
	}
	t.Logf("the run said: %v", se)
	if out.Phases.FaultsMS == 0 || out.Phases.FaultsMS >= out.Phases.RequestedMS {
		t.Errorf("faults ran %d ms of the %d requested: the run did not stop when the store filled", out.Phases.FaultsMS, out.Phases.RequestedMS)
	}
	ops, err := history.ReadFile(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatalf("the history on the full store does not read: %v", err)
	}
	if int64(len(ops)) != out.Ops+1 { // the meta line is not counted in Ops
		t.Errorf("%d lines in the history, %d operations recorded: lines were lost", len(ops), out.Ops+1)
	}
	res, err := checker.Check(ctx, ops)
	if err != nil {
		t.Fatalf("the history on the full store does not check: %v", err)
	}
	if res.Verdict == checker.Invalid {
		t.Errorf("the fenced-less lease under a few seconds of partitions: %s (%v); expected no anomaly in so short a run", res.Verdict, res.Anomalies)
	}
	// Every fault started was healed, and the heal is in the history.
	open := map[string]int{}
	for _, op := range ops {
		if k, start, ok := history.FaultEvent(op.F); ok {
			if start {
				open[k]++
			} else if open[k] > 0 {
				open[k]--
			}
		}
	}
	if out.Faults[nemesis.Partition] == 0 {
		t.Errorf("no partition dealt before the store filled: the heal after the stop went untested")
	}
	for k, n := range open {
		if n > 0 {
			t.Errorf("%d %s faults started and never stopped in the history", n, k)
		}
	}
	// Under the cluster's lease: another run may have it by now.
	lease, err := TakeCluster(ctx, env, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release()
	left, err := nemesis.HealLeftovers(ctx, env.Targets(), nil, testLogger(t))
	if err != nil {
		t.Fatalf("looking for leftovers: %v", err)
	}
	if len(left) > 0 {
		t.Errorf("the run that stopped left faults on the cluster: %v", left)
	}
}

// fillWhenRunning waits for a run's clients' answers in its history under
// store, lets it run for after, then fills the filesystem with a file of
// its own.
func fillWhenRunning(ctx context.Context, store string, after time.Duration) error {
	for {
		// The clients are running once the history holds their answers.
		m, _ := filepath.Glob(filepath.Join(store, "*", "*", "history.jsonl"))
		if len(m) > 0 {
			if b, err := os.ReadFile(m[0]); err == nil && bytes.Count(b, []byte(`"type":"ok"`)) >= 20 {
				break
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(after):
	}
	f, err := os.Create(filepath.Join(store, "filler"))
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, unix.ENOSPC) {
				return nil
			}
			return err
		}
	}
}
