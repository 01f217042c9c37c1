package runner

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/spec"
	"github.com/lockcheck/lockcheck/workload"
)

// resolve makes t what runs: the recipe the Spec's lock names when the
// caller gave none, the nemesis list resolved ("all") or the schedule's
// kinds, the lock's name and promise the recipe's, the Spec filled and
// named, and everything checked.
func (t *Test) resolve() error {
	if t.Recipe.Name == "" {
		switch {
		case t.Workload == workload.ShapeRegister:
			t.Recipe = RegisterRecipe()
		case t.Lock != "":
			r, err := LookupRecipe(t.Lock)
			if err != nil {
				return fmt.Errorf("--lock: %w", err)
			}
			t.Recipe = r
		}
	}
	if t.Schedule != nil {
		if err := t.Schedule.Validate(); err != nil {
			return err
		}
		t.Nemesis = t.Schedule.Kinds()
	} else {
		kinds, err := nemesis.ParseKinds(strings.Join(t.Nemesis, ","))
		if err != nil {
			return err
		}
		t.Nemesis = kinds
	}
	t.Lock, t.Promise = t.Recipe.Name, string(t.Recipe.Promise)
	t.defaults()
	return t.Validate()
}

// configKeys are the settings the meta line's config always says (the
// history format's documented keys); the others are said when set away
// from their zero.
var configKeys = []string{"workload", "clients", "locks", "time", "ttl", "interval"}

// notInConfig are the Spec's settings the meta line says elsewhere (its
// own fields) or that say nothing about the run.
var notInConfig = []string{"test", "lock", "promise", "nemesis", "seed", "store", "no-wait"}

// meta is the run's meta line without what the cluster says (Run adds it):
// the Spec as its JSON (what replay reads back), and its settings as text
// in config, from the Spec's field table.
func (t *Test) meta() (history.Meta, error) {
	raw, err := json.Marshal(t.Spec)
	if err != nil {
		return history.Meta{}, err
	}
	m := history.Meta{
		Test: t.Name, Lock: t.Recipe.Name, Promise: t.Recipe.Promise, Nemesis: t.Nemesis, Seed: t.Seed,
		Faults: nemesis.Styles(t.Nemesis), Spec: raw,
		Config: map[string]string{history.ConfigProcesses: history.ProcessesPerClient},
	}
	for _, f := range spec.Fields {
		if slices.Contains(notInConfig, f.Flag) || (!slices.Contains(configKeys, f.Flag) && f.IsZero(&t.Spec)) {
			continue
		}
		m.Config[f.Flag] = f.Get(&t.Spec)
	}
	if t.pins != nil {
		m.Config["pins"] = pinsString(t.pins)
	}
	if t.dcs != nil {
		m.Config["client-dcs"] = pinsString(t.dcs)
	}
	return m, nil
}

// SpecOf is the Spec of a stored run, from its meta line: the spec it
// records, or, in a history written before the meta line carried one, its
// config read the way it was written (workload, clients, locks, time, ttl,
// interval, pins, consistency, retire-stuck, skew; the rest the defaults).
func SpecOf(m history.Meta) (spec.Spec, error) {
	s := spec.Defaults()
	if len(m.Spec) > 0 {
		if err := json.Unmarshal(m.Spec, &s); err != nil {
			return s, fmt.Errorf("meta line: %w", err)
		}
		return s, nil
	}
	s.Name, s.Lock, s.Promise, s.Nemesis, s.Seed = m.Test, m.Lock, string(m.Promise), m.Nemesis, m.Seed
	for _, k := range []string{"workload", "clients", "locks", "time", "ttl", "interval", history.ConfigRetireStuck} {
		v, ok := m.Config[k]
		if !ok {
			continue
		}
		f, _ := spec.Lookup(k)
		if err := f.Set(&s, v); err != nil {
			return s, fmt.Errorf("meta line's config: %w", err)
		}
	}
	s.PinClients = m.Config["pins"] != ""
	s.DCLocal = m.Config["consistency"] == "local"
	if sk := m.Config["skew"]; sk != "" {
		lo, hi, _ := strings.Cut(sk, "..")
		var err1, err2 error
		s.SkewMin, err1 = time.ParseDuration(lo)
		s.SkewMax, err2 = time.ParseDuration(hi)
		if err1 != nil || err2 != nil {
			return s, fmt.Errorf("meta line's config: skew %q: want MIN..MAX", sk)
		}
	}
	return s, nil
}
