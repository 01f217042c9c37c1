package nemesis

import (
	"context"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Each membership window moves ranges and ends where it began: its start
// line holds the ring before, its stop line the ring after the first
// movement and the ring after (the starting one again).
func TestMembershipWindows(t *testing.T) {
	for _, tc := range []struct {
		kind  string
		moves []string // the node's movements, in order
		moved func(node string, before map[string]string) map[string]string
	}{
		{Join, []string{"join", "decommission"}, func(n string, b map[string]string) map[string]string {
			m := maps.Clone(b)
			m[n] = "UN"
			return m
		}},
		{Leave, []string{"decommission", "join"}, without},
		{Replace, []string{"replace"}, func(_ string, b map[string]string) map[string]string { return b }},
		{Remove, []string{"remove", "join"}, without},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			n, ring, _, rec := memberNemesis(t, tc.kind)
			stop, err := n.kinds[0].Start(context.Background(), &n.env, 10*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			if err := stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			ops := rec.all()
			if len(ops) != 2 || ops[0].F != history.StartF(tc.kind) || ops[1].F != history.StopF(tc.kind) {
				t.Fatalf("lines %+v, want start and stop of %s", ops, tc.kind)
			}
			var start history.MemberStart
			var end history.MemberStop
			if err := json.Unmarshal(ops[0].Value, &start); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(ops[1].Value, &end); err != nil {
				t.Fatal(err)
			}
			before := map[string]string{"n1": "UN", "n2": "UN", "n3": "UN"}
			if !maps.Equal(start.Ring, before) || !maps.Equal(end.Ring, before) {
				t.Errorf("ring before %v, after %v: want %v both", start.Ring, end.Ring, before)
			}
			if want := tc.moved(start.Node, before); !maps.Equal(end.Moved, want) {
				t.Errorf("ring after the first movement %v, want %v", end.Moved, want)
			}
			if tc.kind == Join && start.Node != "n4" || tc.kind != Join && start.Node == "n4" {
				t.Errorf("%s moved %s", tc.kind, start.Node)
			}
			var want []string
			for _, m := range tc.moves {
				want = append(want, m+" "+start.Node)
			}
			if !slices.Equal(ring.moves, want) {
				t.Errorf("movements %v, want %v", ring.moves, want)
			}
			if end.Error != "" || end.MS < end.StreamedMS || ops[0].Node != start.Node {
				t.Errorf("stop %+v on node %q", end, ops[0].Node)
			}
			// The reset finds the ring as it started: nothing to undo.
			if healed, err := n.kinds[0].Reset(context.Background(), &n.env, n.env.Targets[0]); healed || err != nil {
				t.Errorf("reset after the window: healed %v, %v", healed, err)
			}
		})
	}
}

func without(n string, b map[string]string) map[string]string {
	m := maps.Clone(b)
	delete(m, n)
	return m
}

// A ring a killed harness left is reset by any member, and the heal is
// recorded on the node the ring had moved, by what the ring showed, not on
// whichever member's reset ran first.
func TestMembershipResetFindsLeftovers(t *testing.T) {
	for _, tc := range []struct {
		name string
		left func(state map[string]string)
		want history.HealLeftover
	}{
		{"spare joining", func(s map[string]string) { s["n4"] = "UJ" },
			history.HealLeftover{Node: "n4", Healed: []string{Join}, Found: []string{"a spare in the ring, UJ"}}},
		{"spare joined", func(s map[string]string) { s["n4"] = "UN" },
			history.HealLeftover{Node: "n4", Healed: []string{Join}, Found: []string{"a spare in the ring, UN"}}},
		{"member leaving", func(s map[string]string) { s["n2"] = "UL" },
			history.HealLeftover{Node: "n2", Healed: []string{Leave}, Found: []string{"leaving the ring, UL"}}},
		// Killed while leaving, and the harness with it: down and leaving.
		{"member down leaving", func(s map[string]string) { s["n2"] = "DL" },
			history.HealLeftover{Node: "n2", Healed: []string{Leave}, Found: []string{"leaving the ring, DL"}}},
		{"member out", func(s map[string]string) { delete(s, "n2") },
			history.HealLeftover{Node: "n2", Healed: []string{Leave}, Found: []string{"out of the ring"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts, fs := fakeCluster(3)
			ring := newFakeRing("n1", "n2", "n3")
			for _, f := range fs {
				f.ring = ring
			}
			tc.left(ring.state)
			rec := &memRec{}
			healed, err := HealLeftovers(context.Background(), ts, rec, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(healed) != 1 || !reflect.DeepEqual(healed[0], tc.want) {
				t.Errorf("healed %+v, want %+v", healed, tc.want)
			}
			if ops := rec.all(); len(ops) != 1 || ops[0].Node != tc.want.Node || ops[0].F != history.FHealLeftover {
				t.Errorf("recorded %+v, want one heal-leftover on %s", ops, tc.want.Node)
			}
			if !maps.Equal(ring.state, ring.start) {
				t.Errorf("ring %v after the heal, want %v", ring.state, ring.start)
			}
		})
	}
}

// Without a spare every membership kind is refused before the run, one
// line that says how to get one.
func TestMembershipNeedsASpare(t *testing.T) {
	ts, fs := fakeCluster(3)
	for _, f := range fs {
		f.ring = newFakeRing("n1", "n2", "n3")
	}
	for _, k := range []string{Join, Leave, Replace, Remove} {
		_, err := New(ts, &memRec{}, WithKinds(k))
		if err == nil {
			t.Fatalf("%s without a spare: accepted", k)
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "--spares") {
			t.Errorf("%s: refusal %q, want one line naming --spares", k, msg)
		}
	}
	plain, _ := fakeCluster(3) // no membership capability
	_, err := New(plain, &memRec{}, WithKinds(Join), WithSpares([]Target{{Name: "n4", Node: &fakeNode{name: "n4"}}}))
	if err == nil || !strings.Contains(err.Error(), `lacks "membership"`) {
		t.Errorf("join on nodes without the capability: %v", err)
	}
}

// A kill inside a window fails the range movement it lands in (the
// bootstrap is left joining, the decommission leaving): the window waits
// for the ring to be whole, completes the movement, says in its stop line
// what failed and how it was healed, and still ends where it began. When
// the completion fails too, the stop says so and the reset (the heal
// after the run, or a leftover heal) brings the ring back.
func TestMembershipMovementKilled(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kind  string
		fail  string // the movement a kill fails, as the fake ring names it
		down  string // a member left down by a kill when the window starts
		stuck bool   // the completion fails too
		moves []string
		how   string
	}{
		{name: "bootstrap", kind: Join, fail: "join n4", moves: []string{"join n4", "finish n4", "decommission n4"}, how: "bootstrap of n4 failed"},
		{name: "decommission", kind: Leave, fail: "decommission NODE", moves: []string{"decommission NODE", "finish NODE", "join NODE"}, how: "decommission of NODE failed"},
		{name: "source down", kind: Join, down: "n1", moves: []string{"wait n1", "join n4", "decommission n4"}},
		{name: "stuck", kind: Join, fail: "join n4", stuck: true, moves: []string{"join n4", "finish n4"}, how: "bootstrap of n4 failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, ring, spare, rec := memberNemesis(t, tc.kind)
			// The node a leave moves is drawn: name it after the draw.
			node := "n4"
			if tc.kind == Leave {
				node = n.env.Targets[n.env.Sched.IntN(len(n.env.Targets))].Name
				n, _ = New(n.env.Targets, rec, WithKinds(tc.kind), WithSeed(3), WithSpares([]Target{{Name: "n4", Node: spare}}))
			}
			ring.fail = map[string]bool{}
			if tc.fail != "" {
				ring.fail[strings.ReplaceAll(tc.fail, "NODE", node)] = true
			}
			ring.stuck = tc.stuck
			if tc.down != "" {
				ring.state[tc.down] = "DN"
			}
			stop, err := n.kinds[0].Start(context.Background(), &n.env, time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			serr := stop(context.Background())
			if tc.stuck != (serr != nil) {
				t.Errorf("stop: %v, want an error %v", serr, tc.stuck)
			}
			ops := rec.all()
			if len(ops) != 2 {
				t.Fatalf("lines %+v, want a start and a stop", ops)
			}
			var end history.MemberStop
			if err := json.Unmarshal(ops[1].Value, &end); err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, m := range tc.moves {
				want = append(want, strings.ReplaceAll(m, "NODE", node))
			}
			if !slices.Equal(ring.moves, want) {
				t.Errorf("movements %v, want %v", ring.moves, want)
			}
			switch {
			case tc.how == "" && len(end.Resumed) != 0:
				t.Errorf("resumed %q, want nothing", end.Resumed)
			case tc.how != "" && (len(end.Resumed) != 1 || !strings.Contains(end.Resumed[0], strings.ReplaceAll(tc.how, "NODE", node)) || !strings.Contains(end.Resumed[0], "healed by nodetool")):
				t.Errorf("resumed %q, want one line saying %q and how it was healed", end.Resumed, tc.how)
			}
			before := map[string]string{"n1": "UN", "n2": "UN", "n3": "UN"}
			if tc.stuck {
				if end.Error == "" {
					t.Errorf("stop %+v: no error for a movement left half done", end)
				}
				if healed, err := n.kinds[0].Reset(context.Background(), &n.env, n.env.Targets[0]); !healed || err != nil {
					t.Errorf("reset after a stuck movement: healed %v, %v", healed, err)
				}
				if !maps.Equal(ring.state, before) {
					t.Errorf("ring %v after the reset, want %v", ring.state, before)
				}
				return
			}
			if end.Error != "" || !maps.Equal(end.Ring, before) {
				t.Errorf("stop %+v: want no error and the ring back to %v", end, before)
			}
		})
	}
}

// memberNemesis is a nemesis of one membership kind over three fake
// members and the spare n4.
func memberNemesis(t *testing.T, kind string) (*Nemesis, *fakeRing, *fakeNode, *memRec) {
	t.Helper()
	ts, fs := fakeCluster(3)
	ring := newFakeRing("n1", "n2", "n3")
	for _, f := range fs {
		f.ring = ring
	}
	spare := &fakeNode{name: "n4", ring: ring}
	rec := &memRec{}
	n, err := New(ts, rec, WithKinds(kind), WithSeed(3), WithSpares([]Target{{Name: "n4", Node: spare}}))
	if err != nil {
		t.Fatal(err)
	}
	return n, ring, spare, rec
}
