package runner

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/exclusive"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/spec"
	"github.com/lockcheck/lockcheck/workload"
)

func TestDefaultsAreValid(t *testing.T) {
	d := Defaults()
	d.Recipe = memRecipe("mutex", history.PromiseMutex, &memLocks{})
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		spoil func(*Test)
		want  string
	}{
		{"no recipe", func(t *Test) { t.Recipe = Recipe{} }, "no lock recipe"},
		{"clients", func(t *Test) { t.Clients = MaxClients + 1 }, "clients must be"},
		{"locks", func(t *Test) { t.Locks = 0 }, "locks must be"},
		{"time", func(t *Test) { t.Time = -time.Second }, "time must be positive"},
		{"ttl", func(t *Test) { t.TTL = time.Millisecond }, "--ttl must be at least 1s"},
		{"skew reversed", func(t *Test) { t.SkewMin, t.SkewMax = 8*time.Second, 4*time.Second }, "skew bounds must be 0 < skew-min <= skew-max"},
		{"stall past the windows", func(t *Test) {
			t.Nemesis, t.Interval, t.Stall = []string{nemesis.GCStall}, 2*time.Second, "1s..3s"
		}, "stall max 3s: want it shorter than the fault windows"},
		{"quota below the kernel's", func(t *Test) { t.SlowCPU = "0.0005..0.2" }, "slow-node CPU share"},
		{"zero quota", func(t *Test) { t.SlowCPU = "0..0.2" }, "--slow-cpu"},
		{"negative latency", func(t *Test) { t.DiskLatency = "-1ms..1s" }, "--disk-latency"},
		{"jitter above the delay", func(t *Test) { t.NetDelay, t.NetJitter = "100ms..1s", "2s" }, "jitter 2s is above the delay 100ms"},
		{"skew max alone", func(t *Test) { t.SkewMax = 8 * time.Second }, "skew bounds must be 0 < skew-min <= skew-max"},
		{"quiet", func(t *Test) { t.Quiet = -time.Second }, "--quiet must not be negative"},
		{"dc-local on a recipe that ignores it", func(t *Test) { t.DCLocal = true }, "--dc-local: lock mutex does not take LOCAL_SERIAL"},
		{"retire-stuck on the register workload", func(t *Test) { t.RetireStuck, t.Workload = true, workload.ShapeRegister }, "--retire-stuck: the register workload takes no lock"},
		{"aimed fault unpinned", func(t *Test) { t.Nemesis = []string{nemesis.CoordClock} }, "--nemesis coord-clock is aimed by the clients' coordinators: it needs --pin-clients"},
		{"aim at the write without its faults", func(t *Test) { t.Nemesis, t.AimWrite = []string{nemesis.CoordGCStall}, true }, "--aim-write without --nemesis coord-net-delay or coord-slow-node"},
	}
	for _, tt := range tests {
		tc := Defaults()
		tc.Recipe = memRecipe("mutex", history.PromiseMutex, &memLocks{})
		tt.spoil(&tc)
		if err := tc.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}

// Zero fields that mean nothing take the defaults; a zero quiet phase or
// pause extra is what the caller asked for.
func TestFillDefaults(t *testing.T) {
	tc := Test{}
	tc.fillDefaults()
	d := Defaults()
	if tc.Clients != d.Clients || tc.Locks != d.Locks || tc.Time != d.Time || tc.Interval != d.Interval ||
		tc.TTL != d.TTL || tc.HealTimeout != d.HealTimeout || tc.Store != d.Store {
		t.Errorf("filled %+v, defaults %+v", tc, d)
	}
	if tc.Quiet != 0 || tc.PauseExtra != 0 {
		t.Errorf("quiet %v, pause extra %v: zero must stay zero", tc.Quiet, tc.PauseExtra)
	}
}

// fakeEnv is a cluster of n nodes that the runner only records (no faults).
type fakeEnv struct{ n int }

func (e fakeEnv) Targets() []nemesis.Target            { return make([]nemesis.Target, e.n) }
func (fakeEnv) GatewayIP() string                      { return "" }
func (fakeEnv) WaitHealthy(context.Context) error      { return nil }
func (fakeEnv) CopyLogs(context.Context, string) error { return nil }
func (fakeEnv) Describe() map[string]string            { return map[string]string{"paxos": "v2"} }
func (fakeEnv) Keyspace() string                       { return "lockcheck" }
func (fakeEnv) ContactPoints() []string                { return nil }
func (fakeEnv) Lease() exclusive.Store                 { return nil }
func (fakeEnv) Session(context.Context) (*gocql.Session, error) {
	return nil, errors.New("fakeEnv: no CQL")
}
func (fakeEnv) DCs() []string            { return nil }
func (fakeEnv) Spares() []nemesis.Target { return nil }
func (fakeEnv) DCSession(context.Context, string) (*gocql.Session, error) {
	return nil, errors.New("fake")
}
func (fakeEnv) NodeSession(context.Context, string) (*gocql.Session, error) {
	return nil, errors.New("fakeEnv: no CQL")
}

// The meta line records the cluster the run had, not what a flag asked for.
func TestMetaRecordsTheEnv(t *testing.T) {
	tc := Defaults()
	tc.Recipe, tc.Time, tc.Quiet = memRecipe("mutex", history.PromiseMutex, &memLocks{}), 300*time.Millisecond, 0
	out, err := Run(context.Background(), fakeEnv{n: 2}, memStore{t.TempDir()}, tc)
	if err != nil {
		t.Fatal(err)
	}
	h, err := os.ReadFile(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(h), "\n")
	for _, want := range []string{`"nodes":"2"`, `"paxos":"v2"`, `"clients":"5"`} {
		if !strings.Contains(first, want) {
			t.Errorf("meta %s lacks %s", first, want)
		}
	}
}

// The meta line's spec is the run's Spec: read back (SpecOf), it is what
// ran, down to the settings the config leaves out.
func TestMetaIsTheSpec(t *testing.T) {
	tc := Defaults()
	tc.Recipe, tc.Time, tc.Quiet = memRecipe("mutex", history.PromiseMutex, &memLocks{}), 300*time.Millisecond, 0
	tc.Clients, tc.PauseExtra, tc.SkewAhead, tc.Seed, tc.TTL = 2, time.Second, true, 11, 4*time.Second
	out, err := Run(context.Background(), fakeEnv{n: 2}, memStore{t.TempDir()}, tc)
	if err != nil {
		t.Fatal(err)
	}
	ops, err := history.ReadFile(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var m history.Meta
	if err := json.Unmarshal(ops[0].Value, &m); err != nil {
		t.Fatal(err)
	}
	got, err := SpecOf(m)
	if err != nil {
		t.Fatal(err)
	}
	want := tc.Spec
	want.Name, want.Lock, want.Promise = "mutex-none", "mutex", "mutex"
	if !reflect.DeepEqual(got, want) {
		t.Errorf("meta's spec %+v, want %+v", got, want)
	}
	if m.Config["ttl"] != "4s" || m.Config["skew-ahead"] != "true" || m.Config["quiet"] != "" || m.Clients() != 2 {
		t.Errorf("meta's config %v", m.Config)
	}
}

// A node fault kind the cluster cannot serve is refused before the run
// directory exists: one line, nothing stored.
func TestPreflightRefusesBeforeTheRun(t *testing.T) {
	store := t.TempDir()
	for _, tc := range []struct {
		kinds []string
		want  string
	}{
		{[]string{nemesis.Join}, "join: needs a spare node"},
		{[]string{nemesis.DCPartition}, "dc-partition: needs nodes in two data centres"},
	} {
		tt := Defaults()
		tt.Recipe, tt.Time, tt.Nemesis = memRecipe("mutex", history.PromiseMutex, &memLocks{}), 300*time.Millisecond, tc.kinds
		out, err := Run(context.Background(), fakeEnv{n: 3}, memStore{store}, tt)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v, want one line with %q", tc.kinds, err, tc.want)
		}
		if out.Dir != "" {
			t.Errorf("%v: a run directory %s", tc.kinds, out.Dir)
		}
	}
	if entries, _ := os.ReadDir(store); len(entries) > 0 {
		t.Errorf("store holds %d entries after refusals", len(entries))
	}
}

// A Spec that names a recipe of the registry runs it without a Recipe
// value (a replay's); a name the registry lacks is one line naming --lock.
func TestRecipeFromTheSpec(t *testing.T) {
	tc := Defaults()
	tc.Lock = "lease-fenced"
	if err := tc.resolve(); err != nil || tc.Recipe.Name != "lease-fenced" || tc.Recipe.Setup == nil || tc.Promise != string(history.PromiseFenced) {
		t.Errorf("resolved %+v, %v", tc.Recipe, err)
	}
	tc = Defaults()
	tc.Lock = "no-such-lock"
	if err := tc.resolve(); err == nil || !strings.HasPrefix(err.Error(), `--lock: unknown lock "no-such-lock"`) || strings.Contains(err.Error(), "\n") {
		t.Errorf("unknown lock: %v", err)
	}
	tc = Defaults()
	tc.Lock, tc.Nemesis = "lease", []string{"all"}
	if err := tc.resolve(); err != nil || len(tc.Nemesis) < 2 {
		t.Errorf("all: %v, %v", tc.Nemesis, err)
	}
}

// The Spec's names of workloads and its defaults are the lower packages'.
func TestSpecAgreesWithItsPackages(t *testing.T) {
	if spec.DefaultWorkload != workload.ShapeCycle || spec.WorkloadRegister != workload.ShapeRegister {
		t.Errorf("spec's workloads %q, %q; workload's %q, %q", spec.DefaultWorkload, spec.WorkloadRegister, workload.ShapeCycle, workload.ShapeRegister)
	}
	d := Defaults()
	if d.Interval != nemesis.DefaultInterval || d.PauseExtra != nemesis.DefaultClientPauseExtra || d.Clients != workload.DefaultClients {
		t.Errorf("defaults %+v disagree with nemesis's and workload's", d.Spec)
	}
}
