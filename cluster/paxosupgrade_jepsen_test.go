//go:build jepsen

package cluster_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/cluster/clustertest"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
)

// upgradeLines is a nemesis.Recorder that keeps the lines in memory.
type upgradeLines struct {
	mu  sync.Mutex
	ops []history.Op
}

func (l *upgradeLines) Append(op history.Op) (history.Op, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	op.Index = int64(len(l.ops))
	l.ops = append(l.ops, op)
	return op, nil
}

// TestPaxosUpgrade shows the paxos-upgrade window switching a real 3-node
// cluster from Paxos v1 to v2 and its paxos_state_purging from legacy to
// repaired: after the window every node reports v2 and repaired two ways,
// its MBeans (StorageProxy, StorageService) and its own system_views.settings
// (the configuration the node runs, read over CQL through that node alone),
// and its cassandra.yaml names both, so that a restart keeps them; a
// rolling restart switches a node too; LWTs go on through it; the next
// run's leftover heal switches every node back to v1 and legacy and
// records it. A cluster of its own (LOCKCHECK_FULL=1: a few minutes).
func TestPaxosUpgrade(t *testing.T) {
	if os.Getenv("LOCKCHECK_FULL") == "" {
		t.Skip("a full-tier test (a cluster of its own and restarts): LOCKCHECK_FULL=1")
	}
	c := clustertest.Start(t, "upgrade-test", cluster.WithNodes(3), cluster.WithPaxosUpgrade())
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	var targets []nemesis.Target
	for _, n := range c.Nodes() {
		targets = append(targets, nemesis.Target{Name: n.Name, IP: n.IP, Node: n})
	}
	variants := func() map[string]string {
		t.Helper()
		out := map[string]string{}
		for _, n := range c.Nodes() {
			live, file, err := n.PaxosVariant(ctx)
			if err != nil {
				t.Fatal(err)
			}
			plive, pfile, err := n.PaxosStatePurging(ctx)
			if err != nil {
				t.Fatal(err)
			}
			s, err := c.PinnedSession(ctx, n)
			if err != nil {
				t.Fatal(err)
			}
			var setting, psetting string
			err = s.Query(`SELECT value FROM system_views.settings WHERE name = 'paxos_variant'`).WithContext(ctx).Scan(&setting)
			if err == nil {
				err = s.Query(`SELECT value FROM system_views.settings WHERE name = 'paxos_state_purging'`).WithContext(ctx).Scan(&psetting)
			}
			s.Close()
			if err != nil {
				t.Fatalf("%s: system_views.settings: %v", n.Name, err)
			}
			out[n.Name] = live + "/" + file + "/" + setting + " " + plive + "/" + pfile + "/" + psetting
		}
		return out
	}
	lwt := func(key string) {
		t.Helper()
		s, err := c.Session(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.Query(`CREATE TABLE IF NOT EXISTS upgrade_probe (k text PRIMARY KEY, v int)`).WithContext(ctx).Exec(); err != nil {
			t.Fatal(err)
		}
		applied, err := s.Query(`INSERT INTO upgrade_probe (k, v) VALUES (?, 1) IF NOT EXISTS`, key).WithContext(ctx).MapScanCAS(map[string]any{})
		if err != nil || !applied {
			t.Fatalf("LWT on %s: applied %v, %v", key, applied, err)
		}
	}
	all := func(want string) map[string]string {
		return map[string]string{"n1": want, "n2": want, "n3": want}
	}
	if got := variants(); !maps.Equal(got, all("v1/v1/v1 legacy/legacy/legacy")) {
		t.Fatalf("before the window: %v, want v1 and legacy everywhere", got)
	}
	lwt("before")

	// The window, live, in the order n2 n1 n3.
	rec := &upgradeLines{}
	step, _ := json.Marshal(nemesis.PaxosUpgradeStart{How: nemesis.UpgradeLive, Order: []string{"n2", "n1", "n3"}})
	sched := nemesis.Schedule{Source: "TestPaxosUpgrade", Steps: []nemesis.Step{{Kind: nemesis.PaxosUpgrade, For: nemesis.Duration(6 * time.Second), Value: step}}}
	nem, err := nemesis.New(targets, rec, nemesis.WithSchedule(sched))
	if err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
	if err := nem.Run(rctx); err != nil {
		t.Fatal(err)
	}
	rcancel()
	if err := nem.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	var stop nemesis.PaxosUpgradeStop
	for _, op := range rec.ops {
		if op.F == history.StopF(nemesis.PaxosUpgrade) {
			if err := json.Unmarshal(op.Value, &stop); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("stop line: %+v", stop)
	order := []string{"n2", "n1", "n3"}
	if !slices.Equal(stop.Switched, order) || !slices.Equal(stop.Repaired, order) || !slices.Equal(stop.Purged, order) ||
		!slices.Equal(stop.RepairedAfter, order) || stop.Error != "" {
		t.Errorf("stop = %+v, want n2 n1 n3 switched, repaired, purging switched and repaired again", stop)
	}
	if !maps.Equal(stop.Variants, all("v2")) || !maps.Equal(stop.Purgings, all("repaired")) {
		t.Errorf("stop variants %v, purgings %v: want v2 and repaired on every node", stop.Variants, stop.Purgings)
	}
	// The run's heal left the upgrade in place, and every node says so.
	if got := variants(); !maps.Equal(got, all("v2/v2/v2 repaired/repaired/repaired")) {
		t.Fatalf("after the window and its heal: %v, want v2 and repaired everywhere (MBean, cassandra.yaml, system_views.settings)", got)
	}
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		if !slices.ContainsFunc(s.Faults, func(f string) bool { return strings.HasPrefix(f, "paxos v2") }) {
			t.Errorf("cluster status of %s: faults %v, want the upgrade named", s.Name, s.Faults)
		}
	}
	lwt("after")

	// The next run's start: reverted, recorded.
	next := &upgradeLines{}
	left, err := nemesis.HealLeftovers(ctx, targets, next, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 3 || len(next.ops) != 3 {
		t.Errorf("leftovers %+v, %d upgradeLines: want the revert of every node recorded", left, len(next.ops))
	}
	if got := variants(); !maps.Equal(got, all("v1/v1/v1 legacy/legacy/legacy")) {
		t.Fatalf("after HealLeftovers: %v, want v1 and legacy everywhere", got)
	}

	// The rolling-restart way on one node: cassandra.yaml, drain, stop,
	// start; the node comes back on v2.
	n2, err := c.Node("n2")
	if err != nil {
		t.Fatal(err)
	}
	if err := n2.SetPaxosVariant(ctx, "v2", true); err != nil {
		t.Fatal(err)
	}
	if got := variants()["n2"]; got != "v2/v2/v2 legacy/legacy/legacy" {
		t.Errorf("n2 after its restart: %s, want v2 (MBean, cassandra.yaml, settings)", got)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	lwt("mixed")
	if _, err := nemesis.HealLeftovers(ctx, targets, nil, slog.Default()); err != nil {
		t.Fatal(err)
	}
	if got := variants(); !maps.Equal(got, all("v1/v1/v1 legacy/legacy/legacy")) {
		t.Errorf("after the last heal: %v, want v1 and legacy everywhere", got)
	}
}
