// Package spec is a run's specification: every setting of a lockcheck run
// that can be written down (the lock's name, the workload, the faults, the
// clients, the times, the seed...), with its one default and its
// validation. It is what `lockcheck run`'s flags fill (their names, defaults
// and help come from Fields), what the Go API's options set, what
// runner.Run takes, what a scenario row produces, and what a history's meta
// line records, so that `lockcheck replay` and `shrink` run it again from
// the line alone.
//
// The package is a leaf: it imports only the standard library, so that
// every package (the runner, the nemesis, the lock drivers) can take its
// defaults from here. Rules that need another package's knowledge (which
// fault kinds exist, which recipes take --dc-local) are the runner's.
package spec

import (
	"errors"
	"fmt"
	"time"
)

// Defaults of the settings a lower package also has a default for: those
// packages take theirs from here (nemesis, httplock, workload), so that a
// setting has one default.
const (
	DefaultTTL        = 3 * time.Second
	DefaultInterval   = 10 * time.Second
	DefaultPauseExtra = 3 * time.Second
	DefaultClients    = 5
	DefaultWorkload   = "cycle"
	// DefaultAcquireTimeout bounds one acquire; liveness counts
	// availability with it.
	DefaultAcquireTimeout = 5 * time.Second
	// DefaultKillRestart is how long a client killed by client-kill stays
	// down before a fresh process of it starts: about what a supervisor
	// takes to restart a crashed application instance.
	DefaultKillRestart = 2 * time.Second
	DefaultKillTarget  = "any"
)

// Limits of a run's settings (Validate).
const (
	MaxClients = 100
	MaxLocks   = 100
	MinTTL     = time.Second
)

// Spec is one run's settings, each a field here and a row of Fields
// below (a new setting is both, then its use). Its JSON form (MarshalJSON: keys are the
// `lockcheck run` flags' names, durations Go duration strings) is the
// history's meta line's "spec". Start from Defaults: Fill sets the fields
// whose zero means nothing (Clients, Locks, Time, Interval, TTL,
// HealTimeout, Store, Workload) from it and takes Quiet and PauseExtra as
// given.
type Spec struct {
	// Name names the run in the store (default "<lock>-<nemesis>[-<workload>]").
	Name string `json:"test"`
	// Lock is the lock's name: a recipe of the registry (`run --lock`), or
	// the name a plug-in's or a lock service's runs are stored under.
	Lock string `json:"lock"`
	// Promise is what the lock promises: "mutex" or "fenced".
	Promise string `json:"promise"`
	// Workload is the clients' shape: "cycle" (short holds), "leader"
	// (terms of many seconds with heartbeats) or "register" (no lock:
	// Cassandra's LWT as a compare-and-set register).
	Workload string `json:"workload"`
	// Nemesis are the fault kinds (nemesis.Kinds), or "all" before the
	// runner resolves it.
	Nemesis []string `json:"nemesis"`
	Clients int      `json:"clients"`
	Locks   int      `json:"locks"` // lock names
	// Time is how long the clients and the nemesis run.
	Time time.Duration `json:"time"`
	// Seed seeds every random choice; 0: drawn from the clock.
	Seed  int64  `json:"seed"`
	Store string `json:"store"`

	Interval   time.Duration `json:"interval"`    // mean time between faults
	Quiet      time.Duration `json:"quiet"`       // after healing, before the final reads
	TTL        time.Duration `json:"ttl"`         // the lease recipes' TTL
	PauseExtra time.Duration `json:"pause-extra"` // a paused holder stalls its lease plus this
	// SkewAhead: client-clock sets the contender's clock ahead, not behind.
	SkewAhead bool `json:"skew-ahead"`
	// SkewMin and SkewMax bound client-clock's skew (log-uniform) and
	// coord-clock's ahead (uniform); zero: the nemesis's defaults, 1s..30s
	// and the lease TTL plus 1-3 s.
	SkewMin     time.Duration `json:"skew-min"`
	SkewMax     time.Duration `json:"skew-max"`
	HealTimeout time.Duration `json:"heal-timeout"`
	// NetDelay, NetJitter and NetRate bound the shaping kinds' draws
	// (net-delay, coord-net-delay, net-rate) as their flags spell them:
	// MIN..MAX durations, a duration, MIN..MAX kbit/s; "": the nemesis's
	// defaults. The runner parses and checks them (nemesis.ParseNetBounds).
	NetDelay  string `json:"net-delay"`
	NetJitter string `json:"net-jitter"`
	NetRate   string `json:"net-rate"`
	// SlowCPU, Stall, StallEvery and DiskLatency bound the slowness kinds'
	// draws (slow-node, gc-stall, client-gc-stall, slow-disk) as their
	// flags spell them; "": the nemesis's defaults. The runner parses and
	// checks them (nemesis.ParseSlowness).
	SlowCPU     string `json:"slow-cpu"`
	Stall       string `json:"stall"`
	StallEvery  string `json:"stall-every"`
	DiskLatency string `json:"disk-latency"`
	// AimWrite begins each window of coord-net-delay and coord-slow-node as
	// the next holder enters its critical section, on its coordinator,
	// instead of at once.
	AimWrite bool `json:"aim-write"`
	// PinClients sends every query of client i through node i mod nodes
	// instead of the token-aware replica every client shares: clients then
	// read through different coordinators, which the aimed faults
	// (coord-partition, coord-clock) split.
	PinClients bool `json:"pin-clients"`
	// DCLocal runs the recipe at LOCAL_SERIAL and LOCAL_QUORUM instead of
	// SERIAL and QUORUM.
	DCLocal bool `json:"dc-local"`
	// RetireStuck moves the clients to a fresh lock name when a holder is
	// abandoned with a grant that never expires, so that a lock with no
	// lease goes on being tested after one unknown write instead of
	// staying held to the end.
	RetireStuck bool `json:"retire-stuck"`
	// Deletes makes the register's clients delete keys too (DELETE ... IF
	// value = ?), as often as they insert, so that a key goes back to no
	// row: what a stale write re-applied after a purge shows.
	Deletes bool `json:"deletes"`
	// EveryKind makes a drawn run deal every one of its kinds at least
	// once, running past Time to deal those it has not (one try each):
	// a short run, such as a newcomer's first, still shows every kind.
	EveryKind bool `json:"every-kind"`
	// NoWait refuses a cluster another process holds instead of waiting
	// until it is free.
	NoWait bool `json:"no-wait"`
	// AcquireTimeout bounds one acquire: a library whose one attempt takes
	// seconds needs more. Liveness counts availability with it.
	AcquireTimeout time.Duration `json:"acquire-timeout"`
	// StuckBound is how long a lock left held by a dead holder may go
	// without a grant before liveness calls it stuck (zero: the TTL plus
	// two acquire time-outs); never below the TTL.
	StuckBound time.Duration `json:"stuck-bound"`
	// KillRestart and KillTarget are client-kill's restart delay and
	// target (any, hold, acquire, release).
	KillRestart time.Duration `json:"kill-restart"`
	KillTarget  string        `json:"kill-target"`
}

// Fields are the Spec's settings, in the order `lockcheck run --help` and
// docs/cli.md list them.
var Fields = []Field{
	{Flag: "test", NoFlag: true, Help: "the run's name in the store (default <lock>-<nemesis>[-<workload>])",
		ptr: func(s *Spec) any { return &s.Name }},
	{Flag: "lock", NoFlag: true, Help: "the lock's name: a recipe, or a plug-in's or lock service's name in the store",
		ptr: func(s *Spec) any { return &s.Lock }},
	{Flag: "promise", NoFlag: true, Help: "what the lock promises: mutex or fenced",
		ptr: func(s *Spec) any { return &s.Promise }},
	{Flag: "workload", Help: "the clients' shape: cycle (acquire, write, release) or leader (terms of many seconds, heartbeats, writes as leader); or register: no lock, Cassandra's LWT itself as a compare-and-set register on --locks keys (SERIAL reads, IF NOT EXISTS, IF value = ?), node faults only",
		ptr: func(s *Spec) any { return &s.Workload }, fill: true},
	{Flag: "nemesis", Help: "none, all (every kind but the power kinds and slow-disk, which need a cluster up --lazyfs, the coord kinds, which need --pin-clients, the shaping kinds, and slow-node and gc-stall, which a host over SSH cannot serve), or a comma `list` of the fault kinds",
		ptr: func(s *Spec) any { return &s.Nemesis }},
	{Flag: "clients", Help: fmt.Sprintf("concurrent clients (1..%d)", MaxClients),
		ptr: func(s *Spec) any { return &s.Clients }, fill: true,
		check: func(s *Spec) error { return inRange(s.Clients, 1, MaxClients) }},
	{Flag: "locks", Help: fmt.Sprintf("lock names the clients contend for (1..%d)", MaxLocks),
		ptr: func(s *Spec) any { return &s.Locks }, fill: true,
		check: func(s *Spec) error { return inRange(s.Locks, 1, MaxLocks) }},
	{Flag: "time", Help: "how long the clients and the nemesis run",
		ptr: func(s *Spec) any { return &s.Time }, fill: true,
		check: func(s *Spec) error { return positive(s.Time) }},
	{Flag: "seed", Help: "seed of every random choice (default: from the clock, printed)",
		ptr: func(s *Spec) any { return &s.Seed }},
	{Flag: "store", Help: "the store of runs",
		ptr: func(s *Spec) any { return &s.Store }, fill: true},
	{Flag: "interval", Help: "mean time between faults, and mean fault length",
		ptr: func(s *Spec) any { return &s.Interval }, fill: true,
		check: func(s *Spec) error { return positive(s.Interval) }},
	{Flag: "ttl", Help: fmt.Sprintf("TTL of the lease recipes, a plug-in's and a lock service's grants (at least %v)", MinTTL),
		ptr: func(s *Spec) any { return &s.TTL }, fill: true,
		check: func(s *Spec) error {
			if s.TTL < MinTTL {
				return fmt.Errorf("must be at least %v, got %v", MinTTL, s.TTL)
			}
			return nil
		}},
	{Flag: "quiet", Help: "quiet phase after healing, before the final reads (0: none)",
		ptr:   func(s *Spec) any { return &s.Quiet },
		check: func(s *Spec) error { return notNegative(s.Quiet) }},
	{Flag: "pause-extra", Help: "client-pause: how much longer than its lease a paused holder stalls",
		ptr:   func(s *Spec) any { return &s.PauseExtra },
		check: func(s *Spec) error { return notNegative(s.PauseExtra) }},
	{Flag: "skew-ahead", Help: "client-clock: set the contender's clock ahead instead of behind",
		ptr: func(s *Spec) any { return &s.SkewAhead }},
	{Flag: "skew-min", Help: "client-clock's smallest skew, coord-clock's smallest ahead (with --skew-max; default 1s, and the TTL plus 1s)",
		ptr: func(s *Spec) any { return &s.SkewMin }},
	{Flag: "skew-max", Help: "client-clock's largest skew, coord-clock's largest ahead (with --skew-min; default 30s, and the TTL plus 3s)",
		ptr: func(s *Spec) any { return &s.SkewMax }},
	{Flag: "net-delay", Help: "net-delay and coord-net-delay: the added latency's bounds, MIN..MAX, drawn log-uniform (default 200ms..2s)",
		ptr: func(s *Spec) any { return &s.NetDelay }},
	{Flag: "net-jitter", Help: "net-delay and coord-net-delay: the largest jitter, at most the smallest delay (default 50ms)",
		ptr: func(s *Spec) any { return &s.NetJitter }},
	{Flag: "net-rate", Help: "net-rate: the bandwidth limit's bounds in kbit/s, MIN..MAX, drawn log-uniform (default 64..1024)",
		ptr: func(s *Spec) any { return &s.NetRate }},
	{Flag: "slow-cpu", Help: "slow-node, coord-slow-node: the starved node's share of one core, MIN..MAX (log-uniform) or one value (default 0.02..0.1; at least 0.001, at most 1: under 0.01 the node runs 1 ms of CPU per a longer period)",
		ptr: func(s *Spec) any { return &s.SlowCPU }},
	{Flag: "stall", Help: "gc-stall, coord-gc-stall, client-gc-stall: one stall's length, MIN..MAX (log-uniform) or one value (default 20ms..2s, cut to half the interval when that is shorter; given, it must be shorter than the interval)",
		ptr: func(s *Spec) any { return &s.Stall }},
	{Flag: "stall-every", Help: "gc-stall, coord-gc-stall, client-gc-stall: the mean gap between two stalls of a window (exponential; default 1s)",
		ptr: func(s *Spec) any { return &s.StallEvery }},
	{Flag: "disk-latency", Help: "slow-disk: the latency each write and fsync waits, MIN..MAX (uniform) or one value (default 50ms..500ms)",
		ptr: func(s *Spec) any { return &s.DiskLatency }},
	{Flag: "aim-write", Help: "coord-net-delay, coord-slow-node: begin each window as the next holder enters its critical section (between its read and its write), on that holder's coordinator, so that its write goes through the slowed node (default: at once, on the coordinator of a client holding then)",
		ptr: func(s *Spec) any { return &s.AimWrite }},
	{Flag: "heal-timeout", Help: "how long healing the faults and waiting for a healthy cluster may take (membership faults get more)",
		ptr: func(s *Spec) any { return &s.HealTimeout }, fill: true,
		check: func(s *Spec) error { return positive(s.HealTimeout) }},
	{Flag: "every-kind", Help: "deal every kind of --nemesis at least once: past --time, the kinds not dealt yet get one try each before the run ends (a short run still shows them all; not with --schedule)",
		ptr: func(s *Spec) any { return &s.EveryKind }},
	{Flag: "no-wait", Help: "refuse (exit 2) when another process holds the cluster (a run, lockd's heal, cluster down), instead of waiting until it is free",
		ptr: func(s *Spec) any { return &s.NoWait }},
	{Flag: "pin-clients", Help: "send client i's queries, its lock's and its critical section's writes, through node i mod nodes alone (not the token-aware replica all share); the coord-* faults need it",
		ptr: func(s *Spec) any { return &s.PinClients }},
	{Flag: "retire-stuck", Help: "when a holder is abandoned (its write's outcome unknown) with a grant that never expires, move the clients to a fresh lock name (l0 -> l0.1) instead of leaving them to wait on it to the end",
		ptr: func(s *Spec) any { return &s.RetireStuck }},
	{Flag: "deletes", Help: "register: the clients also delete keys (DELETE ... IF value = ?), as often as they insert, so that a key goes back to no row",
		ptr: func(s *Spec) any { return &s.Deletes }},
	{Flag: "acquire-timeout", Help: "how long one acquire may take before the client gives up on it (a library whose one attempt takes seconds needs more); availability is counted with it",
		ptr: func(s *Spec) any { return &s.AcquireTimeout }, fill: true,
		check: func(s *Spec) error { return positive(s.AcquireTimeout) }},
	{Flag: "stuck-bound", Help: "liveness: how long a lock left held by a dead holder may go without a grant before the run reports it stuck (default: the TTL plus two acquire time-outs; not below --ttl)",
		ptr: func(s *Spec) any { return &s.StuckBound },
		check: func(s *Spec) error {
			if s.StuckBound < 0 || s.StuckBound > 0 && s.StuckBound < s.TTL {
				return fmt.Errorf("%v is below the TTL %v: every lease waited out after its holder died would be called stuck", s.StuckBound, s.TTL)
			}
			return nil
		}},
	{Flag: "kill-restart", Help: "client-kill: how long a killed client stays down before a fresh process of it starts (shorter than --time)",
		ptr: func(s *Spec) any { return &s.KillRestart }, fill: true,
		check: func(s *Spec) error { return notNegative(s.KillRestart) }},
	{Flag: "kill-target", Help: "client-kill: what the killed client is doing: any, hold, acquire or release (any: whichever comes first)",
		ptr: func(s *Spec) any { return &s.KillTarget }, fill: true},
	{Flag: "dc-local", Help: "LWT conditions at LOCAL_SERIAL, commits and reads at LOCAL_QUORUM; on a cluster of several data centres clients are placed in them round-robin either way",
		ptr: func(s *Spec) any { return &s.DCLocal }},
}

// Defaults is a run's settings before the caller or a flag changes them:
// the one place `lockcheck run`'s flags, the public API, a scenario row
// and Fill take their values from.
func Defaults() Spec {
	return Spec{
		Workload:    DefaultWorkload,
		Clients:     DefaultClients,
		Locks:       1,
		Time:        60 * time.Second,
		Store:       "store",
		Interval:    DefaultInterval,
		Quiet:       5 * time.Second,
		TTL:         DefaultTTL,
		PauseExtra:  DefaultPauseExtra,
		HealTimeout: 3 * time.Minute,

		AcquireTimeout: DefaultAcquireTimeout,
		KillRestart:    DefaultKillRestart,
		KillTarget:     DefaultKillTarget,
	}
}

// Fill sets the fields whose zero means nothing (no clients, no time, no
// TTL) from Defaults. Quiet, PauseExtra, the skew bounds and Seed are taken
// as given: zero is no quiet phase, a pause of exactly the lease, the
// nemesis's own bounds, a seed still to draw.
func (s *Spec) Fill() {
	d := Defaults()
	for _, f := range Fields {
		if f.fill && f.isZero(s) {
			f.copyFrom(s, &d)
		}
	}
}

// Validate tells what is wrong with s's settings, one error per field,
// each naming the field as its `lockcheck run` flag (errors.Join: one line
// each).
func (s Spec) Validate() error {
	var errs []error
	for _, f := range Fields {
		if f.check == nil {
			continue
		}
		if err := f.check(&s); err != nil {
			errs = append(errs, fmt.Errorf("--%s %w", f.Flag, err))
		}
	}
	if (s.SkewMin != 0 || s.SkewMax != 0) && (s.SkewMin <= 0 || s.SkewMax < s.SkewMin) {
		errs = append(errs, fmt.Errorf("--skew-min and --skew-max: skew bounds must be 0 < skew-min <= skew-max, got %v and %v", s.SkewMin, s.SkewMax))
	}
	if s.Deletes && s.Workload != "register" {
		errs = append(errs, errors.New("--deletes: only the register workload deletes (a lock's clients release, they do not delete)"))
	}
	if s.RetireStuck && s.Workload == "register" {
		errs = append(errs, errors.New("--retire-stuck: the register workload takes no lock, so none can be stuck"))
	}
	return errors.Join(errs...)
}
