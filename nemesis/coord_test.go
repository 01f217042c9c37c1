package nemesis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// testPins are four clients round-robin on three nodes, as the runner pins
// them.
var testPins = map[int]string{0: "n1", 1: "n2", 2: "n3", 3: "n1"}

func TestAimedKindsNeedPins(t *testing.T) {
	ts, _ := fakeCluster(3)
	cl := &fakeClients{n: 4, clocks: map[int]time.Duration{}}
	for _, k := range []string{CoordPartition, CoordClock} {
		for _, tc := range []struct {
			name string
			pins map[int]string
			ok   bool
		}{
			{"no pins", nil, false},
			{"every client on one node", map[int]string{0: "n1", 1: "n1"}, false},
			{"round-robin", testPins, true},
		} {
			_, err := New(ts, &memRec{}, WithKinds(k), WithClients(cl), WithPins(tc.pins))
			if (err == nil) != tc.ok {
				t.Errorf("%s, %s: err %v, want ok %v", k, tc.name, err, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "--pin-clients") {
				t.Errorf("%s: %v does not say how to pin", k, err)
			}
		}
		if slices.Contains(All(), k) {
			t.Errorf("all holds %s, which needs pinned clients", k)
		}
	}
}

// startOne starts one fault of kind k on fake nodes and returns its start
// line's value, the nodes and the stop.
func startOne(t *testing.T, k string, seed int64, cl *fakeClients, opts ...Option) (map[string]json.RawMessage, []*fakeNode, Stop, *memRec) {
	t.Helper()
	ts, fs := fakeCluster(3)
	rec := &memRec{}
	n, err := New(ts, rec, append([]Option{WithKinds(k), WithSeed(seed), WithClients(cl), WithPins(testPins), WithGateway("10.0.0.1"), WithLeaseTTL(2 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	stop, err := n.kinds[0].Start(context.Background(), &n.env, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ops := rec.all()
	if len(ops) != 1 || ops[0].F != history.StartF(k) {
		t.Fatalf("lines %+v, want one start-%s", ops, k)
	}
	var v map[string]json.RawMessage
	if err := json.Unmarshal(ops[0].Value, &v); err != nil {
		t.Fatal(err)
	}
	return v, fs, stop, rec
}

func TestCoordPartitionCutsOneCoordinatorOffOneWay(t *testing.T) {
	seen := map[string]bool{}
	for seed := range int64(12) {
		cl := &fakeClients{n: 4, clocks: map[int]time.Duration{}}
		v, fs, stop, _ := startOne(t, CoordPartition, seed, cl)
		var alone string
		var clients []int
		json.Unmarshal(v["node"], &alone)
		json.Unmarshal(v["clients"], &clients)
		seen[alone] = true
		var want []int
		for c, n := range testPins {
			if n == alone {
				want = append(want, c)
			}
		}
		slices.Sort(want)
		if !slices.Equal(clients, want) {
			t.Errorf("seed %d: clients of %s recorded %v, want %v", seed, alone, clients, want)
		}
		if len(cl.held) != 1 || !slices.Equal(cl.held[0], want) {
			t.Errorf("seed %d: clients held at rest %v, want %v", seed, cl.held, want)
		}
		var aloneIP string
		for i, f := range fs {
			if f.name == alone {
				aloneIP = fmt.Sprintf("10.0.0.%d", i+2)
			}
		}
		for _, f := range fs {
			rules := f.rules()
			if f.name == alone {
				if len(rules) > 0 {
					t.Errorf("seed %d: the cut node %s drops %v: it must still hear the others", seed, f.name, rules)
				}
				continue
			}
			want := "LOCKCHECK-COORD-PARTITION: -s " + aloneIP + " -p tcp --dport 7000 -j DROP"
			if !slices.Equal(rules, []string{want}) {
				t.Errorf("seed %d: %s rules %v, want [%s]", seed, f.name, rules, want)
			}
		}
		if err := stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			if len(f.chains) > 0 || len(f.jumps) > 0 {
				t.Errorf("seed %d: %s keeps %v %v after the stop", seed, f.name, f.chains, f.jumps)
			}
		}
	}
	if len(seen) != 3 {
		t.Errorf("cut nodes over 12 seeds: %v, want all three", seen)
	}
}

// The aimed clock skips the holder's coordinator: client 0 holds (on n1),
// so the skew goes to n2 or n3, ahead by more than the lease TTL.
func TestCoordClockSkewsAContendersCoordinatorPastTheLease(t *testing.T) {
	for seed := range int64(8) {
		cl := &fakeClients{n: 4, clocks: map[int]time.Duration{}}
		v, fs, stop, rec := startOne(t, CoordClock, seed, cl)
		var node, offset string
		json.Unmarshal(v["node"], &node)
		json.Unmarshal(v["offset"], &offset)
		if node != "n2" && node != "n3" {
			t.Errorf("seed %d: skewed %s, the holder's coordinator or none", seed, node)
		}
		d, err := time.ParseDuration(offset)
		if err != nil || d <= 2*time.Second || d > 10*time.Second {
			t.Errorf("seed %d: offset %q, want more than the 2s lease, seconds only", seed, offset)
		}
		for _, f := range fs {
			if (f.name == node) != (f.offset == d) || (f.name != node && f.offset != 0) {
				t.Errorf("seed %d: %s offset %v", seed, f.name, f.offset)
			}
		}
		if err := stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			if f.offset != 0 {
				t.Errorf("seed %d: %s offset %v after the stop", seed, f.name, f.offset)
			}
		}
		if ops := rec.all(); ops[len(ops)-1].F != history.StopF(CoordClock) {
			t.Errorf("seed %d: last line %s", seed, ops[len(ops)-1].F)
		}
	}
}

// Given bounds, coord-clock's ahead is drawn between them, not from the
// lease TTL: a lock whose cell outlives its lease needs a skew past the cell.
func TestCoordClockSkewBounds(t *testing.T) {
	lo, hi := 7*time.Second, 9*time.Second
	var offsets []time.Duration
	for seed := range int64(8) {
		cl := &fakeClients{n: 4, clocks: map[int]time.Duration{}}
		v, fs, stop, _ := startOne(t, CoordClock, seed, cl, WithCoordSkew(lo, hi))
		var offset, node string
		json.Unmarshal(v["offset"], &offset)
		json.Unmarshal(v["node"], &node)
		d, err := time.ParseDuration(offset)
		if err != nil || d < lo || d > hi {
			t.Errorf("seed %d: offset %q, want %v..%v", seed, offset, lo, hi)
		}
		for _, f := range fs {
			if f.name == node && f.offset != d {
				t.Errorf("seed %d: %s set %v, recorded %v", seed, f.name, f.offset, d)
			}
		}
		offsets = append(offsets, d)
		if err := stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if slices.Min(offsets) == slices.Max(offsets) {
		t.Errorf("offsets over 8 seeds all %v: not drawn", offsets[0])
	}
	ts, _ := fakeCluster(3)
	_, err := New(ts, &memRec{}, WithKinds(CoordClock), WithPins(testPins), WithCoordSkew(9*time.Second, 7*time.Second))
	if err == nil || !strings.Contains(err.Error(), "coord-clock skew") {
		t.Errorf("reversed coord-clock skew bounds: %v, want refused", err)
	}
}

// iptables takes chain names of at most 28 characters: every kind's chain
// must fit, the longest names included.
func TestChainNamesFitIptables(t *testing.T) {
	for _, k := range Kinds {
		if c := chainOf(k); len(c) > 28 {
			t.Errorf("chain %s of %s: %d characters, iptables takes 28", c, k, len(c))
		}
	}
}

// A node whose container is stopped (killed, or out of the ring during a
// leave window), or stops while its rule goes in (a leaver's, as its
// decommission ends), is passed over by every cut: the fault starts on the
// others, its record says the node took no rule, and the heal succeeds. A
// host whose JVM is down but which runs commands (over SSH) takes its rule
// and loses it at the heal; a cut all of whose nodes are stopped fails.
func TestCutsPassOverAStoppedNode(t *testing.T) {
	for _, tc := range []struct {
		kind  string
		given string // the cut as a schedule gives it, n2 in it
		dcs   bool
		whole Grudge // the cut on every node
	}{
		{kind: Partition, given: `{"kind":"isolate","grudge":{"n1":["n2"],"n2":["n1","n3"],"n3":["n2"]}}`,
			whole: Grudge{"n1": {"n2"}, "n2": {"n1", "n3"}, "n3": {"n2"}}},
		{kind: Loss, given: `{"mode":"nodes","probability":0.2,"drops":{"n1":["n2"],"n2":["n1"],"n3":["n1"]}}`,
			whole: Grudge{"n1": {"n2"}, "n2": {"n1"}, "n3": {"n1"}}},
		{kind: DCPartition, dcs: true, given: `{"mode":"both","dcs":{"dc1":["n1","n2"],"dc2":["n3","n4"]},` +
			`"grudge":{"n1":["n3","n4"],"n2":["n3","n4"],"n3":["n1","n2"],"n4":["n1","n2"]}}`,
			whole: Grudge{"n1": {"n3", "n4"}, "n2": {"n3", "n4"}, "n3": {"n1", "n2"}, "n4": {"n1", "n2"}}},
		{kind: CoordPartition, given: `{"node":"n1"}`, whole: Grudge{"n2": {"n1"}, "n3": {"n1"}}},
	} {
		for _, how := range []string{"stopped", "stops meanwhile", "jvm down"} {
			t.Run(tc.kind+"/"+how, func(t *testing.T) {
				ts, fs := fakeCluster(3)
				if tc.dcs {
					ts, fs = twoDCs()
				}
				n2 := fs[1]
				n2.killed, n2.stopsAtChange, n2.jvmDown = how == "stopped", how == "stops meanwhile", how == "jvm down"
				rec := &memRec{}
				opts := []Option{WithKinds(tc.kind), WithGateway("10.0.0.1"),
					WithSchedule(Schedule{Steps: []Step{{Kind: tc.kind, Value: []byte(tc.given)}}})}
				if tc.kind == CoordPartition {
					opts = append(opts, WithClients(&fakeClients{n: 4, clocks: map[int]time.Duration{}}), WithPins(testPins))
				}
				n, err := New(ts, rec, opts...)
				if err != nil {
					t.Fatal(err)
				}
				n.env.step = &n.schedule.Steps[0]
				stop, err := n.kinds[0].Start(context.Background(), &n.env, time.Second)
				n.env.step = nil
				if err != nil {
					t.Fatalf("start with n2 %s: %v", how, err)
				}
				ops := rec.all()
				if len(ops) != 1 || ops[0].F != history.StartF(tc.kind) {
					t.Fatalf("lines %+v, want one start", ops)
				}
				var v struct {
					Grudge Grudge `json:"grudge"`
					Drops  Grudge `json:"drops"`
				}
				if err := json.Unmarshal(ops[0].Value, &v); err != nil {
					t.Fatal(err)
				}
				got := v.Grudge
				if tc.kind == Loss {
					got = v.Drops
				}
				want := maps.Clone(tc.whole)
				if how != "jvm down" {
					delete(want, "n2")
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("recorded grudge %v, want %v", got, want)
				}
				for _, f := range fs {
					if took := len(f.rules()) == 1; took != (len(want[f.name]) > 0) {
						t.Errorf("%s rules %v, grudge %v", f.name, f.rules(), want[f.name])
					}
					if strings.Contains(ops[0].Node, f.name) != (len(want[f.name]) > 0) {
						t.Errorf("start line's nodes %q, grudge %v", ops[0].Node, want)
					}
				}
				if err := stop(context.Background()); err != nil {
					t.Errorf("stop with n2 %s: %v", how, err)
				}
				for _, f := range fs {
					if len(f.chains) > 0 || len(f.jumps) > 0 {
						t.Errorf("%s keeps %v %v after the stop", f.name, f.chains, f.jumps)
					}
				}
			})
		}
	}
	t.Run("nothing to cut", func(t *testing.T) {
		ts, fs := fakeCluster(3)
		fs[0].killed = true
		n, err := New(ts, &memRec{}, WithKinds(Partition), WithSchedule(Schedule{Steps: []Step{{Kind: Partition, Value: []byte(`{"kind":"isolate","grudge":{"n1":["n2","n3"]}}`)}}}))
		if err != nil {
			t.Fatal(err)
		}
		n.env.step = &n.schedule.Steps[0]
		if _, err := n.kinds[0].Start(context.Background(), &n.env, time.Second); !errors.Is(err, errNothingCut) {
			t.Errorf("start with its one node stopped: %v, want %v", err, errNothingCut)
		}
	})
}
