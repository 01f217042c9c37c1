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
)

// Limits of a run's settings (Validate).
const (
	MaxClients = 100
	MaxLocks   = 100
	MinTTL     = time.Second
)

// Spec is one run's settings. Its JSON form (MarshalJSON: keys are the
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
	// NoWait refuses a cluster another process holds instead of waiting
	// until it is free.
	NoWait bool `json:"no-wait"`
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
	if s.RetireStuck && s.Workload == "register" {
		errs = append(errs, errors.New("--retire-stuck: the register workload takes no lock, so none can be stuck"))
	}
	return errors.Join(errs...)
}
