//go:build jepsen

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/cluster/clustertest"
	"github.com/lockcheck/lockcheck/history"
)

// The phases of a run a SIGKILL lands in, each found by the line (on the
// run's stderr) that starts it; "report" is the moment results.json exists
// and report.html is being written.
// maxDelay bounds the seeded delay after the marker (about the phase's
// length with the runs below).
var killPhases = []struct {
	name, marker string
	maxDelay     time.Duration
}{
	{"set-up", "", 4 * time.Second},
	{"faults", " ops/s ", 500 * time.Millisecond},
	{"heal", `msg=healing`, 300 * time.Millisecond},
	{"quiet", `msg="quiet phase"`, time.Second},
	{"final reads", `msg="final reads"`, 200 * time.Millisecond},
	{"check", `msg=checking`, 3 * time.Millisecond},
	{"report", "", 0},
}

// TestHarnessKilled kills `lockcheck run` with SIGKILL at seeded random
// moments across its phases, then runs again, on a 1-node cluster of its
// own ($LOCKCHECK_KILL_CLUSTER attaches to a running one instead):
//
//   - every fault a killed run left on the node is healed by the next run
//     that gets that far, and recorded in its history (heal-leftover);
//   - every killed run's history is readable and its stored verdict honest:
//     absent, unknown, or a complete run's (its history has the phases line);
//   - the dead holder never holds the cluster;
//   - at the end nothing is left: no fault on the node, no holder, no
//     process of the runs, no container or network beyond the cluster's;
//   - two concurrent runs are serialised: --no-wait refuses naming the
//     holder, a waiting run starts after the first one healed, and neither
//     heals the other's faults.
//
// 20 moments with LOCKCHECK_FULL=1 (about 8 minutes here), every phase in
// turn; 5 otherwise, in the phases whose leftovers differ (quiet and check
// leave what heal and final reads do), to keep make test's second stream
// short.
func TestHarnessKilled(t *testing.T) {
	moments, phases := 5, []int{0, 1, 2, 4, 6}
	if os.Getenv("LOCKCHECK_FULL") == "1" {
		moments, phases = 20, nil
	}
	if s := os.Getenv("LOCKCHECK_KILL_MOMENTS"); s != "" {
		moments, _ = strconv.Atoi(s)
	}
	// Built before the cluster's turn (clustertest.OwnTurn), not while
	// holding it.
	bin := filepath.Join(t.TempDir(), "lockcheck")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	name := os.Getenv("LOCKCHECK_KILL_CLUSTER")
	if name == "" {
		c := clustertest.Start(t, "kill", cluster.WithNodes(1))
		name = c.Name()
	}
	store := filepath.Join(t.TempDir(), "store")
	containers, networks := containersBut(t, name), dockerNames(t, "network", "ls")
	faketime := tempEntries(t, "lockcheck-faketime-")

	k := &killer{t: t, bin: bin, cluster: name, store: store}
	rng := rand.New(rand.NewPCG(24, 24))
	hit := map[string]int{}
	leftovers, recorded := 0, 0
	// pending: nodes a killed run left faulted that no run has healed yet.
	pending := map[string][]string{}
	for i := range moments {
		phase := killPhases[i%len(killPhases)]
		if phases != nil {
			phase = killPhases[phases[i%len(phases)]]
		}
		var delay time.Duration
		if phase.maxDelay > 0 {
			delay = time.Duration(rng.Int64N(int64(phase.maxDelay)))
		}
		r := k.start(fmt.Sprintf("kill%02d", i), int64(1000+i))
		landed := r.killAt(phase.name, phase.marker, delay)
		healed := r.healedLeftovers()
		for n := range healed {
			if _, ok := pending[n]; !ok {
				t.Errorf("moment %d: run healed %s, which no killed run left faulted", i, n)
			}
			delete(pending, n)
			recorded++
		}
		if landed == "" {
			t.Logf("moment %d (%s + %v): the run ended before the kill", i, phase.name, delay)
			if len(pending) > 0 && r.reachedFaults() {
				t.Errorf("moment %d: a run that ran to its end left %v unhealed", i, pending)
			}
			continue
		}
		hit[landed]++
		r.checkStored()
		// What is on the node now is what the next run must heal (the
		// killed run may have healed earlier leftovers itself).
		pending = k.nodeFaults()
		if len(pending) > 0 {
			leftovers++
		}
		t.Logf("moment %d: killed in %s (aimed at %s + %v); left on the nodes: %v", i, landed, phase.name, delay.Round(time.Millisecond), pending)
		if h := k.holder(); h != "nobody" {
			t.Errorf("moment %d: the killed run still holds the cluster: %s", i, h)
		}
	}
	// A last whole run heals what the last kill left and records it.
	r := k.start("after", 99)
	r.wait()
	for n := range r.healedLeftovers() {
		delete(pending, n)
		recorded++
	}
	if len(pending) > 0 {
		t.Errorf("left unhealed after a whole run: %v", pending)
	}
	if v := r.verdict(); v != checker.Valid {
		t.Errorf("the run after the kills: verdict %q (stderr %s)", v, r.stderr())
	}

	k.concurrent()

	// Nothing leaked.
	if fs := k.nodeFaults(); len(fs) > 0 {
		t.Errorf("faults left on the nodes: %v", fs)
	}
	if h := k.holder(); h != "nobody" {
		t.Errorf("cluster still held by %s", h)
	}
	leaks := 0
	if ps := processesOf(t, store); len(ps) > 0 {
		leaks += len(ps)
		t.Errorf("processes of the runs left: %v", ps)
	}
	if now := containersBut(t, name); !subset(now, containers) {
		leaks++
		t.Errorf("containers now %v, before %v", now, containers)
	}
	if now := dockerNames(t, "network", "ls"); !subset(now, networks) {
		leaks++
		t.Errorf("networks now %v, before %v", now, networks)
	}
	if now := tempEntries(t, "lockcheck-faketime-"); len(now) > len(faketime) {
		leaks++
		t.Errorf("clock directories now %v, before %v", now, faketime)
	}
	t.Logf("moments tried %d, kills landed by phase %v, kills that left faults on the node %d, leftover heals recorded %d, leaks %d",
		moments, hit, leftovers, recorded, leaks)
}

type killer struct {
	t                   *testing.T
	bin, cluster, store string
}

// run is one `lockcheck run` in progress.
type run struct {
	k     *killer
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
	seen  chan string // each stderr line as it comes
	done  chan struct{}
	dir   string
	err   error
}

func (k *killer) start(name string, seed int64, extra ...string) *run {
	k.t.Helper()
	args := append([]string{"run", "--cluster", k.cluster, "--lock", "lease-fenced", "--nemesis", "pause,clock,partition",
		"--time", "6s", "--interval", "1500ms", "--quiet", "1s", "--ttl", "2s", "--clients", "3",
		"--seed", strconv.FormatInt(seed, 10), "--store", k.store}, extra...)
	cmd := exec.Command(k.bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		k.t.Fatal(err)
	}
	r := &run{k: k, cmd: cmd, seen: make(chan string, 4096), done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		k.t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			r.mu.Lock()
			r.lines = append(r.lines, sc.Text())
			r.mu.Unlock()
			select {
			case r.seen <- sc.Text():
			default:
			}
		}
		r.err = cmd.Wait()
		close(r.seen)
		close(r.done)
	}()
	return r
}

func (r *run) wait() { <-r.done }

func (r *run) stderr() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.lines, "\n")
}

// killAt sends SIGKILL delay after the marker line (set-up: after the
// start; report: once results.json exists) and returns the phase the run
// was in, by the last marker it printed; "" when it ended first.
func (r *run) killAt(phase, marker string, delay time.Duration) string {
	r.k.t.Helper()
	switch phase {
	case "set-up":
	case "report":
		// results.json is written by the check, report.html after it.
		for r.resultsAt() == "" {
			select {
			case <-r.done:
				return ""
			case <-time.After(time.Millisecond):
			}
		}
		delay = 0
	default:
		found := false
		for l := range r.seen {
			// Faults: aimed at a window open (the progress line's faults
			// column names it), the moment that leaves a fault behind.
			if strings.Contains(l, marker) && (phase != "faults" || activeFault(l)) {
				found = true
				break
			}
		}
		if !found {
			<-r.done
			return ""
		}
	}
	select {
	case <-r.done:
		return ""
	case <-time.After(delay):
	}
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return ""
	}
	<-r.done
	if ws, ok := r.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		return "" // it exited by itself first
	}
	if r.resultsAt() != "" {
		return "report"
	}
	// The furthest phase whose line came (progress lines go on through
	// the heal and the quiet phase).
	last := 0
	for _, l := range strings.Split(r.stderr(), "\n") {
		for i, p := range killPhases {
			if p.marker != "" && strings.Contains(l, p.marker) {
				last = max(last, i)
			}
		}
	}
	return killPhases[last].name
}

// activeFault tells whether a progress line ("  3s  120 ops/s  ok 5 fail
// 0 info 0  faults pause  overlaps 0") shows a fault window open.
func activeFault(l string) bool {
	_, rest, ok := strings.Cut(l, "  faults ")
	return ok && !strings.HasPrefix(rest, "-")
}

// runDir is the run's directory.
func (r *run) runDir() string {
	if r.dir != "" {
		return r.dir
	}
	// The run says it once it made it (`msg="run started" dir=...`); a run
	// killed before has none.
	for _, l := range strings.Split(r.stderr(), "\n") {
		if i := strings.Index(l, " dir="); i >= 0 && strings.Contains(l, `msg="run started"`) {
			r.dir = strings.Fields(l[i+5:])[0]
			return r.dir
		}
	}
	return ""
}

func (r *run) resultsAt() string {
	d := r.runDir()
	if d == "" {
		return ""
	}
	p := filepath.Join(d, "results.json")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return ""
}

// historyOps reads the run's history as `lockcheck check` would.
func (r *run) historyOps() []history.Op {
	d := r.runDir()
	if d == "" {
		return nil
	}
	ops, err := history.ReadFile(filepath.Join(d, "history.jsonl"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		r.k.t.Errorf("%s: history not readable: %v", d, err)
	}
	return ops
}

// healedLeftovers are the nodes the run's history says it healed before it
// started, with what it found.
func (r *run) healedLeftovers() map[string][]string {
	out := map[string][]string{}
	for _, op := range r.historyOps() {
		if op.F == history.FHealLeftover {
			var l history.HealLeftover
			if json.Unmarshal(op.Value, &l) == nil {
				out[l.Node] = l.Healed
			}
		}
	}
	return out
}

func (r *run) reachedFaults() bool { return strings.Contains(r.stderr(), " ops/s ") }

// checkStored: a killed run's stored verdict is absent, or unknown, or (the
// kill came while the report was written) the verdict of a run that
// reached its end; its history is readable whatever the moment.
func (r *run) checkStored() {
	d := r.runDir()
	if d == "" || !strings.HasPrefix(d, r.k.store) {
		return // killed before its run directory existed
	}
	ops := r.historyOps()
	complete := slices.ContainsFunc(ops, func(op history.Op) bool { return op.F == history.FPhases })
	if _, err := checker.CheckFile(context.Background(), filepath.Join(d, "history.jsonl")); err != nil && !errors.Is(err, os.ErrNotExist) {
		r.k.t.Errorf("%s: lockcheck check cannot read the killed run's history: %v", d, err)
	}
	b, err := os.ReadFile(filepath.Join(d, "results.json"))
	if err != nil {
		return
	}
	var res checker.Result
	if err := json.Unmarshal(b, &res); err != nil {
		r.k.t.Errorf("%s: results.json torn by the kill: %v", d, err)
		return
	}
	if res.Verdict == checker.Valid && !complete {
		r.k.t.Errorf("%s: a killed run stored valid over a history that did not reach its end", d)
	}
}

func (r *run) verdict() checker.Verdict {
	b, err := os.ReadFile(filepath.Join(r.runDir(), "results.json"))
	if err != nil {
		return ""
	}
	var res checker.Result
	_ = json.Unmarshal(b, &res)
	return res.Verdict
}

func (r *run) exitCode() int {
	if r.cmd.ProcessState == nil {
		return -1
	}
	return r.cmd.ProcessState.ExitCode()
}

// nodeFaults reads `lockcheck cluster status`: node -> faults, the last
// column (after name, IP, DC, state, version and container).
func (k *killer) nodeFaults() map[string][]string {
	const faultsCol = 6
	out := map[string][]string{}
	for _, l := range k.status() {
		f := strings.Fields(l)
		if len(f) <= faultsCol || !strings.HasPrefix(f[0], "n") {
			continue
		}
		if rest := strings.Join(f[faultsCol:], " "); rest != "-" {
			out[f[0]] = strings.Split(rest, ", ")
		}
	}
	return out
}

func (k *killer) holder() string {
	for _, l := range k.status() {
		if h, ok := strings.CutPrefix(l, "held by: "); ok {
			return h
		}
	}
	return "?"
}

func (k *killer) status() []string {
	out, err := exec.Command(k.bin, "cluster", "status", "--name", k.cluster).CombinedOutput()
	if err != nil {
		k.t.Fatalf("cluster status: %v: %s", err, out)
	}
	return strings.Split(string(out), "\n")
}

// concurrent: a second run while one holds the cluster refuses with
// --no-wait (exit 2, naming the holder) and otherwise waits, starting only
// after the first healed; neither records a heal of the other's faults.
func (k *killer) concurrent() {
	t := k.t
	a := k.start("first", 201)
	for l := range a.seen {
		if strings.Contains(l, " ops/s ") { // it holds the cluster and faults it
			break
		}
	}
	pid := strconv.Itoa(a.cmd.Process.Pid)
	b := k.start("refused", 202, "--no-wait")
	b.wait()
	if b.exitCode() != 2 || !strings.Contains(b.stderr(), "in use by pid "+pid) {
		t.Errorf("--no-wait while held: exit %d, stderr %q; want 2 naming pid %s", b.exitCode(), b.stderr(), pid)
	}
	c := k.start("waiting", 203)
	a.wait()
	c.wait()
	if n := strings.Count(c.stderr(), "is in use by pid "+pid); n != 1 {
		t.Errorf("the waiting run named the holder %d times: %q", n, c.stderr())
	}
	if h := c.healedLeftovers(); len(h) > 0 {
		t.Errorf("the waiting run healed %v: the first run's faults, which it must never touch", h)
	}
	for _, r := range []*run{a, c} {
		if v := r.verdict(); v != checker.Valid || r.exitCode() != 0 {
			t.Errorf("%s: verdict %q, exit %d: %s", r.runDir(), v, r.exitCode(), r.stderr())
		}
	}
	// The waiting run's directory is made once it holds the cluster, after
	// the first run healed: its name (the start, to the second) is not
	// before the first's start plus its faults and heal.
	at := func(r *run) time.Time {
		ts, _ := time.Parse("20060102T150405", strings.SplitN(filepath.Base(r.runDir()), "-", 2)[0])
		return ts
	}
	var ph history.RunPhases
	for _, op := range a.historyOps() {
		if op.F == history.FPhases {
			_ = json.Unmarshal(op.Value, &ph)
		}
	}
	if first := at(a).Add(time.Duration(ph.FaultsMS+ph.HealMS)*time.Millisecond - time.Second); at(c).Before(first) {
		t.Errorf("the waiting run started at %v, before the first one healed (%v)", at(c), first)
	}
}

func dockerNames(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("docker", append(args, "--format", "{{.Name}}")...).Output()
	if err != nil {
		t.Fatalf("docker %v: %v", args, err)
	}
	names := strings.Fields(string(out))
	slices.Sort(names)
	return names
}

// containersBut lists the names of every container except the helper
// containers of lockcheck clusters other than cluster: make test's other
// stream faults the shared cluster meanwhile, and its helpers come and go.
func containersBut(t *testing.T, cluster string) []string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-a", "--format",
		`{{.Names}}\t{{.Label "io.lockcheck.cluster"}}\t{{.Label "io.lockcheck.helper"}}`).Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(l, "\t")
		if f[0] == "" || len(f) == 3 && f[2] != "" && f[1] != cluster {
			continue
		}
		names = append(names, f[0])
	}
	slices.Sort(names)
	return names
}

func subset(now, before []string) bool {
	for _, n := range now {
		if !slices.Contains(before, n) {
			return false
		}
	}
	return true
}

func tempEntries(t *testing.T, prefix string) []string {
	t.Helper()
	ents, _ := os.ReadDir(os.TempDir())
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

// processesOf lists live processes whose command line names the store.
func processesOf(t *testing.T, store string) []string {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), store) {
			out = append(out, e.Name()+" "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}
