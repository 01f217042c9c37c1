package nemesis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/workload"
)

// Fault kinds, as `lockcheck run --nemesis` takes them.
const (
	Partition   = "partition"    // iptables grudges between nodes, and clients cut off from nodes
	Pause       = "pause"        // docker pause, or SIGSTOP of the JVM
	Kill        = "kill"         // kill -9 and restart
	Clock       = "clock"        // node clock bumps and strobes (libfaketime)
	ClientPause = "client-pause" // a holder stalls between its read and its write, past its lease
	ClientClock = "client-clock" // a contender's clock falls behind
)

// Kinds are every fault kind, in the order `all` expands to.
var Kinds = []string{Partition, Pause, Kill, Clock, ClientPause, ClientClock}

// ParseKinds parses `none`, `all` or a comma list of kinds.
func ParseKinds(list string) ([]string, error) {
	list = strings.TrimSpace(list)
	switch list {
	case "", "none":
		return nil, nil
	case "all":
		return slices.Clone(Kinds), nil
	}
	var out []string
	for _, k := range strings.Split(list, ",") {
		k = strings.TrimSpace(k)
		if !slices.Contains(Kinds, k) {
			return nil, fmt.Errorf("nemesis: unknown fault %q (want none, all or a comma list of %s)", k, strings.Join(Kinds, ", "))
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out, nil
}

// Node is what the nemesis does to a Cassandra node (cluster.Node implements
// it). Each method waits for its effect or ctx.
type Node interface {
	Exec(ctx context.Context, cmd ...string) (string, error)
	Pause(ctx context.Context) error
	Unpause(ctx context.Context) error
	SignalJVM(ctx context.Context, sig string) error
	Kill(ctx context.Context) error
	Restart(ctx context.Context) error
	SetClockOffset(ctx context.Context, d time.Duration) error
}

// Target is a node with the name and address the nemesis needs.
type Target struct {
	Name, IP string
	Node     Node
}

// Clients is what the nemesis does to the workload's clients
// (workload.Workload implements it).
type Clients interface {
	Clients() int
	Holders() []int
	PauseHolder(ctx context.Context, extra time.Duration) (workload.ClientPause, error)
	SetClientClock(i int, d time.Duration) error
}

// Recorder receives the fault lines (history.Writer implements it).
type Recorder interface {
	Append(op history.Op) (history.Op, error)
}

// Option configures a Nemesis.
type Option func(*Nemesis)

// WithKinds sets the fault kinds to schedule (default none).
func WithKinds(kinds ...string) Option { return func(n *Nemesis) { n.kinds = kinds } }

// WithSeed seeds the schedule (default 1).
func WithSeed(s int64) Option { return func(n *Nemesis) { n.seed = s } }

// WithInterval sets the mean time between faults and the mean length of a
// fault (default 10s); each is drawn uniformly from [interval/2, 3*interval/2).
func WithInterval(d time.Duration) Option { return func(n *Nemesis) { n.interval = d } }

// WithClients gives the nemesis the workload's clients (client faults need it).
func WithClients(c Clients) Option { return func(n *Nemesis) { n.clients = c } }

// WithGateway is the address the harness's clients appear from on the
// cluster network (cluster.GatewayIP): the partition nemesis cuts clients off
// from nodes by dropping it.
func WithGateway(ip string) Option { return func(n *Nemesis) { n.gateway = ip } }

// WithClientPauseExtra is how much longer than its lease a paused holder
// stalls (default 3s, enough for another client to acquire and write).
func WithClientPauseExtra(d time.Duration) Option { return func(n *Nemesis) { n.pauseExtra = d } }

// WithClientSkew bounds a client clock skew: the contender falls behind by a
// log-uniform amount in [min, max) (default 1s..30s).
func WithClientSkew(min, max time.Duration) Option {
	return func(n *Nemesis) { n.skewMin, n.skewMax = min, max }
}

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(n *Nemesis) { n.log = l } }

// Nemesis schedules faults and heals them.
type Nemesis struct {
	targets    []Target
	rec        Recorder
	kinds      []string
	seed       int64
	interval   time.Duration
	clients    Clients
	gateway    string
	pauseExtra time.Duration
	skewMin    time.Duration
	skewMax    time.Duration
	log        *slog.Logger

	sched *rand.Rand // the schedule: kinds, timing, nodes, offsets; same seed, same schedule
	pick  *rand.Rand // choices that depend on the run's timing (which client holds now)

	mu     sync.Mutex
	active []string
	// state to heal
	partitioned bool
	paused      map[string]bool // docker-paused nodes
	stopped     map[string]bool // SIGSTOPped JVMs
	killed      map[string]bool
	skewedNodes map[string]bool
	skewedCl    map[int]bool
	strobeStop  chan struct{}
	strobeDone  chan struct{}
}

// New makes a nemesis over targets that records to rec.
func New(targets []Target, rec Recorder, opts ...Option) (*Nemesis, error) {
	n := &Nemesis{
		targets: targets, rec: rec, seed: 1, interval: DefaultInterval,
		pauseExtra: DefaultClientPauseExtra, skewMin: time.Second, skewMax: 30 * time.Second,
		log:    slog.Default(),
		paused: map[string]bool{}, stopped: map[string]bool{}, killed: map[string]bool{},
		skewedNodes: map[string]bool{}, skewedCl: map[int]bool{},
	}
	for _, o := range opts {
		o(n)
	}
	if rec == nil {
		return nil, errors.New("nemesis: a recorder is required")
	}
	for _, k := range n.kinds {
		if !slices.Contains(Kinds, k) {
			return nil, fmt.Errorf("nemesis: unknown fault %q", k)
		}
		switch k {
		case ClientPause, ClientClock:
			if n.clients == nil {
				return nil, fmt.Errorf("nemesis: %s needs the workload's clients", k)
			}
		default:
			if len(targets) == 0 {
				return nil, fmt.Errorf("nemesis: %s needs nodes", k)
			}
		}
	}
	if n.interval <= 0 || n.skewMin <= 0 || n.skewMax < n.skewMin {
		return nil, errors.New("nemesis: interval and skews must be positive")
	}
	n.sched = rand.New(rand.NewPCG(uint64(n.seed), 0x6e656d))
	n.pick = rand.New(rand.NewPCG(uint64(n.seed), 0x7069636b))
	return n, nil
}

// Active are the faults in effect now.
func (n *Nemesis) Active() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.active)
}

func (n *Nemesis) setActive(k string, on bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.active = slices.DeleteFunc(n.active, func(s string) bool { return s == k })
	if on {
		n.active = append(n.active, k)
	}
}

// event records one nemesis line.
func (n *Nemesis) event(f string, value any, nodes []string) error {
	op := history.Op{Process: history.NemesisProcess, Type: history.Info, F: f, Node: strings.Join(nodes, ",")}
	if value != nil {
		b, err := json.Marshal(value)
		if err != nil {
			return fmt.Errorf("nemesis: %s: %w", f, err)
		}
		op.Value = b
	}
	if _, err := n.rec.Append(op); err != nil {
		return fmt.Errorf("nemesis: record %s: %w", f, err)
	}
	return nil
}

func (n *Nemesis) jitter() time.Duration {
	return n.interval/2 + time.Duration(n.sched.Int64N(int64(n.interval)))
}

// Run starts and stops faults at random intervals until ctx is done; a fault
// in effect then is stopped (recorded) before Run returns. Run with no kinds
// waits for ctx. Heal afterwards to undo anything a failed stop left.
func (n *Nemesis) Run(ctx context.Context) error {
	if len(n.kinds) == 0 {
		<-ctx.Done()
		return nil
	}
	var errs []error
	var deck []string
	for {
		if !sleep(ctx, n.jitter()) {
			return errors.Join(errs...)
		}
		// Kinds are dealt from a shuffled deck, so that every kind comes
		// once in each round of len(kinds) faults: a short run still sees
		// them all, in a seeded random order.
		if len(deck) == 0 {
			for _, j := range n.sched.Perm(len(n.kinds)) {
				deck = append(deck, n.kinds[j])
			}
		}
		kind := deck[0]
		deck = deck[1:]
		hold := n.jitter()
		stop, err := n.start(ctx, kind, hold)
		if err != nil {
			if ctx.Err() != nil {
				return errors.Join(errs...)
			}
			// A fault that cannot start is logged and recorded, and the
			// schedule goes on: a run is not lost to one failed docker call.
			n.log.Warn("nemesis: fault did not start", "kind", kind, "err", err)
			if rerr := n.event("start-"+kind+"-failed", err.Error(), nil); rerr != nil {
				return rerr
			}
			errs = append(errs, err)
			deck = append(deck, kind) // tried again after the rest of the round
			continue
		}
		sleep(ctx, hold)
		// The stop runs to completion even when the run is over, so that its
		// line is recorded.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		err = stop(sctx)
		cancel()
		if err != nil {
			n.log.Warn("nemesis: fault did not stop", "kind", kind, "err", err)
			errs = append(errs, err)
		}
		if ctx.Err() != nil {
			return errors.Join(errs...)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// start begins one fault of kind, expected to last about hold, records its
// start line and returns the function that stops it and records the stop.
// Every random draw of the schedule happens here, before anything that
// depends on timing, so that a seed fixes the schedule.
func (n *Nemesis) start(ctx context.Context, kind string, hold time.Duration) (func(context.Context) error, error) {
	switch kind {
	case Partition:
		return n.startPartition(ctx)
	case Pause:
		return n.startPause(ctx)
	case Kill:
		return n.startKill(ctx)
	case Clock:
		return n.startClock(ctx, hold)
	case ClientPause:
		return n.startClientPause(ctx, hold)
	case ClientClock:
		return n.startClientClock(ctx)
	}
	return nil, fmt.Errorf("nemesis: unknown fault %q", kind)
}

func (n *Nemesis) names(idx []int) []string {
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = n.targets[j].Name
	}
	return out
}

// Grudge maps a node's name to the names of the nodes it drops packets from.
// The gateway (the harness's clients) is named "clients".
type Grudge map[string][]string

// GatewayName stands for the harness's clients in a Grudge.
const GatewayName = "clients"

// partitionGrudge draws a partition of nodes 0..n-1 (names from names).
func partitionGrudge(r *rand.Rand, names []string, gateway bool) (string, Grudge) {
	n := len(names)
	perm := r.Perm(n)
	g := Grudge{}
	cut := func(a, b int) { // symmetric
		g[names[a]] = append(g[names[a]], names[b])
		g[names[b]] = append(g[names[b]], names[a])
	}
	kinds := []string{"isolate", "halves", "ring", "bridge"}
	if gateway {
		kinds = append(kinds, "clients")
	}
	if n < 2 {
		kinds = []string{"clients"}
		if !gateway {
			return "none", g
		}
	}
	kind := kinds[r.IntN(len(kinds))]
	switch kind {
	case "isolate": // one node against the rest
		for _, j := range perm[1:] {
			cut(perm[0], j)
		}
	case "halves": // a random minority against a majority
		k := n / 2
		for _, a := range perm[:k] {
			for _, b := range perm[k:] {
				cut(a, b)
			}
		}
	case "ring":
		// Majorities ring: node perm[i] hears only from the floor(n/2)
		// nodes that follow it in a ring, so each sees a majority (itself
		// included) but no two see the same majority. Asymmetric.
		for i := range n {
			hears := map[int]bool{}
			for d := 1; d <= n/2; d++ {
				hears[perm[(i+d)%n]] = true
			}
			for j := range n {
				if j != perm[i] && !hears[j] {
					g[names[perm[i]]] = append(g[names[perm[i]]], names[j])
				}
			}
		}
	case "bridge":
		// Two halves that each talk to one bridge node but not to each other.
		// perm[0] is the bridge: it is cut from nobody.
		rest := perm[1:]
		h := max(1, len(rest)/2)
		for _, x := range rest[:h] {
			for _, y := range rest[h:] {
				cut(x, y)
			}
		}
	case "clients":
		// Cut the harness's clients off from a minority (at least one node).
		k := max(1, (n-1)/2)
		for _, j := range perm[:k] {
			g[names[j]] = append(g[names[j]], GatewayName)
		}
	}
	for k := range g {
		slices.Sort(g[k])
	}
	return kind, g
}

func (n *Nemesis) startPartition(ctx context.Context) (func(context.Context) error, error) {
	names := make([]string, len(n.targets))
	ips := map[string]string{GatewayName: n.gateway}
	for i, t := range n.targets {
		names[i] = t.Name
		ips[t.Name] = t.IP
	}
	kind, g := partitionGrudge(n.sched, names, n.gateway != "")
	var nodes []string
	for _, t := range n.targets {
		from := g[t.Name]
		if len(from) == 0 {
			continue
		}
		nodes = append(nodes, t.Name)
		srcs := make([]string, len(from))
		for i, f := range from {
			srcs[i] = ips[f]
		}
		n.mu.Lock()
		n.partitioned = true
		n.mu.Unlock()
		if _, err := t.Node.Exec(ctx, "iptables", "-A", "INPUT", "-s", strings.Join(srcs, ","), "-j", "DROP", "-w"); err != nil {
			return nil, errors.Join(fmt.Errorf("nemesis: partition %s: %w", t.Name, err), n.healPartition(context.WithoutCancel(ctx)))
		}
	}
	value := map[string]any{"kind": kind, "grudge": g}
	if err := n.event("start-"+Partition, value, nodes); err != nil {
		return nil, err
	}
	n.setActive(Partition, true)
	return func(ctx context.Context) error {
		err := n.healPartition(ctx)
		n.setActive(Partition, false)
		return errors.Join(err, n.event("stop-"+Partition, map[string]any{"kind": kind}, nodes))
	}, nil
}

func (n *Nemesis) healPartition(ctx context.Context) error {
	var errs []error
	for _, t := range n.targets {
		n.mu.Lock()
		dead := n.killed[t.Name]
		n.mu.Unlock()
		if dead {
			continue // healed when it restarts: its container's rules are reset
		}
		if _, err := t.Node.Exec(ctx, "iptables", "-F", "INPUT", "-w"); err != nil {
			errs = append(errs, fmt.Errorf("nemesis: flush iptables on %s: %w", t.Name, err))
		}
	}
	if len(errs) == 0 {
		n.mu.Lock()
		n.partitioned = false
		n.mu.Unlock()
	}
	return errors.Join(errs...)
}

func (n *Nemesis) startPause(ctx context.Context) (func(context.Context) error, error) {
	t := n.targets[n.sched.IntN(len(n.targets))]
	jvm := n.sched.IntN(2) == 0
	how := "docker"
	var err error
	if jvm {
		how = "jvm"
		err = t.Node.SignalJVM(ctx, "STOP")
	} else {
		err = t.Node.Pause(ctx)
	}
	if err != nil {
		// A pause that failed (the cgroup freezer can time out on a busy
		// node) may have half happened: undo it at once, best effort.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if jvm {
			_ = t.Node.SignalJVM(uctx, "CONT")
		} else {
			_ = t.Node.Unpause(uctx)
		}
		return nil, fmt.Errorf("nemesis: pause %s (%s): %w", t.Name, how, err)
	}
	n.mu.Lock()
	if jvm {
		n.stopped[t.Name] = true
	} else {
		n.paused[t.Name] = true
	}
	n.mu.Unlock()
	if err := n.event("start-"+Pause, map[string]any{"how": how}, []string{t.Name}); err != nil {
		return nil, err
	}
	n.setActive(Pause, true)
	return func(ctx context.Context) error {
		var err error
		if jvm {
			err = t.Node.SignalJVM(ctx, "CONT")
		} else {
			err = t.Node.Unpause(ctx)
		}
		if err == nil {
			n.mu.Lock()
			delete(n.stopped, t.Name)
			delete(n.paused, t.Name)
			n.mu.Unlock()
		}
		n.setActive(Pause, false)
		return errors.Join(err, n.event("stop-"+Pause, map[string]any{"how": how}, []string{t.Name}))
	}, nil
}

func (n *Nemesis) startKill(ctx context.Context) (func(context.Context) error, error) {
	t := n.targets[n.sched.IntN(len(n.targets))]
	n.mu.Lock()
	n.killed[t.Name] = true
	n.mu.Unlock()
	if err := t.Node.Kill(ctx); err != nil {
		return nil, fmt.Errorf("nemesis: kill %s: %w", t.Name, err)
	}
	if err := n.event("start-"+Kill, "kill -9", []string{t.Name}); err != nil {
		return nil, err
	}
	n.setActive(Kill, true)
	return func(ctx context.Context) error {
		err := t.Node.Restart(ctx)
		if err == nil {
			n.mu.Lock()
			delete(n.killed, t.Name)
			n.mu.Unlock()
		}
		n.setActive(Kill, false)
		return errors.Join(err, n.event("stop-"+Kill, "restart", []string{t.Name}))
	}, nil
}

// logUniform draws a duration log-uniformly in [lo, hi).
func logUniform(r *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	l := math.Log(float64(lo))
	h := math.Log(float64(hi))
	return time.Duration(math.Exp(l + r.Float64()*(h-l)))
}

func (n *Nemesis) startClock(ctx context.Context, hold time.Duration) (func(context.Context) error, error) {
	strobe := n.sched.IntN(3) == 0
	// A random non-empty subset of nodes, each with its own offset.
	perm := n.sched.Perm(len(n.targets))
	k := 1 + n.sched.IntN(len(n.targets))
	idx := perm[:k]
	slices.Sort(idx)
	offsets := map[string]string{}
	offs := make([]time.Duration, k)
	for i := range idx {
		d := logUniform(n.sched, 10*time.Millisecond, 3*time.Minute)
		if n.sched.IntN(2) == 0 {
			d = -d
		}
		offs[i] = d.Round(time.Millisecond)
		offsets[n.targets[idx[i]].Name] = offs[i].String()
	}
	period := logUniform(n.sched, 10*time.Millisecond, 500*time.Millisecond).Round(time.Millisecond)
	names := n.names(idx)
	n.mu.Lock()
	for _, nm := range names {
		n.skewedNodes[nm] = true
	}
	n.mu.Unlock()
	set := func(ctx context.Context, zero bool) error {
		var errs []error
		for i, j := range idx {
			d := offs[i]
			if zero {
				d = 0
			}
			if err := n.targets[j].Node.SetClockOffset(ctx, d); err != nil {
				errs = append(errs, fmt.Errorf("nemesis: clock of %s: %w", n.targets[j].Name, err))
			}
		}
		return errors.Join(errs...)
	}
	if err := set(ctx, false); err != nil {
		return nil, err
	}
	value := map[string]any{"kind": "bump", "offsets": offsets}
	if strobe {
		value = map[string]any{"kind": "strobe", "offsets": offsets, "period": period.String()}
		stop, done := make(chan struct{}), make(chan struct{})
		n.mu.Lock()
		n.strobeStop, n.strobeDone = stop, done
		n.mu.Unlock()
		go func() {
			defer close(done)
			zero := true
			t := time.NewTicker(period)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					if err := set(context.WithoutCancel(ctx), zero); err != nil {
						n.log.Warn("nemesis: strobe", "err", err)
					}
					zero = !zero
				}
			}
		}()
	}
	if err := n.event("start-"+Clock, value, names); err != nil {
		return nil, err
	}
	n.setActive(Clock, true)
	return func(ctx context.Context) error {
		n.stopStrobe()
		err := set(ctx, true)
		if err == nil {
			n.mu.Lock()
			for _, nm := range names {
				delete(n.skewedNodes, nm)
			}
			n.mu.Unlock()
		}
		n.setActive(Clock, false)
		return errors.Join(err, n.event("stop-"+Clock, map[string]any{"kind": value["kind"]}, names))
	}, nil
}

func (n *Nemesis) stopStrobe() {
	n.mu.Lock()
	stop, done := n.strobeStop, n.strobeDone
	n.strobeStop, n.strobeDone = nil, nil
	n.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

// startClientPause stalls the next holder to enter its critical section for
// its lease plus the configured extra. It waits at most hold for a holder.
func (n *Nemesis) startClientPause(ctx context.Context, hold time.Duration) (func(context.Context) error, error) {
	pctx, cancel := context.WithTimeout(ctx, hold)
	defer cancel()
	p, err := n.clients.PauseHolder(pctx, n.pauseExtra)
	if err != nil {
		return nil, fmt.Errorf("nemesis: client pause: no holder entered a critical section: %w", err)
	}
	value := map[string]any{"client": p.Client, "process": p.Process, "lock": p.Lock, "ms": p.Duration.Milliseconds()}
	if err := n.event("start-"+ClientPause, value, nil); err != nil {
		return nil, err
	}
	n.setActive(ClientPause, true)
	return func(ctx context.Context) error {
		// The stall ends on its own; the stop line marks when it did.
		var err error
		select {
		case <-p.Done:
		case <-ctx.Done():
			err = fmt.Errorf("nemesis: client pause of client %d did not end: %w", p.Client, ctx.Err())
		}
		n.setActive(ClientPause, false)
		return errors.Join(err, n.event("stop-"+ClientPause, map[string]any{"client": p.Client, "process": p.Process}, nil))
	}, nil
}

// startClientClock sets one contender's clock behind: by default a client
// that does not hold a lock now, so that its next request jumps the queue
// while the holder is still inside.
func (n *Nemesis) startClientClock(ctx context.Context) (func(context.Context) error, error) {
	d := -logUniform(n.sched, n.skewMin, n.skewMax).Round(time.Millisecond)
	holders := n.clients.Holders()
	var cands []int
	for i := range n.clients.Clients() {
		if !slices.Contains(holders, i) {
			cands = append(cands, i)
		}
	}
	if len(cands) == 0 {
		for i := range n.clients.Clients() {
			cands = append(cands, i)
		}
	}
	c := cands[n.pick.IntN(len(cands))]
	if err := n.clients.SetClientClock(c, d); err != nil {
		return nil, err
	}
	n.mu.Lock()
	n.skewedCl[c] = true
	n.mu.Unlock()
	if err := n.event("start-"+ClientClock, map[string]any{"client": c, "offset": d.String()}, nil); err != nil {
		return nil, err
	}
	n.setActive(ClientClock, true)
	return func(ctx context.Context) error {
		err := n.clients.SetClientClock(c, 0)
		if err == nil {
			n.mu.Lock()
			delete(n.skewedCl, c)
			n.mu.Unlock()
		}
		n.setActive(ClientClock, false)
		return errors.Join(err, n.event("stop-"+ClientClock, map[string]any{"client": c}, nil))
	}, nil
}

// Heal undoes every fault the nemesis may have left, whatever its record
// says: it resumes paused nodes and JVMs, restarts killed nodes, flushes
// every node's iptables INPUT chain, and resets node and client clocks. It
// records a `heal` line and tries every step even when one fails.
func (n *Nemesis) Heal(ctx context.Context) error {
	n.stopStrobe()
	n.mu.Lock()
	paused := maps(n.paused)
	stopped := maps(n.stopped)
	killed := maps(n.killed)
	skewedCl := make([]int, 0, len(n.skewedCl))
	for c := range n.skewedCl {
		skewedCl = append(skewedCl, c)
	}
	n.mu.Unlock()
	var errs []error
	for _, t := range n.targets {
		if paused[t.Name] {
			if err := t.Node.Unpause(ctx); err != nil {
				errs = append(errs, fmt.Errorf("nemesis: heal: unpause %s: %w", t.Name, err))
			}
		}
		if stopped[t.Name] {
			if err := t.Node.SignalJVM(ctx, "CONT"); err != nil {
				errs = append(errs, fmt.Errorf("nemesis: heal: SIGCONT %s: %w", t.Name, err))
			}
		}
		if killed[t.Name] {
			if err := t.Node.Restart(ctx); err != nil {
				errs = append(errs, fmt.Errorf("nemesis: heal: restart %s: %w", t.Name, err))
			}
		}
	}
	n.mu.Lock()
	for k := range n.paused {
		delete(n.paused, k)
	}
	for k := range n.stopped {
		delete(n.stopped, k)
	}
	for k := range n.killed {
		delete(n.killed, k)
	}
	n.mu.Unlock()
	// Flush and reset every node, not only those recorded: a stop that
	// failed halfway leaves no reliable record.
	nodeFaults := slices.ContainsFunc(n.kinds, func(k string) bool { return k != ClientPause && k != ClientClock })
	if len(n.targets) > 0 && nodeFaults {
		if err := n.healPartition(ctx); err != nil {
			errs = append(errs, err)
		}
		for _, t := range n.targets {
			if err := t.Node.SetClockOffset(ctx, 0); err != nil {
				errs = append(errs, fmt.Errorf("nemesis: heal: clock of %s: %w", t.Name, err))
			}
		}
	}
	if n.clients != nil {
		for _, c := range skewedCl {
			if err := n.clients.SetClientClock(c, 0); err != nil {
				errs = append(errs, err)
			}
		}
	}
	n.mu.Lock()
	n.active = nil
	n.skewedNodes = map[string]bool{}
	n.skewedCl = map[int]bool{}
	n.mu.Unlock()
	err := errors.Join(errs...)
	value := "ok"
	if err != nil {
		value = err.Error()
	}
	return errors.Join(err, n.event("heal", value, nil))
}

func maps(m map[string]bool) map[string]bool {
	out := make(map[string]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
