package nemesis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/faultcap"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/netshape"
)

// fakeNode keeps the state the real node would have.
type fakeNode struct {
	mu     sync.Mutex
	name   string
	chains map[string][]string // lockcheck's iptables chains -> their rules
	jumps  []string            // INPUT's jumps, in order
	others []string            // rules of INPUT that lockcheck did not add
	paused bool
	// freezerFails: docker pause fails ("unable to freeze"), as the
	// cgroup freezer does on a busy machine.
	freezerFails bool
	stopped      bool
	killed       bool
	// stopsAtChange: the container stops as lockcheck's next iptables
	// change begins (a leaver's, as its decommission ends): that exec fails
	// as runc's does, and State says "exited" from then on.
	stopsAtChange bool
	// jvmDown: a host over SSH whose Cassandra is not running: State says
	// "exited" while the host runs commands and keeps its rules.
	jvmDown bool
	offset  time.Duration
	calls   []string
	// paxosLive and paxosFile are the node's Paxos variant running and
	// in its configuration (paxos-upgrade); "": v1.
	paxosLive, paxosFile string
	// purgeLive and purgeFile are its paxos_state_purging running and in
	// its configuration; "": legacy.
	purgeLive, purgeFile string
	// paxosFails: the node's variant cannot be switched.
	paxosFails bool
	// lazy: the node's data lives on a lazy filesystem holding unsynced
	// bytes; a power cut drops them.
	lazy     bool
	unsynced int64
	lacks    []Capability // capabilities the node does not declare
	// shape is the node's shaping (Shape), the zero Shape when none.
	shape netshape.Shape
	// cpu is the node's CPU quota (slow-node; 0: none), disk its disk's
	// latency (slow-disk).
	cpu  float64
	disk time.Duration
	// ring is the ring the node belongs to (membership kinds).
	ring *fakeRing
	// data is the node's data, a version every write bumps; snaps its
	// snapshots (tag -> data then); restoring a restore's marker
	// (restore_test.go).
	data      int
	snaps     map[string]int
	restoring string
	// maint is the node's tables as maintenance sees them
	// (maintenance_test.go).
	maint fakeMaint
}

// fakeRing is the membership of fake nodes: name -> state, and the
// starting members.
type fakeRing struct {
	mu    sync.Mutex
	state map[string]string
	start map[string]string
	moves []string // "join n4", "decommission n4", ...
	// fail are movements ("join n4") that fail once as a kill fails them:
	// the node is left joining (UJ) or leaving (UL).
	fail map[string]bool
	// stuck: Finish fails too (the heal is left to ResetMembership).
	stuck bool
	// slow are movements ("join n4") that stream for so long before they
	// are done, as a bootstrap streams on a loaded machine.
	slow map[string]time.Duration
}

func newFakeRing(members ...string) *fakeRing {
	r := &fakeRing{state: map[string]string{}, start: map[string]string{}}
	for _, m := range members {
		r.state[m], r.start[m] = "UN", "UN"
	}
	return r
}

func (r *fakeRing) move(what, node string, in bool) error {
	r.mu.Lock()
	d := r.slow[what+" "+node]
	r.mu.Unlock()
	time.Sleep(d) // streaming, the ring unlocked
	r.mu.Lock()
	defer r.mu.Unlock()
	r.moves = append(r.moves, what+" "+node)
	if r.fail[what+" "+node] {
		delete(r.fail, what+" "+node)
		r.state[node] = map[bool]string{true: "UJ", false: "UL"}[in]
		return fmt.Errorf("%s %s: streaming failed", what, node)
	}
	if in {
		r.state[node] = "UN"
	} else {
		delete(r.state, node)
	}
	return nil
}

func (f *fakeNode) Ring(context.Context) (map[string]string, error) {
	f.ring.mu.Lock()
	defer f.ring.mu.Unlock()
	return maps.Clone(f.ring.state), nil
}
func (f *fakeNode) Join(context.Context) error { return f.ring.move("join", f.name, true) }
func (f *fakeNode) Decommission(context.Context) error {
	return f.ring.move("decommission", f.name, false)
}
func (f *fakeNode) Replace(context.Context) error { return f.ring.move("replace", f.name, true) }
func (f *fakeNode) Remove(context.Context) error  { return f.ring.move("remove", f.name, false) }

// WaitWhole brings back a node the test left down, as the kill's restart
// would, and notes the wait.
func (f *fakeNode) WaitWhole(context.Context) error {
	f.ring.mu.Lock()
	defer f.ring.mu.Unlock()
	for _, n := range slices.Sorted(maps.Keys(f.ring.state)) {
		if n != f.name && f.ring.state[n] == "DN" {
			f.ring.moves = append(f.ring.moves, "wait "+n)
			f.ring.state[n] = "UN"
		}
	}
	return nil
}
func (f *fakeNode) Finish(_ context.Context, in bool) (string, error) {
	f.ring.mu.Lock()
	defer f.ring.mu.Unlock()
	how := map[bool]string{true: "nodetool bootstrap resume", false: "nodetool decommission again"}[in]
	f.ring.moves = append(f.ring.moves, "finish "+f.name)
	if f.ring.stuck {
		return how, errors.New("still streaming")
	}
	if in {
		f.ring.state[f.name] = "UN"
	} else {
		delete(f.ring.state, f.name)
	}
	return how, nil
}
func (f *fakeNode) ResetMembership(context.Context) (bool, error) {
	f.ring.mu.Lock()
	defer f.ring.mu.Unlock()
	if maps.Equal(f.ring.state, f.ring.start) {
		return false, nil
	}
	f.ring.state = maps.Clone(f.ring.start)
	f.ring.moves = append(f.ring.moves, "reset")
	return true, nil
}

var errDead = errors.New("container not running")

func (f *fakeNode) Exec(ctx context.Context, cmd ...string) (string, error) {
	return f.exec(cmd, false)
}

// NetExec reaches a paused node's rules, as cluster.Node's does from a
// helper container in its network namespace.
func (f *fakeNode) NetExec(ctx context.Context, cmd ...string) (string, error) {
	if cmd[0] != "iptables" {
		return "", fmt.Errorf("NetExec of %q", cmd)
	}
	return f.exec(cmd, true)
}

func (f *fakeNode) exec(cmd []string, throughPause bool) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, strings.Join(cmd, " "))
	if f.killed {
		return "", errDead
	}
	if f.paused && !throughPause {
		return "", errors.New("container is paused")
	}
	if len(cmd) >= 3 && cmd[0] == "ps" {
		if f.stopped {
			return "Tl\n", nil
		}
		return "Sl\n", nil
	}
	if len(cmd) >= 2 && cmd[0] == "cat" {
		return fmt.Sprintf("%+.6f\n", f.offset.Seconds()), nil
	}
	if len(cmd) < 3 || cmd[0] != "iptables" || cmd[1] != "-w" {
		return "", fmt.Errorf("unexpected command %q", cmd)
	}
	if f.stopsAtChange && cmd[2] != "-S" {
		f.killed = true
		return "", errors.New("exited 126: OCI runtime exec failed: exec failed: unable to start container process: error writing config to pipe: write init-p: broken pipe")
	}
	if f.chains == nil {
		f.chains = map[string][]string{}
	}
	args := cmd[2:]
	_, exists := f.chains[safeIdx(args, 1)]
	switch {
	case args[0] == "-S":
		out := "-P INPUT ACCEPT\n"
		for c := range f.chains {
			out += "-N " + c + "\n"
		}
		return out, nil
	case args[0] == "-N" && !exists:
		f.chains[args[1]] = nil
	case args[0] == "-I" && args[1] == "INPUT" && args[2] == "-j":
		f.jumps = append(f.jumps, args[3])
	case args[0] == "-A" && args[1] == "INPUT":
		f.others = append(f.others, strings.Join(args[2:], " "))
	case args[0] == "-A" && exists:
		f.chains[args[1]] = append(f.chains[args[1]], strings.Join(args[2:], " "))
	case args[0] == "-F" && exists:
		f.chains[args[1]] = nil
	case args[0] == "-D" && args[1] == "INPUT" && slices.Contains(f.jumps, args[3]):
		f.jumps = slices.Delete(f.jumps, slices.Index(f.jumps, args[3]), slices.Index(f.jumps, args[3])+1)
	case args[0] == "-X" && exists && len(f.chains[args[1]]) == 0 && !slices.Contains(f.jumps, args[1]):
		delete(f.chains, args[1])
	default:
		return "", fmt.Errorf("iptables %q: bad state (chains %v, jumps %v)", args, f.chains, f.jumps)
	}
	return "", nil
}

func safeIdx(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return ""
}

// rules are the rules of lockcheck's chains.
func (f *fakeNode) rules() []string {
	var out []string
	for c, rs := range f.chains {
		for _, r := range rs {
			out = append(out, c+": "+r)
		}
	}
	return out
}

func (f *fakeNode) set(call string, ok bool, apply func()) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
	if !ok {
		return fmt.Errorf("%s on %s: bad state", call, f.name)
	}
	apply()
	return nil
}

// Shape and Unshape are the node's kernel shaping its links: a killed
// container takes no shaping, and a restarted one starts without.
func (f *fakeNode) Shape(ctx context.Context, s netshape.Shape) error {
	if err := s.Validate(); err != nil {
		return err
	}
	return f.set(fmt.Sprintf("shape %v", s), !f.killed, func() { f.shape = s })
}
func (f *fakeNode) Unshape(ctx context.Context) (bool, error) {
	var found bool
	err := f.set("unshape", !f.killed, func() { found, f.shape = len(f.shape.Peers) > 0, netshape.Shape{} })
	return found, err
}

func (f *fakeNode) Pause(ctx context.Context) error {
	return f.set("pause", !f.paused && !f.killed && !f.freezerFails, func() { f.paused = true })
}
func (f *fakeNode) Unpause(ctx context.Context) error {
	return f.set("unpause", f.paused, func() { f.paused = false })
}
func (f *fakeNode) SignalJVM(ctx context.Context, sig string) error {
	return f.set("signal "+sig, !f.killed && !f.paused, func() { f.stopped = sig == "STOP" }) // an exec, which Docker refuses while paused
}
func (f *fakeNode) Kill(ctx context.Context) error {
	return f.set("kill", !f.killed, func() { f.killed = true })
}
func (f *fakeNode) PowerOff(ctx context.Context) error {
	return f.set("power off", !f.killed, func() { f.killed, f.unsynced = true, 0 })
}

// Capabilities are a Docker node's: power only on a lazy filesystem,
// less what a test takes away.
func (f *fakeNode) Capabilities() []Capability {
	// Every capability there is (a new kind's too: its action is a method
	// of the fake's), but for a lazy filesystem's and a spare's, which the
	// fake has only when set up with them.
	caps := slices.DeleteFunc(faultcap.All(), func(c Capability) bool {
		return !f.lazy && (c == CapPower || c == CapDiskLatency) || f.ring == nil && c == CapMembership
	})
	return slices.DeleteFunc(caps, func(c Capability) bool { return slices.Contains(f.lacks, c) })
}
func (f *fakeNode) Unsynced(ctx context.Context) (int64, int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.killed {
		return 0, 0, errDead
	}
	return f.unsynced, 1, nil
}
func (f *fakeNode) Restart(ctx context.Context) error {
	// A restarted container starts with fresh iptables rules.
	return f.set("restart", true, func() {
		f.killed, f.chains, f.jumps, f.others, f.paused, f.stopped, f.shape = false, nil, nil, nil, false, false, netshape.Shape{}
	})
}
func (f *fakeNode) SetClockOffset(ctx context.Context, d time.Duration) error {
	return f.set("clock "+d.String(), !f.killed, func() { f.offset = d })
}

func (f *fakeNode) ClockOffset(ctx context.Context) (time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.killed {
		return 0, errDead
	}
	return f.offset, nil
}
func (f *fakeNode) State(ctx context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.killed, f.jvmDown:
		return "exited", nil
	case f.paused:
		return "paused", nil
	}
	return "running", nil
}

func (f *fakeNode) healthy() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.paused || f.stopped || f.killed || f.offset != 0 || len(f.chains) > 0 || len(f.jumps) > 0 {
		return fmt.Errorf("%s not healed: paused=%v stopped=%v killed=%v offset=%v chains=%v jumps=%v",
			f.name, f.paused, f.stopped, f.killed, f.offset, f.chains, f.jumps)
	}
	return nil
}

type memRec struct {
	mu  sync.Mutex
	ops []history.Op
}

func (r *memRec) Append(op history.Op) (history.Op, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	op.Index = int64(len(r.ops))
	r.ops = append(r.ops, op)
	return op, nil
}

func (r *memRec) all() []history.Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ops)
}

func fakeCluster(n int) ([]Target, []*fakeNode) {
	var ts []Target
	var fs []*fakeNode
	for i := range n {
		f := &fakeNode{name: fmt.Sprintf("n%d", i+1), lazy: true, unsynced: 4096}
		fs = append(fs, f)
		ts = append(ts, Target{Name: f.name, IP: fmt.Sprintf("10.0.0.%d", i+2), Node: f})
	}
	return ts, fs
}

// fakeClients stands for the workload: client 0 holds a lock, and a pause
// is taken at once by it.
type fakeClients struct {
	mu     sync.Mutex
	n      int
	clocks map[int]time.Duration
	pauses int
	held   [][]int // the groups HoldAtRest was asked for
	kills  []fakeKill
}

func (c *fakeClients) Clients() int   { return c.n }
func (c *fakeClients) Holders() []int { return []int{0} }
func (c *fakeClients) PauseHolder(ctx context.Context, extra, stall time.Duration, resumed func()) (history.ClientPauseStart, <-chan struct{}, error) {
	c.mu.Lock()
	c.pauses++
	c.mu.Unlock()
	done := make(chan struct{})
	d := 10*time.Millisecond + extra
	if stall > 0 {
		d = stall
	}
	time.AfterFunc(d, func() {
		if resumed != nil {
			resumed()
		}
		close(done)
	})
	return history.ClientPauseStart{Client: 0, Process: 0, Lock: "l0", MS: d.Milliseconds()}, done, nil
}
func (c *fakeClients) SetClientClock(i int, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i < 0 || i >= c.n {
		return fmt.Errorf("no client %d", i)
	}
	c.clocks[i] = d
	return nil
}

func (c *fakeClients) SetClientClockAtRest(i int, d time.Duration, stepped func()) error {
	if err := c.SetClientClock(i, d); err != nil {
		return err
	}
	if stepped != nil {
		stepped()
	}
	return nil
}

// KillClient kills client 1 in the target asked (hold for any) at once and
// restarts it as process 1+4k after restart.
func (c *fakeClients) KillClient(ctx context.Context, client int, in string, restart, delay time.Duration,
	killed func(history.ClientKillStart) error, restarted func(history.ClientKillStop)) (history.ClientKillStart, <-chan struct{}, error) {
	c.mu.Lock()
	c.kills = append(c.kills, fakeKill{in: in, restart: restart, delay: delay})
	proc := 1 + 4*(len(c.kills)-1)
	c.mu.Unlock()
	if in == "" || in == KillTargetAny {
		in = KillTargetHold
	}
	v := history.ClientKillStart{Client: 1, InFlight: in, Lock: "l0", Process: proc, RestartMS: restart.Milliseconds()}
	if err := killed(v); err != nil {
		return v, nil, err
	}
	done := make(chan struct{})
	time.AfterFunc(restart, func() {
		restarted(history.ClientKillStop{Client: 1, DownMS: restart.Milliseconds(), Process: proc + 4})
		close(done)
	})
	return v, done, nil
}

type fakeKill struct {
	in             string
	restart, delay time.Duration
}

func (c *fakeClients) HoldAtRest(ctx context.Context, cs []int) (func(), error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = append(c.held, cs)
	return func() {}, nil
}

func TestParseKinds(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{"none", nil, false},
		{"", nil, false},
		{"all", []string{Partition, Pause, Kill, Clock, ClientPause, ClientClock, Loss, ClientGCStall}, false},
		{"power-loss,rack-power-loss", []string{PowerLoss, RackPowerLoss}, false},
		{"partition, kill,partition", []string{Partition, Kill}, false},
		{"client-pause", []string{ClientPause}, false},
		{"partition,gc", nil, true},
	}
	for _, tt := range tests {
		got, err := ParseKinds(tt.in)
		if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
			t.Errorf("ParseKinds(%q) = %v, %v; want %v, err %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

// hears reports whether node a receives from b under g.
func hears(g Grudge, a, b string) bool { return !slices.Contains(g[a], b) }

func TestPartitionGrudges(t *testing.T) {
	for _, n := range []int{3, 5} {
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("n%d", i+1)
		}
		seen := map[string]bool{}
		r := rand.New(rand.NewPCG(1, 2))
		for range 200 {
			kind, g := partitionGrudge(r, names, true)
			seen[kind] = true
			cut := 0
			for _, a := range names {
				cut += len(g[a])
				if slices.Contains(g[a], a) {
					t.Fatalf("%s: %s drops itself", kind, a)
				}
			}
			if cut == 0 {
				t.Fatalf("%s on %d nodes cuts nothing", kind, n)
			}
			switch kind {
			case "isolate":
				alone := 0
				for _, a := range names {
					if len(g[a]) == n-1 {
						alone++
					}
				}
				if alone != 1 {
					t.Errorf("isolate %v: %d nodes alone", g, alone)
				}
			case "halves":
				for _, a := range names {
					if l := len(g[a]); l != n/2 && l != n-n/2 {
						t.Errorf("halves %v: %s cut from %d", g, a, l)
					}
				}
			case "ring":
				for _, a := range names {
					heard := 0
					for _, b := range names {
						if hears(g, a, b) {
							heard++
						}
					}
					if heard != n/2+1 {
						t.Errorf("ring %v: %s hears %d nodes, want a bare majority %d", g, a, heard, n/2+1)
					}
				}
			case "bridge":
				bridges := 0
				for _, a := range names {
					if len(g[a]) == 0 {
						bridges++
					}
				}
				if bridges != 1 {
					t.Errorf("bridge %v: %d nodes cut from nobody, want 1", g, bridges)
				}
			case "clients":
				for _, a := range names {
					if len(g[a]) > 0 && !slices.Equal(g[a], []string{GatewayName}) {
						t.Errorf("clients %v: %s cut from nodes", g, a)
					}
				}
			}
		}
		for _, k := range []string{"isolate", "halves", "ring", "bridge", "clients"} {
			if !seen[k] {
				t.Errorf("%d nodes: partition %s never drawn", n, k)
			}
		}
	}
}

// schedule runs a nemesis over fake nodes and returns its lines.
func schedule(t *testing.T, seed int64, kinds []string, d time.Duration, opts ...Option) ([]history.Op, []*fakeNode, *fakeClients) {
	t.Helper()
	ts, fs := fakeCluster(3)
	ring := newFakeRing("n1", "n2", "n3")
	for i := range ts { // two data centres, for dc-partition; a ring with a spare
		ts[i].DC = []string{"dc1", "dc1", "dc2"}[i]
		fs[i].ring = ring
	}
	spare := &fakeNode{name: "n4", ring: ring}
	rec := &memRec{}
	cl := &fakeClients{n: 4, clocks: map[int]time.Duration{}}
	n, err := New(ts, rec, append([]Option{WithKinds(kinds...), WithSeed(seed), WithInterval(10 * time.Millisecond), WithSpares([]Target{{Name: "n4", IP: "10.0.0.5", Node: spare}}),
		WithGateway("10.0.0.1"), WithClients(cl), WithClientPauseExtra(time.Millisecond), WithPins(testPins)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := n.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Heal(context.Background()); err != nil {
		t.Fatal(err)
	}
	if a := n.Active(); len(a) > 0 {
		t.Errorf("active after heal: %v", a)
	}
	return rec.all(), fs, cl
}

func TestScheduleStartsStopsAndHeals(t *testing.T) {
	ops, fs, cl := scheduleEvery(t, 1, Kinds, 1500*time.Millisecond)
	open := map[string]bool{}
	starts := map[string]int{}
	for _, op := range ops {
		if op.Process != history.NemesisProcess || op.Type != history.Info {
			t.Fatalf("nemesis line %+v", op)
		}
		kind, isStart := strings.CutPrefix(op.F, "start-")
		if isStart {
			if open[kind] {
				t.Fatalf("%s started twice without a stop", kind)
			}
			open[kind] = true
			starts[kind]++
			continue
		}
		if kind, ok := strings.CutPrefix(op.F, "stop-"); ok {
			if !open[kind] {
				t.Fatalf("%s stopped but not started", kind)
			}
			open[kind] = false
		}
	}
	for k, o := range open {
		if o {
			t.Errorf("%s never stopped", k)
		}
	}
	for _, k := range Kinds {
		if starts[k] == 0 {
			t.Errorf("fault %s never started in %d lines", k, len(ops))
		}
	}
	// Dealt from a deck: no kind runs twice before every kind ran once.
	var order []string
	for _, op := range ops {
		if k, ok := strings.CutPrefix(op.F, "start-"); ok {
			order = append(order, k)
		}
	}
	for i := 0; i+len(Kinds) <= len(order); i += len(Kinds) {
		round := slices.Clone(order[i : i+len(Kinds)])
		slices.Sort(round)
		want := slices.Clone(Kinds)
		slices.Sort(want)
		if !slices.Equal(round, want) {
			t.Errorf("round %d of faults %v is not one of each kind", i/len(Kinds), order[i:i+len(Kinds)])
		}
		// The kinds that restart nodes close the round.
		slow := []string{Kill, PowerLoss, RackPowerLoss, Join, Leave, Replace, Remove, Restore, PaxosUpgrade}
		dealt := order[i : i+len(Kinds)]
		if first := slices.IndexFunc(dealt, func(k string) bool { return slices.Contains(slow, k) }); first >= 0 {
			if slices.ContainsFunc(dealt[first:], func(k string) bool { return !slices.Contains(slow, k) }) {
				t.Errorf("round %d of faults %v deals a quick kind after a restarting one", i/len(Kinds), dealt)
			}
		}
	}
	if last := ops[len(ops)-1]; last.F != "heal" {
		t.Errorf("last line %q, want heal", last.F)
	}
	for _, f := range fs {
		if err := f.healthy(); err != nil {
			t.Error(err)
		}
	}
	for c, d := range cl.clocks {
		if d != 0 {
			t.Errorf("client %d clock still %v", c, d)
		}
	}
}

// scheduleEvery is schedule in a window that starts at d and doubles, up to
// 16 times d, until every kind was dealt: the window is timed, and a busy
// machine deals fewer faults in it.
func scheduleEvery(t *testing.T, seed int64, kinds []string, d time.Duration, opts ...Option) ([]history.Op, []*fakeNode, *fakeClients) {
	t.Helper()
	for limit := 16 * d; ; d *= 2 {
		ops, fs, cl := schedule(t, seed, kinds, d, opts...)
		if dealtEvery(ops, kinds) || d >= limit {
			return ops, fs, cl
		}
		t.Logf("not every kind dealt in %v; growing the window", d)
	}
}

func dealtEvery(ops []history.Op, kinds []string) bool {
	started := map[string]bool{}
	for _, op := range ops {
		if k, ok := strings.CutPrefix(op.F, "start-"); ok {
			started[k] = true
		}
	}
	for _, k := range kinds {
		if !started[k] {
			return false
		}
	}
	return true
}

// Heal undoes faults whose stop never ran (the run was interrupted).
func TestHealAfterInterruptedFaults(t *testing.T) {
	ts, fs := fakeCluster(3)
	rec := &memRec{}
	n, err := New(ts, rec, WithKinds(Clock, Partition, Loss, Pause, Kill), WithGateway("10.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, k := range n.kinds {
		if _, err := k.Start(ctx, &n.env, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	broken := 0
	for _, f := range fs {
		if f.healthy() != nil {
			broken++
		}
	}
	if broken == 0 {
		t.Fatal("faults did nothing to the nodes")
	}
	if err := n.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		if err := f.healthy(); err != nil {
			t.Error(err)
		}
	}
}

func TestSameSeedSameSchedule(t *testing.T) {
	kinds := []string{Partition, Pause, Kill, Clock}
	starts := func(seed int64, d time.Duration) []string {
		ops, _, _ := schedule(t, seed, kinds, d)
		var out []string
		for _, op := range ops {
			if strings.HasPrefix(op.F, "start-") {
				out = append(out, fmt.Sprintf("%s %s %s", op.F, op.Node, op.Value))
			}
		}
		return out
	}
	// The runs are timed: on a busy machine a window deals fewer faults,
	// so it grows until every run dealt enough to compare.
	for d := 400 * time.Millisecond; ; d *= 4 {
		a, b, c := starts(9, d), starts(9, d), starts(10, d)
		n := min(len(a), len(b), 5)
		if n < 3 || len(c) < n {
			if d > 10*time.Second {
				t.Fatalf("only %d faults in %v", n, d)
			}
			continue
		}
		if !slices.Equal(a[:n], b[:n]) {
			t.Errorf("same seed, different schedules:\n%v\n%v", a[:n], b[:n])
		}
		if slices.Equal(a[:n], c[:n]) {
			t.Errorf("different seeds, same schedule %v", a[:n])
		}
		return
	}
}

// Client faults: a pause of the holder, and a contender's clock set behind
// by 1-30 s, or ahead by as much with WithClientSkewAhead.
func TestClientFaults(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ahead    bool
		min, max time.Duration
	}{
		{"behind", false, -30 * time.Second, -time.Second},
		{"ahead", true, time.Second, 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ops, _, cl := scheduleEvery(t, 3, []string{ClientPause, ClientClock}, 800*time.Millisecond, WithClientSkewAhead(tc.ahead))
			if cl.pauses == 0 {
				t.Error("no client pause armed")
			}
			skews := 0
			for _, op := range ops {
				if op.F != "start-"+ClientClock {
					continue
				}
				skews++
				var v struct {
					Client int
					Offset string
				}
				if err := json.Unmarshal(op.Value, &v); err != nil {
					t.Fatal(err)
				}
				if v.Client == 0 {
					t.Errorf("skewed the holder (client 0), not a contender")
				}
				d, err := time.ParseDuration(v.Offset)
				if err != nil || d < tc.min || d > tc.max {
					t.Errorf("client offset %q outside %v..%v", v.Offset, tc.min, tc.max)
				}
				if got := cl.clocks[v.Client]; got != 0 {
					t.Errorf("client %d's clock left at %v after the heal", v.Client, got)
				}
			}
			if skews == 0 {
				t.Error("no client clock skew")
			}
		})
	}
}

func TestNewRejects(t *testing.T) {
	ts, _ := fakeCluster(3)
	plain, fs := fakeCluster(3)
	fs[1].lazy = false
	tests := []struct {
		name    string
		targets []Target
		opts    []Option
	}{
		{"client fault without clients", ts, []Option{WithKinds(ClientPause)}},
		{"node fault without nodes", nil, []Option{WithKinds(Kill)}},
		{"unknown kind", ts, []Option{WithKinds("gc")}},
		{"zero interval", ts, []Option{WithInterval(0)}},
		{"power loss without a lazy filesystem", plain, []Option{WithKinds(PowerLoss)}},
		{"rack power loss without a lazy filesystem", plain, []Option{WithKinds(Partition, RackPowerLoss)}},
	}
	for _, tt := range tests {
		if _, err := New(tt.targets, &memRec{}, tt.opts...); err == nil {
			t.Errorf("%s: no error", tt.name)
		}
	}
}

// Loss adds statistic drops to its own chain only, within the probability
// bounds, and its stop and its reset remove the chain and leave every other
// rule of the node alone.
func TestLoss(t *testing.T) {
	ctx := context.Background()
	for seed := range int64(20) {
		ts, fs := fakeCluster(3)
		for _, f := range fs {
			if _, err := f.Exec(ctx, "iptables", "-w", "-A", "INPUT", "-p", "tcp", "--dport", "22", "-j", "ACCEPT"); err != nil {
				t.Fatal(err)
			}
		}
		rec := &memRec{}
		n, err := New(ts, rec, WithKinds(Loss), WithSeed(seed), WithGateway("10.0.0.1"), WithLoss(0.1, 0.3))
		if err != nil {
			t.Fatal(err)
		}
		stop, err := n.kinds[0].Start(ctx, &n.env, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var v lossDraw
		if err := json.Unmarshal(rec.all()[0].Value, &v); err != nil {
			t.Fatal(err)
		}
		if v.Probability < 0.1 || v.Probability > 0.3 || len(v.Drops) == 0 {
			t.Fatalf("seed %d: drawn %+v", seed, v)
		}
		lossy := 0
		for _, f := range fs {
			for _, r := range f.rules() {
				lossy++
				if !strings.HasPrefix(r, "LOCKCHECK-LOSS: -s ") || !strings.Contains(r, fmt.Sprintf("-m statistic --mode random --probability %.2f -j DROP", v.Probability)) {
					t.Errorf("seed %d: rule %q", seed, r)
				}
				if v.Mode == "clients" && !strings.Contains(r, "-s 10.0.0.1 ") {
					t.Errorf("seed %d: clients mode, rule %q", seed, r)
				}
			}
		}
		if lossy != len(v.Drops) {
			t.Errorf("seed %d: %d rules for drops %v", seed, lossy, v.Drops)
		}
		if seed%2 == 0 {
			err = stop(ctx)
		} else {
			_, err = resetAll(ctx, &n.env, n.kinds, ts)
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			if err := f.healthy(); err != nil {
				t.Error(err)
			}
			if len(f.others) != 1 {
				t.Errorf("seed %d: the node's own rules became %v", seed, f.others)
			}
		}
	}
}

// Reset finds what an earlier process left on a node, with no record of it.
func TestResetFindsLeftovers(t *testing.T) {
	ctx := context.Background()
	ts, fs := fakeCluster(3)
	// An earlier nemesis, then lost (its process killed).
	old, err := New(ts, &memRec{}, WithKinds(Partition, Loss, Clock, Pause, Kill), WithGateway("10.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range old.kinds {
		if _, err := k.Start(ctx, &old.env, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	rec := &memRec{}
	healed, err := HealLeftovers(ctx, ts, rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, l := range healed {
		for _, k := range l.Healed {
			got[k] = true
		}
	}
	if ops := rec.all(); len(ops) != len(healed) || len(ops) == 0 || ops[0].F != history.FHealLeftover {
		t.Errorf("recorded %+v for %d healed nodes", ops, len(healed))
	} else {
		var v history.HealLeftover
		if err := json.Unmarshal(ops[0].Value, &v); err != nil || v.Node == "" || len(v.Healed) == 0 {
			t.Errorf("heal-leftover value %s: %v", ops[0].Value, err)
		}
	}
	for _, k := range []string{Partition, Loss, Pause, Kill} {
		if !got[k] {
			t.Errorf("reset did not report %s (healed %v)", k, healed)
		}
	}
	for _, f := range fs {
		if err := f.healthy(); err != nil {
			t.Error(err)
		}
	}
	// A second heal finds nothing.
	if healed, err := HealLeftovers(ctx, ts, nil, nil); err != nil || len(healed) > 0 {
		t.Errorf("second reset: healed %v, err %v", healed, err)
	}
}

// A power cut records what each node held unsynced, cuts one node (rack:
// every node) and its stop starts them all again.
func TestPowerLoss(t *testing.T) {
	ctx := context.Background()
	for _, kind := range []string{PowerLoss, RackPowerLoss} {
		for seed := range int64(10) {
			ts, fs := fakeCluster(3)
			rec := &memRec{}
			n, err := New(ts, rec, WithKinds(kind), WithSeed(seed))
			if err != nil {
				t.Fatal(err)
			}
			stop, err := n.kinds[0].Start(ctx, &n.env, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			var cut []string
			for _, f := range fs {
				if f.killed {
					cut = append(cut, f.name)
				}
			}
			if want := map[string][2]int{PowerLoss: {1, 1}, RackPowerLoss: {3, 3}}[kind]; len(cut) < want[0] || len(cut) > want[1] {
				t.Fatalf("%s seed %d: cut %v", kind, seed, cut)
			}
			ops := rec.all()
			var v history.PowerStart
			if len(ops) != 1 || ops[0].Node != strings.Join(cut, ",") || json.Unmarshal(ops[0].Value, &v) != nil {
				t.Fatalf("%s seed %d: start lines %+v", kind, seed, ops)
			}
			for _, name := range cut {
				if v.UnsyncedBytes[name] != 4096 || v.UnsyncedFiles[name] != 1 {
					t.Errorf("%s seed %d: recorded %+v for %s", kind, seed, v, name)
				}
			}
			if err := stop(ctx); err != nil {
				t.Fatal(err)
			}
			for _, f := range fs {
				if f.killed {
					t.Errorf("%s seed %d: %s still down after stop", kind, seed, f.name)
				}
			}
		}
	}
}

// deadlineInjector starts a fault whose stop records how long its context
// gives it.
type deadlineInjector struct{ left time.Duration }

func (d *deadlineInjector) Start(context.Context, *Env, time.Duration) (Stop, error) {
	return func(ctx context.Context) error {
		if dl, ok := ctx.Deadline(); ok {
			d.left = time.Until(dl)
		}
		return nil
	}, nil
}

func (d *deadlineInjector) Reset(context.Context, *Env, Target) (bool, error) { return false, nil }

// A stop that restarts nodes is given longer than one that does not: a
// killed node of a slow-starting release must get back before the stop
// gives up, even when the run is over; a kind whose stop runs a whole
// procedure (paxos-upgrade's rolling restarts and repairs) gets its own
// bound.
func TestStopWaitsLongerForRestarts(t *testing.T) {
	ts, _ := fakeCluster(3)
	n, err := New(ts, &memRec{}, WithKinds(Partition))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		kind *Kind
		want time.Duration
	}{
		{"no restart", &Kind{Name: "test"}, 2 * time.Minute},
		{"restarts", &Kind{Name: "test", Restarts: true}, 6 * time.Minute},
		{"its own bound", &Kind{Name: "test", Restarts: true, StopWait: 16 * time.Minute}, 16 * time.Minute},
		{"paxos-upgrade", lookup(PaxosUpgrade), paxosUpgradeWait},
	}
	for _, tt := range tests {
		inj := &deadlineInjector{}
		k := fault{Kind: tt.kind, Injector: inj}
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // the run is over: the stop still gets its own time
		if _, err := n.deal(ctx, k, 0, nil); err != nil {
			t.Fatal(err)
		}
		if inj.left <= tt.want-time.Minute || inj.left > tt.want {
			t.Errorf("%s: the stop had %v, want about %v", tt.name, inj.left, tt.want)
		}
	}
}

// endingRun is a node on which the run ends (its context is cancelled)
// while the nemesis reads its unsynced counts or while it is cut, as when
// docker execs take seconds on a loaded machine.
type endingRun struct {
	*fakeNode
	inCounts, inCut func()
}

func (e endingRun) Unsynced(ctx context.Context) (int64, int, error) {
	e.inCounts()
	return e.fakeNode.Unsynced(ctx)
}

func (e endingRun) PowerOff(ctx context.Context) error {
	e.inCut()
	if err := ctx.Err(); err != nil {
		return err
	}
	return e.fakeNode.PowerOff(ctx)
}

// A cut the run's end interrupts is finished and recorded (its lost adds
// have a cause in the history); a run that ends before the cut cuts
// nothing and records nothing.
func TestRackPowerLossAtTheRunsEnd(t *testing.T) {
	for _, tc := range []struct {
		name      string
		endInCut  bool
		wantLines int
		wantCut   bool
	}{
		{"run ends while cutting", true, 1, true},
		{"run ends before the cut", false, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts, fs := fakeCluster(3)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			noop := func() {}
			for i := range ts {
				in := endingRun{fakeNode: fs[i], inCounts: cancel, inCut: noop}
				if tc.endInCut {
					in.inCounts, in.inCut = noop, cancel
				}
				ts[i].Node = in
			}
			rec := &memRec{}
			n, err := New(ts, rec, WithKinds(RackPowerLoss), WithSeed(1))
			if err != nil {
				t.Fatal(err)
			}
			stop, err := n.kinds[0].Start(ctx, &n.env, time.Second)
			if tc.wantCut != (err == nil) {
				t.Fatalf("Start: %v", err)
			}
			if got := len(rec.all()); got != tc.wantLines {
				t.Errorf("%d start lines, want %d: %+v", got, tc.wantLines, rec.all())
			}
			for _, f := range fs {
				if f.killed != tc.wantCut {
					t.Errorf("%s cut %v, want %v", f.name, f.killed, tc.wantCut)
				}
			}
			if stop == nil {
				return
			}
			if err := stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			if ops := rec.all(); len(ops) != 2 || ops[1].F != history.StopF(RackPowerLoss) {
				t.Errorf("after stop: %+v", ops)
			}
		})
	}
}

// A drawn container pause the freezer refuses stops the JVM instead and
// records "jvm"; a pause the schedule asks for by its way is not changed
// (its failure is recorded).
func TestPauseFallsBackToTheJVMWhenTheFreezerFails(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sched   *Schedule
		wantHow string // "" : the start failed
	}{
		{"drawn", nil, "jvm"},
		{"docker asked", &Schedule{Steps: []Step{{Kind: Pause, At: 0, For: Duration(time.Millisecond), Value: []byte(`{"how":"docker"}`)}}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts, fs := fakeCluster(3)
			for _, f := range fs {
				f.freezerFails = true
			}
			rec := &memRec{}
			opts := []Option{WithKinds(Pause), WithInterval(10 * time.Millisecond)}
			if tc.sched != nil {
				opts = append(opts, WithSchedule(*tc.sched))
			}
			var starts []history.Op
			// Seeds until a docker pause is drawn (half of them).
			for seed := int64(1); seed < 20 && len(starts) == 0; seed++ {
				rec = &memRec{}
				n, err := New(ts, rec, append(opts, WithSeed(seed))...)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Millisecond)
				_ = n.Run(ctx)
				cancel()
				if err := n.Heal(context.Background()); err != nil {
					t.Fatal(err)
				}
				var dockerTried bool
				for _, f := range fs {
					dockerTried = dockerTried || slices.Contains(f.calls, "pause")
				}
				if !dockerTried {
					continue
				}
				for _, op := range rec.all() {
					if op.F == history.StartF(Pause) || op.F == history.StartFailedF(Pause) {
						starts = append(starts, op)
					}
				}
			}
			if len(starts) == 0 {
				t.Fatal("no docker pause tried in 19 seeds")
			}
			first := starts[0]
			if tc.wantHow == "" {
				if first.F != history.StartFailedF(Pause) {
					t.Fatalf("first start %s %s, want a failed start", first.F, first.Value)
				}
				return
			}
			if first.F != history.StartF(Pause) || !strings.Contains(string(first.Value), `"how":"`+tc.wantHow+`"`) {
				t.Fatalf("first start %s %s, want how %s", first.F, first.Value, tc.wantHow)
			}
			for _, f := range fs {
				if err := f.healthy(); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// A nemesis built before its run (no recorder, clients to come) refuses
// what the cluster cannot serve at once and runs the same faults once
// Attach gave it the run's recorder and clients; Attach without clients
// refuses a client kind, and Run refuses to deal without a recorder.
func TestBuiltOnceThenAttached(t *testing.T) {
	ts, _ := fakeCluster(3)
	opts := []Option{WithKinds(ClientPause, Kill), WithSeed(3), WithInterval(10 * time.Millisecond), WithClientPauseExtra(time.Millisecond)}
	if _, err := New(ts, nil, opts...); err == nil || !strings.Contains(err.Error(), "client-pause needs the workload's clients") {
		t.Fatalf("no clients, none to come: %v", err)
	}
	n, err := New(ts, nil, append(opts, WithClientsLater())...)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "recorder") {
		t.Errorf("Run before Attach: %v", err)
	}
	if err := n.Attach(&memRec{}, nil, nil); err == nil || !strings.Contains(err.Error(), "client-pause needs the workload's clients") {
		t.Errorf("Attach without clients: %v", err)
	}
	rec := &memRec{}
	cl := &fakeClients{n: 4, clocks: map[int]time.Duration{}}
	if err := n.Attach(rec, cl, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	// Run until both kinds were dealt: what is asserted, not a time.
	for seen := map[string]bool{}; !seen[ClientPause] || !seen[Kill]; {
		for _, op := range rec.all() {
			if k, start, ok := history.FaultEvent(op.F); ok && start {
				seen[k] = true
			}
		}
		time.Sleep(5 * time.Millisecond) // a poll: the condition above is what ends the loop
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := n.Heal(context.Background()); err != nil {
		t.Fatal(err)
	}
	if cl.pauses == 0 {
		t.Error("the attached clients saw no pause")
	}
}
