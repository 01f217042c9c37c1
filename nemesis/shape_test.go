package nemesis

import (
	"context"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

func TestNetBoundsValidate(t *testing.T) {
	ok := DefaultNetBounds
	for _, tt := range []struct {
		name string
		b    NetBounds
		want string // "" valid, else part of the one line
	}{
		{"defaults", ok, ""},
		{"negative delay", NetBounds{DelayMin: -time.Second, DelayMax: time.Second, RateMin: 1, RateMax: 2}, "negative"},
		{"zero delay", NetBounds{DelayMax: time.Second, RateMin: 1, RateMax: 2}, "positive"},
		{"max below min", NetBounds{DelayMin: 2 * time.Second, DelayMax: time.Second, RateMin: 1, RateMax: 2}, "below the minimum"},
		{"jitter above delay", NetBounds{DelayMin: 10 * time.Millisecond, DelayMax: time.Second, Jitter: 20 * time.Millisecond, RateMin: 1, RateMax: 2}, "above the delay"},
		{"negative jitter", NetBounds{DelayMin: time.Second, DelayMax: time.Second, Jitter: -1, RateMin: 1, RateMax: 2}, "negative"},
		{"rate zero", NetBounds{DelayMin: time.Second, DelayMax: time.Second}, "rate 0"},
		{"rate max below min", NetBounds{DelayMin: time.Second, DelayMax: time.Second, RateMin: 10, RateMax: 5}, "below the minimum"},
	} {
		err := tt.b.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want one with %q", tt.name, err, tt.want)
		case err != nil && strings.Contains(err.Error(), "\n"):
			t.Errorf("%s: more than one line: %q", tt.name, err)
		}
	}
	// New refuses bad bounds before anything starts.
	ts, _ := fakeCluster(3)
	if _, err := New(ts, &memRec{}, WithKinds(NetDelay), WithGateway("10.0.0.1"),
		WithNetBounds(NetBounds{DelayMin: 100 * time.Millisecond, DelayMax: time.Second, Jitter: time.Second, RateMin: 1, RateMax: 2})); err == nil ||
		!strings.Contains(err.Error(), "above the delay") {
		t.Errorf("New with a jitter above the delay: %v", err)
	}
}

// A draw stays in its bounds, is the same for the same seed, and shapes
// what its mode says: chosen nodes' links to the others or to the clients,
// or one pinned coordinator's links to everyone.
func TestShapeDraw(t *testing.T) {
	ts, _ := fakeCluster(3)
	b := NetBounds{DelayMin: 100 * time.Millisecond, DelayMax: 900 * time.Millisecond, Jitter: 40 * time.Millisecond, RateMin: 64, RateMax: 512}
	modes := map[string]bool{}
	for seed := range uint64(40) {
		for _, s := range []*shaper{{kind: NetDelay, delay: true}, {kind: NetRate, rate: true}, {kind: CoordNetDelay, delay: true, coord: true}} {
			e := &Env{Targets: ts, Gateway: "10.0.0.1", Net: b, Pins: testPins, Sched: rand.New(rand.NewPCG(seed, 1))}
			v, err := s.draw(e)
			if err != nil {
				t.Fatal(err)
			}
			e2 := &Env{Targets: ts, Gateway: "10.0.0.1", Net: b, Pins: testPins, Sched: rand.New(rand.NewPCG(seed, 1))}
			if v2, _ := s.draw(e2); !reflect.DeepEqual(v, v2) {
				t.Fatalf("%s seed %d: two draws differ: %+v, %+v", s.kind, seed, v, v2)
			}
			sh := v.Shape
			if s.delay && (sh.DelayMS < 100 || sh.DelayMS > 900 || sh.JitterMS < 0 || sh.JitterMS > 40 || sh.RateKbit != 0) {
				t.Errorf("%s: shaping %+v out of bounds %+v", s.kind, sh, b)
			}
			if s.rate && (sh.RateKbit < 64 || sh.RateKbit > 512 || sh.DelayMS != 0) {
				t.Errorf("%s: shaping %+v out of bounds %+v", s.kind, sh, b)
			}
			modes[s.kind+" "+v.Mode] = true
			switch v.Mode {
			case "coord":
				if len(v.Links) != 1 || len(v.Links[v.Node]) != 3 {
					t.Errorf("coord shapes %v, want the coordinator's links to the clients and the two others", v.Links)
				}
				if len(v.Clients) == 0 || !slices.Contains(v.Links[v.Node], GatewayName) {
					t.Errorf("coord %+v: its clients, and its link to them, are missing", v)
				}
			case "nodes":
				if len(v.Links) == 0 || len(v.Links) > 2 {
					t.Errorf("nodes mode shapes %v: want one or two nodes, someone left", v.Links)
				}
				for n, peers := range v.Links {
					if slices.Contains(peers, n) || slices.Contains(peers, GatewayName) {
						t.Errorf("nodes mode: %s shapes %v", n, peers)
					}
				}
			case "clients":
				for n, peers := range v.Links {
					if !slices.Equal(peers, []string{GatewayName}) {
						t.Errorf("clients mode: %s shapes %v", n, peers)
					}
				}
			}
		}
	}
	for _, m := range []string{"net-delay nodes", "net-delay clients", "net-rate nodes", "net-rate clients", "coord-net-delay coord"} {
		if !modes[m] {
			t.Errorf("40 seeds never drew %s", m)
		}
	}
}

// A fault shapes the nodes its start line names with the peers' addresses,
// its stop unshapes them, and a replay of the start line shapes the same.
func TestShapeStartStopReplay(t *testing.T) {
	ts, fs := fakeCluster(3)
	rec := &memRec{}
	e := &Env{Targets: ts, Gateway: "10.0.0.1", Net: DefaultNetBounds, Sched: rand.New(rand.NewPCG(3, 1)), rec: rec, Log: slog.New(slog.DiscardHandler)}
	s := &shaper{kind: NetDelay, delay: true}
	stop, err := s.Start(context.Background(), e, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ops := rec.all()
	var v history.ShapeStart
	if err := json.Unmarshal(ops[0].Value, &v); err != nil || ops[0].F != "start-net-delay" {
		t.Fatalf("start line %+v: %v", ops[0], err)
	}
	for i, f := range fs {
		peers := v.Links[ts[i].Name]
		if len(peers) == 0 {
			if len(f.shape.Peers) != 0 {
				t.Errorf("%s shaped, not in the line %+v", f.name, v)
			}
			continue
		}
		if f.shape.Delay != time.Duration(v.Shape.DelayMS)*time.Millisecond || len(f.shape.Peers) != len(peers) {
			t.Errorf("%s shaped %+v, the line says %+v", f.name, f.shape, v)
		}
	}
	if err := stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		if len(f.shape.Peers) != 0 {
			t.Errorf("%s still shaped after the stop: %+v", f.name, f.shape)
		}
	}
	// The replay: another seed, the start line's value as the step's.
	e.Sched = rand.New(rand.NewPCG(99, 1))
	e.step = &Step{Kind: NetDelay, Value: ops[0].Value}
	rec.ops = nil
	stop, err = s.Start(context.Background(), e, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var again history.ShapeStart
	if err := json.Unmarshal(rec.all()[0].Value, &again); err != nil || !reflect.DeepEqual(again, v) {
		t.Errorf("replayed %+v, want %+v (%v)", again, v, err)
	}
	_ = stop(context.Background())
	// A schedule's value with bad bounds is refused, one line.
	e.step = &Step{Kind: NetDelay, Value: []byte(`{"links":{"n1":["n2"]},"mode":"nodes","shape":{"delay_ms":10,"jitter_ms":50}}`)}
	if _, err := s.Start(context.Background(), e, time.Second); err == nil || !strings.Contains(err.Error(), "above the delay") {
		t.Errorf("a schedule's jitter above its delay: %v", err)
	}
}

// Reset finds a shaping an earlier process left (and says so), and finds
// nothing on a node never shaped.
func TestShapeReset(t *testing.T) {
	ts, fs := fakeCluster(2)
	fs[0].shape.Peers, fs[0].shape.Delay = []string{"10.0.0.3"}, time.Second
	s := &shaper{kind: NetDelay, delay: true}
	for i, want := range []bool{true, false} {
		got, err := s.Reset(context.Background(), nil, ts[i])
		if err != nil || got != want {
			t.Errorf("Reset %s = %v, %v; want %v", ts[i].Name, got, err, want)
		}
	}
	if len(fs[0].shape.Peers) != 0 {
		t.Error("Reset left the shaping")
	}
	left, err := HealLeftovers(context.Background(), ts, nil, slog.New(slog.DiscardHandler))
	if err != nil || len(left) != 0 {
		t.Errorf("a second heal found %v, %v", left, err)
	}
	fs[1].shape.Peers, fs[1].shape.RateKbit = []string{"10.0.0.2"}, 64
	left, err = HealLeftovers(context.Background(), ts, nil, slog.New(slog.DiscardHandler))
	if err != nil || len(left) != 1 || left[0].Node != "n2" {
		t.Errorf("HealLeftovers of a leftover rate = %+v, %v", left, err)
	}
}

func TestParseNetBounds(t *testing.T) {
	b, err := ParseNetBounds("", "", "")
	if err != nil || b != DefaultNetBounds {
		t.Errorf("no flags: %+v, %v", b, err)
	}
	b, err = ParseNetBounds("20ms..1s", "", "128..256")
	if err != nil || b.DelayMin != 20*time.Millisecond || b.DelayMax != time.Second || b.Jitter != 20*time.Millisecond || b.RateMin != 128 || b.RateMax != 256 {
		t.Errorf("ParseNetBounds = %+v, %v", b, err)
	}
	for _, bad := range [][3]string{{"1s", "", ""}, {"-1s..1s", "", ""}, {"1s..2s", "2s", ""}, {"", "", "0..0"}, {"", "", "a..b"}, {"", "x", ""}} {
		if _, err := ParseNetBounds(bad[0], bad[1], bad[2]); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseNetBounds(%q) = %v, want one line", bad, err)
		}
	}
}

// coord-net-delay slows the coordinator of a client holding a lock when one
// does (client 0, pinned to n1), whatever the schedule's draw.
func TestCoordNetDelayAimsAtAHolder(t *testing.T) {
	ts, _ := fakeCluster(3)
	for seed := range uint64(10) {
		e := &Env{Targets: ts, Gateway: "10.0.0.1", Net: DefaultNetBounds, Pins: testPins, Clients: &fakeClients{n: 4},
			Sched: rand.New(rand.NewPCG(seed, 1)), Pick: rand.New(rand.NewPCG(seed, 2))}
		v, err := (&shaper{kind: CoordNetDelay, delay: true, coord: true}).draw(e)
		if err != nil {
			t.Fatal(err)
		}
		if v.Node != "n1" || !slices.Equal(v.Clients, []int{0, 3}) {
			t.Errorf("seed %d: slowed %s (clients %v), want n1, the holder's coordinator", seed, v.Node, v.Clients)
		}
	}
}
