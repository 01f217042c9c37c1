package nemesis

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/faultcap"
)

// Every row of the table is a whole descriptor: the rest of lockcheck reads
// these fields and nothing else of a kind.
func TestTableRowsAreComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range table {
		if k.Name == "" || seen[k.Name] {
			t.Errorf("kind %q: empty or repeated name", k.Name)
		}
		seen[k.Name] = true
		if !strings.HasPrefix(k.Color, "#") || k.Doc == "" || k.New == nil || k.New() == nil {
			t.Errorf("%s: colour %q, doc %q, injector: want all", k.Name, k.Color, k.Doc)
		}
		for _, v := range []any{k.StartValue, k.StopValue} {
			// A value is declared in history when other packages read it,
			// else in the kind's own file here.
			if v == nil || reflect.TypeOf(v).Kind() != reflect.Struct ||
				!slices.Contains([]string{"github.com/lockcheck/lockcheck/history", "github.com/lockcheck/lockcheck/nemesis"}, reflect.TypeOf(v).PkgPath()) {
				t.Errorf("%s: value %T, want a struct of package history or nemesis", k.Name, v)
			}
		}
		if k.Scope == ScopeNode && len(k.Needs) == 0 {
			t.Errorf("%s: a node kind that needs nothing of a node", k.Name)
		}
		if k.Scope == ScopeClient && (len(k.Needs) > 0 || k.Pins) {
			t.Errorf("%s: a client kind with node needs %v or pins", k.Name, k.Needs)
		}
		for _, c := range k.Needs {
			if faultcap.Doc(c) == "" {
				t.Errorf("%s needs %q, which has no doc (faultcap)", k.Name, c)
			}
		}
	}
}

// `all` is derived from the descriptors: kinds needing no more than every
// backend offers, and no pins. It stays the list it was before the
// descriptors.
func TestAllIsDerived(t *testing.T) {
	tests := []struct {
		name string
		k    Kind
		in   bool
	}{
		{"needs iptables", Kind{Needs: []Capability{CapIPTables}}, true},
		{"needs the baseline", Kind{Needs: Baseline}, true},
		{"client kind", Kind{Scope: ScopeClient}, true},
		{"needs power", Kind{Needs: []Capability{CapPower, CapRestart}}, false},
		{"needs a capability of the future", Kind{Needs: []Capability{"membership"}}, false},
		{"aimed by pins", Kind{Needs: []Capability{CapClock}, Pins: true}, false},
	}
	for _, tt := range tests {
		if got := tt.k.inAll(); got != tt.in {
			t.Errorf("%s: in all %v, want %v", tt.name, got, tt.in)
		}
	}
	want := []string{Partition, Pause, Kill, Clock, ClientPause, ClientClock, Loss, ClientGCStall}
	if got := All(); !slices.Equal(got, want) {
		t.Errorf("All() = %v, want %v", got, want)
	}
	for _, name := range []string{CoordPartition, CoordClock} {
		if !Aimed(name) {
			t.Errorf("%s not aimed", name)
		}
	}
	if Aimed(Partition) || Aimed("gc") {
		t.Error("partition or an unknown kind aimed")
	}
}

// A node that lacks a capability a kind needs refuses it before the run,
// with one line naming the kind, the node and the capability; the
// backends' own knowledge is only what they declare.
func TestCapabilityRefusals(t *testing.T) {
	tests := []struct {
		name  string
		lacks []Capability
		kinds []string
		want  []string // one line each: what it must say
	}{
		{"docker node serves every baseline kind", nil, All(), nil},
		{"no lazy filesystem: power kinds refused", []Capability{CapPower}, []string{Partition, PowerLoss, RackPowerLoss},
			[]string{`power-loss cannot run on node n2, which lacks "power"`, `rack-power-loss cannot run on node n2, which lacks "power"`}},
		{"host without a start command", []Capability{CapRestart}, []string{Kill, Pause},
			[]string{`kill cannot run on node n2, which lacks "restart": `}},
		{"host without iptables: every iptables kind, coord-partition too", []Capability{CapIPTables}, []string{Partition, Loss, CoordPartition, Clock},
			[]string{`partition cannot run on node n2, which lacks "iptables"`, `loss cannot run on node n2, which lacks "iptables"`, `coord-partition cannot run on node n2, which lacks "iptables"`}},
		{"host without libfaketime: coord-clock too", []Capability{CapClock}, []string{Clock, CoordClock, ClientClock},
			[]string{`clock cannot run on node n2, which lacks "clock"`, `coord-clock cannot run on node n2, which lacks "clock"`}},
		{"client kinds need nothing of a node", []Capability{CapIPTables, CapClock, CapSignals, CapRestart, CapPower}, []string{ClientPause, ClientClock}, nil},
	}
	cl := &fakeClients{n: 4, clocks: map[int]time.Duration{}}
	for _, tt := range tests {
		ts, fs := fakeCluster(3)
		fs[1].lacks = tt.lacks
		for _, check := range []struct {
			how string
			err error
		}{
			{"CheckNode", CheckNode("n2", ts[1].Node.Capabilities(), tt.kinds)},
			{"New", func() error {
				_, err := New(ts, &memRec{}, WithKinds(tt.kinds...), WithClients(cl), WithPins(testPins))
				return err
			}()},
		} {
			if len(tt.want) == 0 {
				if check.err != nil {
					t.Errorf("%s, %s: %v", tt.name, check.how, check.err)
				}
				continue
			}
			if check.err == nil {
				t.Errorf("%s, %s: no refusal", tt.name, check.how)
				continue
			}
			lines := strings.Split(check.err.Error(), "\n")
			if check.how == "CheckNode" && len(lines) != len(tt.want) {
				t.Errorf("%s, %s: %d lines %q, want %d", tt.name, check.how, len(lines), lines, len(tt.want))
			}
			for _, w := range tt.want {
				if !slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, w) }) {
					t.Errorf("%s, %s: no line says %q in %q", tt.name, check.how, w, lines)
				}
			}
		}
	}
	// The line says how a node gets what it lacks.
	err := CheckNode("h1", []Capability{CapSignals, CapIPTables, CapClock}, []string{Kill})
	if err == nil || !strings.Contains(err.Error(), "--ssh-start-cmd") {
		t.Errorf("kill on a host without restart: %v, want the flag that gives it", err)
	}
}

// Leftover healing runs on each node the resets of the kinds it can serve
// (a kind it cannot serve never ran there): a host without iptables is
// never asked for its rules.
func TestHealLeftoversSkipsWhatANodeCannotServe(t *testing.T) {
	ts, fs := fakeCluster(2)
	fs[0].lacks = []Capability{CapIPTables}
	fs[0].offset = 2 * time.Second // a clock an earlier run left
	if _, err := HealLeftovers(context.Background(), ts, nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, call := range fs[0].calls {
		if strings.HasPrefix(call, "iptables") {
			t.Errorf("node without iptables was asked %q", call)
		}
	}
	if !slices.ContainsFunc(fs[1].calls, func(c string) bool { return strings.HasPrefix(c, "iptables") }) {
		t.Errorf("node with iptables not reset: calls %v", fs[1].calls)
	}
	if err := fs[0].healthy(); err != nil {
		t.Error(err)
	}
}

// A heal that may move a node gets a window's movements: after a membership
// kind, or on a cluster with spares (a killed run's leftovers); other runs
// keep their budget, and a budget already past it is kept.
func TestHealBudget(t *testing.T) {
	for _, tc := range []struct {
		name   string
		kinds  []string
		spares bool
		budget time.Duration
		want   time.Duration
	}{
		{"no faults", nil, false, 3 * time.Minute, 3 * time.Minute},
		{"node faults only", []string{Partition, Kill}, false, 3 * time.Minute, 3 * time.Minute},
		{"join", []string{Join, Leave}, false, 3 * time.Minute, membershipWait},
		{"replace among others", []string{CoordPartition, Replace}, false, time.Minute, membershipWait},
		{"remove", []string{Remove}, false, 3 * time.Minute, membershipWait},
		{"a longer budget stays", []string{Leave}, false, 20 * time.Minute, 20 * time.Minute},
		{"unknown kind", []string{"no-such-kind"}, false, 3 * time.Minute, 3 * time.Minute},
		{"leftovers on a cluster with spares", nil, true, 3 * time.Minute, membershipWait},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := HealBudget(AnyMembershipKind(tc.kinds) || tc.spares, tc.budget); got != tc.want {
				t.Errorf("HealBudget(%v, spares %v, %v) = %v, want %v", tc.kinds, tc.spares, tc.budget, got, tc.want)
			}
		})
	}
}
