//go:build jepsen

package main

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/cluster/clustertest"
	"github.com/lockcheck/lockcheck/history"
)

// TestKilledMidMovement SIGKILLs `lockcheck run` inside a membership
// window on a cluster of its own (3 nodes, RF 2, one spare) and checks
// what a user sees after it:
//
//   - join: killed while the spare bootstraps (UJ); `cluster status` shows
//     the spare in the ring, the killed run's history gives a verdict or
//     unknown, and `lockcheck cluster heal` brings the ring back (the spare
//     out of it and stopped), saying what it undid;
//   - leave: killed while a member decommissions (UL, or out of the ring);
//     the next `lockcheck run` heals it before its set-up and its history's
//     heal-leftover line names the member and the change.
//
// After each heal the members are UN, the spare is out and stopped, no
// node shows a fault, and a Paxos write goes through. Minutes of
// bootstraps: full tier only.
func TestKilledMidMovement(t *testing.T) {
	if os.Getenv("LOCKCHECK_FULL") != "1" {
		t.Skip("a full-tier test (minutes of bootstraps): LOCKCHECK_FULL=1")
	}
	c := clustertest.Start(t, "killmove", cluster.WithNodes(3), cluster.WithSpares(1), cluster.WithReplicationFactor(2), cluster.WithHeap("384M"))
	bin := filepath.Join(t.TempDir(), "lockcheck")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	store := filepath.Join(t.TempDir(), "store")
	k := &killer{t: t, bin: bin, cluster: c.Name(), store: store}
	m := &mover{killer: k, c: c}
	ctx, cancel := context.WithTimeout(context.Background(), 35*time.Minute)
	defer cancel()
	m.startingRing(ctx, "before the runs")

	// join: the spare in the ring, healed by `lockcheck cluster heal`.
	r := m.killInside(ctx, "join", 301, func(ring map[string]string) (string, bool) {
		st, in := ring["n4"]
		return "n4 " + st, in
	})
	st := m.statusOf("n4")
	t.Logf("join: cluster status after the kill: n4 %+v", st)
	if !slices.Contains([]string{"UJ", "UN"}, st.state) || !strings.Contains(st.faults, "spare") {
		t.Errorf("status after the kill in a join: n4 %+v; want it in the ring (UJ or UN) and named a spare", st)
	}
	m.checkHistory(r)
	begin := time.Now()
	out, err := exec.CommandContext(ctx, bin, "cluster", "heal", "--name", c.Name()).CombinedOutput()
	if err != nil {
		t.Fatalf("cluster heal: %v: %s", err, out)
	}
	t.Logf("join: kill to healed ring %v; cluster heal said:\n%s", time.Since(m.killed).Round(time.Second), out)
	t.Logf("join: cluster heal took %v", time.Since(begin).Round(time.Second))
	if heal := string(out); !strings.Contains(heal, "healed a fault an earlier run left") || !strings.Contains(heal, "node=n4") || !strings.Contains(heal, "healed=[join]") {
		t.Errorf("cluster heal did not say it took the spare n4 out of the ring (a join's leftover): %s", heal)
	}
	m.startingRing(ctx, "after cluster heal")

	// leave: a member leaving, healed by the next run.
	var moved string
	r = m.killInside(ctx, "leave", 302, func(ring map[string]string) (string, bool) {
		for _, n := range []string{"n1", "n2", "n3"} {
			if st, in := ring[n]; !in || st == "UL" {
				moved = n
				return n + " " + orElse(st, "out"), true
			}
		}
		return "", false
	})
	st = m.statusOf(moved)
	t.Logf("leave: cluster status after the kill: %s %+v", moved, st)
	if st.state != "UL" && st.state != "out" {
		t.Errorf("status after the kill in a leave: %s %+v; want it leaving (UL) or out", moved, st)
	}
	m.checkHistory(r)
	next := k.start("after-leave", 303, "--nemesis", "none", "--time", "5s")
	// The heal is done (and the cluster healthy) when the run's clients
	// run: its first progress line.
	var healed, running time.Time
	for l := range next.seen {
		if strings.Contains(l, "healed a fault an earlier run left") {
			healed = time.Now()
		}
		if strings.Contains(l, " ops/s ") {
			running = time.Now()
			break
		}
	}
	next.wait()
	t.Logf("leave: kill to the next run's heal line %v, to its clients running (the ring healed and healthy) %v",
		since(m.killed, healed), since(m.killed, running))
	if next.exitCode() != 0 {
		t.Errorf("the run after the leave: exit %d: %s", next.exitCode(), next.stderr())
	}
	var found []history.HealLeftover
	for _, op := range next.historyOps() {
		if op.F == history.FHealLeftover {
			var l history.HealLeftover
			if err := json.Unmarshal(op.Value, &l); err != nil {
				t.Errorf("heal-leftover %s: %v", op.Value, err)
			}
			found = append(found, l)
		}
	}
	t.Logf("leave: the next run's heal-leftover lines: %+v", found)
	if !slices.ContainsFunc(found, func(l history.HealLeftover) bool {
		return l.Node == moved && slices.Contains(l.Healed, "leave") &&
			(slices.Contains(l.Found, "out of the ring") || slices.Contains(l.Found, "leaving the ring, UL"))
	}) {
		t.Errorf("the next run's history names no heal of %s's leave: %+v", moved, found)
	}
	m.startingRing(ctx, "after the next run")
	if ps := processesOf(t, store); len(ps) > 0 {
		t.Errorf("processes of the runs left: %v", ps)
	}
}

// mover kills runs inside membership windows on c.
type mover struct {
	*killer
	c      *cluster.Cluster
	killed time.Time // the last kill
}

// killInside starts a run whose only fault kind is kind and SIGKILLs it
// once the ring shows the movement under way (inside says so, and what it
// saw); the run's own flags (killer.start) are overridden by the later
// ones (the flag package keeps the last).
func (m *mover) killInside(ctx context.Context, kind string, seed int64, inside func(map[string]string) (string, bool)) *run {
	t := m.t
	t.Helper()
	r := m.start(kind, seed, "--nemesis", kind, "--time", "5m", "--interval", "3s")
	// The ring is read from the run's start: a bootstrap shows UJ for
	// seconds, a decommission UL, and a fixed sleep would miss them.
	wctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	var saw string
	for {
		select {
		case <-r.done:
			t.Fatalf("%s: the run ended before its movement was seen: %s", kind, r.stderr())
		case <-wctx.Done():
			_ = r.cmd.Process.Signal(syscall.SIGKILL)
			t.Fatalf("%s: no movement seen in the ring: %s", kind, r.stderr())
		default:
		}
		ring, err := m.c.Ring(wctx)
		if err == nil {
			var ok bool
			if saw, ok = inside(ring); ok {
				break
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("%s: kill: %v", kind, err)
	}
	m.killed = time.Now()
	r.wait()
	if ws, ok := r.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("%s: the run exited by itself (%v) before the kill: %s", kind, r.err, r.stderr())
	}
	ring, _ := m.c.Ring(ctx)
	t.Logf("%s: killed the run with %s in the ring's view; the ring then %v", kind, saw, ring)
	if h := m.holder(); h != "nobody" {
		t.Errorf("%s: the killed run still holds the cluster: %s", kind, h)
	}
	return r
}

// checkHistory: the killed run's history is readable and `lockcheck
// check` on it gives a verdict (valid, invalid or unknown), never bad
// input or a crash.
func (m *mover) checkHistory(r *run) {
	m.t.Helper()
	r.checkStored()
	d := r.runDir()
	if d == "" {
		m.t.Errorf("the killed run named no run directory: %s", r.stderr())
		return
	}
	out, err := exec.Command(m.bin, "check", filepath.Join(d, "history.jsonl")).CombinedOutput()
	var ee *exec.ExitError
	code := 0
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		m.t.Fatal(err)
	}
	if code == 2 || code < 0 || strings.Contains(string(out), "panic") {
		m.t.Errorf("lockcheck check on the killed run's history: exit %d: %s", code, out)
	}
	m.t.Logf("lockcheck check on the killed run's history: exit %d: %s", code, firstLine(string(out)))
}

// startingRing asserts the ring is the one the cluster started with (the
// members UN, the spare out of it and stopped, no node faulted, as
// `cluster status` shows it) and that a Paxos write goes through.
func (m *mover) startingRing(ctx context.Context, step string) {
	t := m.t
	t.Helper()
	want := map[string]string{"n1": "UN", "n2": "UN", "n3": "UN"}
	if ring, err := m.c.Ring(ctx); err != nil || !maps.Equal(ring, want) {
		t.Errorf("%s: ring %v (%v), want %v", step, ring, err, want)
	}
	if st := m.statusOf("n4"); st.state != "spare" || st.container == "running" {
		t.Errorf("%s: status has n4 %+v, want a spare, stopped", step, st)
	}
	if fs := m.nodeFaults(); len(fs) > 0 {
		t.Errorf("%s: faults %v", step, fs)
	}
	s, err := m.c.Session(ctx)
	if err != nil {
		t.Fatalf("%s: session: %v", step, err)
	}
	defer s.Close()
	if err := s.Query(`CREATE TABLE IF NOT EXISTS killmove (k text PRIMARY KEY, v text)`).WithContext(ctx).Exec(); err != nil {
		t.Fatalf("%s: create table: %v", step, err)
	}
	applied, err := s.Query(`INSERT INTO killmove (k, v) VALUES (?, ?) IF NOT EXISTS`, step, step).
		SerialConsistency(gocql.Serial).Consistency(gocql.Quorum).WithContext(ctx).MapScanCAS(map[string]any{})
	if err != nil || !applied {
		t.Errorf("%s: a Paxos write: applied %v, %v", step, applied, err)
	}
}

type nodeStatus struct{ state, container, faults string }

// statusOf reads node's line of `lockcheck cluster status` (name, IP, DC,
// state, version, container, faults).
func (m *mover) statusOf(node string) nodeStatus {
	for _, l := range m.status() {
		f := strings.Fields(l)
		if len(f) >= 7 && f[0] == node {
			return nodeStatus{state: f[3], container: f[5], faults: strings.Join(f[6:], " ")}
		}
	}
	m.t.Errorf("cluster status names no %s: %q", node, m.status())
	return nodeStatus{}
}

// since is the time from begin to end, "never" when end did not come.
func since(begin, end time.Time) string {
	if end.IsZero() {
		return "never"
	}
	return end.Sub(begin).Round(time.Second).String()
}

func orElse(s, ifEmpty string) string {
	if s == "" {
		return ifEmpty
	}
	return s
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
