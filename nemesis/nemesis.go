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
	"github.com/lockcheck/lockcheck/spec"
)

// Node is what the nemesis does to a Cassandra node (cluster.Node and
// sshnode.Node implement it). Each method waits for its effect or ctx.
type Node interface {
	// Capabilities are what the node can do for the fault kinds (CapIPTables,
	// ...): a kind that needs one it lacks is refused before the run, and
	// leftover healing runs only the resets of kinds it can serve. A node
	// may still implement a method it does not declare (it then errors).
	Capabilities() []Capability
	Exec(ctx context.Context, cmd ...string) (string, error)
	Pause(ctx context.Context) error
	Unpause(ctx context.Context) error
	SignalJVM(ctx context.Context, sig string) error
	Kill(ctx context.Context) error
	Restart(ctx context.Context) error
	SetClockOffset(ctx context.Context, d time.Duration) error
	// ClockOffset is the offset SetClockOffset last set, read from the node.
	ClockOffset(ctx context.Context) (time.Duration, error)
	// State is the node's container state: "running", "paused", "exited",
	// ... (Docker's words); the resets ask it rather than trust a record.
	State(ctx context.Context) (string, error)
}

// Target is a node with the name and address the nemesis needs.
type Target struct {
	Name, IP string
	// DC is the node's data centre when the backend knows it ("": unknown;
	// dc-partition needs two).
	DC   string
	Node Node
}

// Clients is what the nemesis does to the workload's clients
// (workload.Control implements it: the workload's one door for client
// faults).
type Clients interface {
	Clients() int
	Holders() []int
	// PauseHolder stalls the next client to enter a critical section for its
	// lease plus extra, and returns once the stall has begun: who stalled,
	// as the start line records it, and a channel closed when the stall
	// ends. A positive stall is the stall's length instead (a replay's).
	// resumed runs as the client resumes, before it goes on (the stop
	// line's moment).
	PauseHolder(ctx context.Context, extra, stall time.Duration, resumed func()) (history.ClientPauseStart, <-chan struct{}, error)
	SetClientClock(i int, d time.Duration) error
	// SetClientClockAtRest moves client i's clock by d between two of its
	// operations (after the one it is in), so that a step never falls
	// inside a recipe's sequence of writes; stepped runs once it moved,
	// before the client's next operation (the start line's moment).
	SetClientClockAtRest(i int, d time.Duration, stepped func()) error
	// HoldAtRest keeps each client of cs between two of its operations
	// (holding nothing, in no sequence of writes) until release; it
	// returns once all rest there.
	HoldAtRest(ctx context.Context, cs []int) (release func(), err error)
	// KillClient kills the process of the next client (or client, when
	// not negative) to reach in (hold, acquire, release; "" or any:
	// whichever first), an operation in flight delay after its
	// invocation, and starts a fresh process of it after restart. killed
	// runs before the kill lands (the start line), restarted as the fresh
	// process starts (the stop line). It returns once the kill landed,
	// with a channel closed after the restart.
	KillClient(ctx context.Context, client int, in string, restart, delay time.Duration,
		killed func(history.ClientKillStart) error, restarted func(history.ClientKillStop)) (history.ClientKillStart, <-chan struct{}, error)
}

// Recorder receives the fault lines (history.Writer implements it).
type Recorder interface {
	Append(op history.Op) (history.Op, error)
}

// Env is what a fault kind works with: the nodes, the clients, the
// schedule's random sources and the run's fault options.
type Env struct {
	Targets []Target
	Clients Clients // nil when the nemesis has no client kinds
	Gateway string  // the clients' address on the cluster network ("": none)
	// Sched draws the schedule (kinds, timing, nodes, offsets): same seed,
	// same schedule. Pick draws choices that depend on the run's timing
	// (which client holds now).
	Sched, Pick *rand.Rand

	PauseExtra time.Duration // client-pause: stall past the lease by this
	// KillRestart and KillTarget are client-kill's restart delay and
	// target (clientkill.go).
	KillRestart      time.Duration
	KillTarget       string
	SkewMin, SkewMax time.Duration // client-clock: the skew's bounds
	// CoordSkewMin and CoordSkewMax bound coord-clock's ahead (uniform);
	// zero: the lease TTL plus 1-3 s.
	CoordSkewMin, CoordSkewMax time.Duration
	// SkewAhead: client-clock sets the contender's clock ahead instead of
	// behind (a lock whose expiry is a comparison of client clocks fails
	// when a contender's clock runs ahead).
	SkewAhead        bool
	LossMin, LossMax float64 // loss: the drop probability's bounds
	// Net bounds the shaping kinds' draws (net-delay, net-rate,
	// coord-net-delay).
	Net NetBounds
	// Slow bounds the slowness kinds' draws (slowness.go).
	Slow Slowness
	// Pins are the clients' coordinators (client -> node name) when every
	// query of a client goes to one node (`run --pin-clients`); the aimed
	// kinds (coord-partition, coord-clock) need them.
	Pins map[int]string
	// Spares are the nodes outside the ring at the start, which join
	// bootstraps (a cluster of `cluster up --spares`).
	Spares []Target
	// LeaseTTL is the lease recipes' TTL: coord-clock skews a coordinator
	// ahead by more than that, more than any lease has left.
	LeaseTTL time.Duration
	// AimWrite begins each window of coord-net-delay and coord-slow-node as
	// the next holder enters its critical section, on that holder's
	// coordinator (atwrite.go), instead of at once.
	AimWrite bool

	Log *slog.Logger
	rec Recorder
	// clientsLater: the clients come with Attach (WithClientsLater), so
	// New's checks take the client kinds as served.
	clientsLater bool
	// step is the schedule's step being dealt (nil: the fault is drawn):
	// a kind takes its parameters from it (given, givenTargets).
	step *Step
	// schedule is the run's schedule (nil: the faults are drawn), which a
	// kind's Check reads to refuse a step before the run (restore).
	schedule *Schedule
	// reached is told the phases a window reports itself (Streamed) for
	// the step being dealt, when a later step follows it; nil otherwise.
	reached func(Phase)
}

// phaseReporter is the function a kind's Start keeps to report a phase of
// the window it starts (its own goroutine calls it later): a no-op when no
// step follows the window.
func (e *Env) phaseReporter() func(Phase) {
	if f := e.reached; f != nil {
		return f
	}
	return func(Phase) {}
}

// Record appends one nemesis line to the history.
func (e *Env) Record(f string, value any, nodes []string) error {
	op := history.Op{Process: history.NemesisProcess, Type: history.Info, F: f, Node: strings.Join(nodes, ",")}
	if value != nil {
		b, err := json.Marshal(value)
		if err != nil {
			return fmt.Errorf("nemesis: %s: %w", f, err)
		}
		op.Value = b
	}
	if e.rec == nil {
		return nil
	}
	if _, err := e.rec.Append(op); err != nil {
		return fmt.Errorf("nemesis: record %s: %w", f, err)
	}
	return nil
}

func (e *Env) names(idx []int) []string {
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = e.Targets[j].Name
	}
	return out
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

// Option configures a Nemesis.
type Option func(*Nemesis)

// WithKinds sets the fault kinds to schedule (default none).
func WithKinds(kinds ...string) Option { return func(n *Nemesis) { n.names = kinds } }

// WithSeed seeds the schedule (default 1).
func WithSeed(s int64) Option { return func(n *Nemesis) { n.seed = s } }

// WithInterval sets the mean time between faults and the mean length of a
// fault (default 10s); each is drawn uniformly from [interval/2, 3*interval/2).
func WithInterval(d time.Duration) Option { return func(n *Nemesis) { n.interval = d } }

// WithClients gives the nemesis the workload's clients (client faults need it).
func WithClients(c Clients) Option { return func(n *Nemesis) { n.env.Clients = c } }

// WithClientsLater says the workload's clients are given by Attach, once
// the run has them: New, called before the run has a directory so that its
// refusals come first, then takes the client kinds as served.
func WithClientsLater() Option { return func(n *Nemesis) { n.env.clientsLater = true } }

// WithGateway is the address the harness's clients appear from on the
// cluster network (cluster.GatewayIP): partition and loss cut clients off
// from nodes by dropping it.
func WithGateway(ip string) Option { return func(n *Nemesis) { n.env.Gateway = ip } }

// WithClientPauseExtra is how much longer than its lease a paused holder
// stalls (default 3s, enough for another client to acquire and write).
func WithClientPauseExtra(d time.Duration) Option {
	return func(n *Nemesis) { n.env.PauseExtra = d }
}

// WithClientSkew bounds a client clock skew: the contender falls behind by a
// log-uniform amount in [min, max) (default 1s..30s).
func WithClientSkew(min, max time.Duration) Option {
	return func(n *Nemesis) { n.env.SkewMin, n.env.SkewMax = min, max }
}

// WithCoordSkew bounds coord-clock's ahead: uniform in [min, max] instead
// of the lease TTL plus 1-3 s. A lock whose cell lives longer than the lease
// it promises (caslock's TTL is twice its timeout) needs a skew past the
// cell's life, not the lease's.
func WithCoordSkew(min, max time.Duration) Option {
	return func(n *Nemesis) { n.env.CoordSkewMin, n.env.CoordSkewMax = min, max }
}

// WithClientSkewAhead makes client-clock set the contender's clock ahead
// by the skew instead of behind.
func WithClientSkewAhead(ahead bool) Option {
	return func(n *Nemesis) { n.env.SkewAhead = ahead }
}

// WithLoss bounds the probability that the loss fault drops a packet: it is
// drawn uniformly in [min, max] (default 0.05..0.5).
func WithLoss(min, max float64) Option {
	return func(n *Nemesis) { n.env.LossMin, n.env.LossMax = min, max }
}

// WithPins tells the nemesis each client's coordinator (client -> node
// name), for the kinds aimed by it.
func WithPins(pins map[int]string) Option { return func(n *Nemesis) { n.env.Pins = pins } }

// WithLeaseTTL is the lease recipes' TTL (default 3s): coord-clock skews by
// more than it.
func WithLeaseTTL(d time.Duration) Option { return func(n *Nemesis) { n.env.LeaseTTL = d } }

// WithAimWrite begins each window of coord-net-delay and coord-slow-node as
// the next holder enters its critical section, between its read and its
// write, on that holder's coordinator (run --aim-write).
func WithAimWrite(on bool) Option { return func(n *Nemesis) { n.env.AimWrite = on } }

// WithSpares gives the nemesis the cluster's spare nodes (join needs one).
func WithSpares(ts []Target) Option { return func(n *Nemesis) { n.env.Spares = ts } }

// WithSchedule deals s's steps (their kinds, times and parameters) instead
// of drawing faults: a replay. The run's kinds are the schedule's.
func WithSchedule(s Schedule) Option { return func(n *Nemesis) { n.schedule = &s } }

// WithFirstRound makes a drawn run deal every one of its kinds at least
// once: Run's ctx is the run's time plus a bound, timeUp closes at the
// run's time, and from then on Run deals only the kinds it has not dealt
// (one try each, at the usual intervals) and returns when none is left.
// Until timeUp the sleeps and windows end with it as they would with
// ctx ending there, so a run that dealt them all in its time is the same
// with it as without.
// For drawn range movements (MovesRing), whose windows last as long as
// the cluster takes: a join+leave run whose join outlasts the run's time
// would otherwise show no leave.
func WithFirstRound(timeUp <-chan struct{}) Option {
	return func(n *Nemesis) { n.timeUp = timeUp }
}

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(n *Nemesis) { n.env.Log = l } }

// Nemesis schedules faults and heals them.
type Nemesis struct {
	names    []string
	kinds    []fault
	seed     int64
	interval time.Duration
	env      Env

	schedule *Schedule
	// timeUp, when set, is closed at the run's requested end: a drawn run
	// then deals the kinds it has not dealt yet, once each, and returns
	// (WithFirstRound).
	timeUp <-chan struct{}

	mu     sync.Mutex
	active []string
	// undealt counts the schedule's steps not (yet) started, or a drawn
	// run's kinds not dealt yet (WithFirstRound).
	undealt int
}

// New makes a nemesis over targets that records to rec, and refuses, one
// line each, what it cannot serve. A nemesis built before its run has a
// history passes a nil rec and gets it from Attach.
func New(targets []Target, rec Recorder, opts ...Option) (*Nemesis, error) {
	n := &Nemesis{seed: 1, interval: DefaultInterval, env: Env{
		Targets: targets, rec: rec, PauseExtra: DefaultClientPauseExtra,
		SkewMin: time.Second, SkewMax: 30 * time.Second, LeaseTTL: spec.DefaultTTL, LossMin: DefaultLossMin, LossMax: DefaultLossMax,
		Net: DefaultNetBounds, Log: slog.Default(),
	}}
	for _, o := range opts {
		o(n)
	}
	if n.schedule != nil {
		if err := n.schedule.Validate(); err != nil {
			return nil, err
		}
		n.names = n.schedule.Kinds()
		n.env.schedule = n.schedule
		n.undealt = len(n.schedule.Steps)
		for i, st := range n.schedule.Steps {
			for _, name := range st.Nodes {
				has := func(t Target) bool { return t.Name == name }
				if !slices.ContainsFunc(targets, has) && !slices.ContainsFunc(n.env.Spares, has) {
					return nil, fmt.Errorf("nemesis: schedule step %d (%s) names node %s, which this cluster does not have", i+1, st.Kind, name)
				}
			}
		}
	}
	// Every kind the run cannot serve is named, one line each, before
	// anything starts.
	var refused []error
	for _, name := range n.names {
		k := lookup(name)
		if k == nil {
			return nil, unknown(name)
		}
		if err := k.check(&n.env); err != nil {
			refused = append(refused, err)
			continue
		}
		n.kinds = append(n.kinds, fault{k, k.New()})
	}
	if err := errors.Join(refused...); err != nil {
		return nil, err
	}
	if n.schedule == nil && n.timeUp != nil {
		n.undealt = len(n.kinds)
	}
	e := &n.env
	if n.interval <= 0 || e.SkewMin <= 0 || e.SkewMax < e.SkewMin {
		return nil, errors.New("nemesis: interval and skews must be positive")
	}
	if (e.CoordSkewMin != 0 || e.CoordSkewMax != 0) && (e.CoordSkewMin <= 0 || e.CoordSkewMax < e.CoordSkewMin) {
		return nil, fmt.Errorf("nemesis: coord-clock skew %v..%v: want 0 < min <= max", e.CoordSkewMin, e.CoordSkewMax)
	}
	if e.LossMin <= 0 || e.LossMax < e.LossMin || e.LossMax > 1 {
		return nil, fmt.Errorf("nemesis: loss probabilities %g..%g: want 0 < min <= max <= 1", e.LossMin, e.LossMax)
	}
	if err := e.Net.Validate(); err != nil {
		return nil, err
	}
	if err := e.Slow.Validate(n.names, n.interval); err != nil {
		return nil, fmt.Errorf("nemesis: %w", err)
	}
	e.Slow = e.Slow.Fit(n.interval)
	e.Sched = rand.New(rand.NewPCG(uint64(n.seed), 0x6e656d))
	e.Pick = rand.New(rand.NewPCG(uint64(n.seed), 0x7069636b))
	return n, nil
}

// Attach gives a nemesis that New built before its run what exists only
// once the run has begun: the history's recorder, the workload's clients
// (nil: a workload without them, which a client kind refuses) and the
// run's logger (nil: keep New's).
func (n *Nemesis) Attach(rec Recorder, c Clients, log *slog.Logger) error {
	if rec == nil {
		return errors.New("nemesis: a recorder is required")
	}
	n.env.rec = rec
	if c != nil {
		n.env.Clients = c
	}
	n.env.clientsLater = false
	if log != nil {
		n.env.Log = log
	}
	for _, k := range n.kinds {
		if k.Scope == ScopeClient && n.env.Clients == nil {
			return fmt.Errorf("nemesis: %s needs the workload's clients", k.Name)
		}
	}
	return nil
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

// Heal undoes every fault the nemesis may have left, whatever its record
// says: each kind of the run resets every node (node kinds) or the clients
// (client kinds). It records a `heal` line and tries every step even when
// one fails.
func (n *Nemesis) Heal(ctx context.Context) error {
	_, err := resetAll(ctx, &n.env, n.kinds, n.env.Targets)
	n.mu.Lock()
	n.active = nil
	n.mu.Unlock()
	value := "ok"
	if err != nil {
		value = err.Error()
	}
	return errors.Join(err, n.env.Record(history.FHeal, value, nil))
}

// fault is a kind of the run with its injector.
type fault struct {
	*Kind
	Injector
}

// resetAll resets targets (node kinds) and the clients (client kinds) and
// returns, per node (and "clients"), the kinds it found faulted. A node is
// reset only by the kinds it can serve (its capabilities): a kind it cannot
// serve never ran there. Nodes are reset in parallel (a stopped node takes
// a minute to start). On one node a reset may need another kind's first
// (nothing runs in a killed container, so its iptables cannot be read
// before the restart): a reset that failed is tried once more after the
// node's others.
func resetAll(ctx context.Context, e *Env, kinds []fault, targets []Target) (map[string][]string, error) {
	var clientKinds []fault
	for _, k := range kinds {
		if k.Scope == ScopeClient {
			clientKinds = append(clientKinds, k)
		}
	}
	type subject struct {
		name  string
		t     Target
		kinds []fault
	}
	var subjects []subject
	for _, t := range targets {
		var ks []fault
		for _, k := range kinds {
			if k.Scope == ScopeNode && serves(t, k.Kind) {
				ks = append(ks, k)
			}
		}
		if len(ks) > 0 {
			subjects = append(subjects, subject{t.Name, t, ks})
		}
	}
	if e.Clients != nil && len(clientKinds) > 0 {
		subjects = append(subjects, subject{"clients", Target{}, clientKinds})
	}
	healed := make([][]string, len(subjects))
	errs := make([]error, len(subjects))
	var wg sync.WaitGroup
	for i, s := range subjects {
		wg.Go(func() { healed[i], errs[i] = resetOne(ctx, e, s.kinds, s.t, s.name) })
	}
	wg.Wait()
	out := map[string][]string{}
	for i, s := range subjects {
		if len(healed[i]) > 0 {
			out[s.name] = healed[i]
		}
	}
	return out, errors.Join(errs...)
}

// resetOne runs kinds' resets on one node (or the clients), twice for
// those that failed the first time.
func resetOne(ctx context.Context, e *Env, kinds []fault, t Target, name string) ([]string, error) {
	var healed []string
	var errs []error
	for pass := 0; pass < 2 && len(kinds) > 0; pass++ {
		var failed []fault
		errs = nil
		for _, k := range kinds {
			ok, err := k.Reset(ctx, e, t)
			if err != nil {
				failed = append(failed, k)
				errs = append(errs, fmt.Errorf("nemesis: reset %s on %s: %w", k.Name, name, err))
				continue
			}
			if ok {
				healed = append(healed, k.Name)
			}
		}
		kinds = failed
	}
	return healed, errors.Join(errs...)
}
