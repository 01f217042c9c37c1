package nemesis

import (
	"context"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// writerClients stand for a workload whose holder at the window's start
// (client 0, pinned to n1) is not the next to write: client writer is. Its
// write goes out once the pause's resumed callback returned, and sees what
// met is then (the slowness its coordinator is under).
type writerClients struct {
	fakeClients
	writer int
	none   bool // no client enters a critical section
	met    func() bool
	saw    chan bool
}

func (c *writerClients) PauseHolder(ctx context.Context, extra, stall time.Duration, resumed func()) (history.ClientPauseStart, <-chan struct{}, error) {
	if c.none {
		<-ctx.Done()
		return history.ClientPauseStart{}, nil, ctx.Err()
	}
	done := make(chan struct{})
	go func() {
		time.Sleep(stall)
		if resumed != nil {
			resumed()
		}
		c.saw <- c.met()
		close(done)
	}()
	return history.ClientPauseStart{Client: c.writer, Lock: "l0", MS: stall.Milliseconds()}, done, nil
}

func (f *fakeNode) shapedNow() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.shape.Peers) > 0
}

// Aimed at the write (--aim-write), coord-net-delay and coord-slow-node
// slow the coordinator of the next client to write, before that write
// goes out, not the coordinator of the client holding when the window
// opened; without it they start at once on the holder's (or a drawn)
// coordinator; a replay's step keeps its node.
func TestAimWriteSlowsTheWritersCoordinator(t *testing.T) {
	for _, kind := range []string{CoordNetDelay, CoordSlowNode} {
		t.Run(kind, func(t *testing.T) {
			ts, fs := fakeCluster(3)
			slowed := func(f *fakeNode) bool {
				if kind == CoordNetDelay {
					return f.shapedNow()
				}
				q, _ := f.CPUQuota(context.Background())
				return q > 0
			}
			cl := &writerClients{fakeClients: fakeClients{n: 4}, writer: 1, met: func() bool { return slowed(fs[1]) }, saw: make(chan bool, 1)}
			rec := &memRec{}
			e := &Env{Targets: ts, Gateway: "10.0.0.1", Net: DefaultNetBounds, Slow: DefaultSlowness, Pins: testPins, Clients: cl,
				Sched: rand.New(rand.NewPCG(5, 1)), Pick: rand.New(rand.NewPCG(5, 2)), rec: rec, Log: slog.New(slog.DiscardHandler),
				AimWrite: true}
			var inj Injector = &shaper{kind: CoordNetDelay, delay: true, coord: true}
			if kind == CoordSlowNode {
				inj = &slowNode{aimed: true}
			}
			stop, err := inj.Start(context.Background(), e, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if !<-cl.saw {
				t.Errorf("client 1's write went out before n2, its coordinator, was slowed")
			}
			if slowed(fs[0]) || slowed(fs[2]) {
				t.Errorf("slowed a node other than the writer's coordinator")
			}
			ops := rec.all()
			var line struct {
				Node    string `json:"node"`
				Clients []int  `json:"clients"`
			}
			if len(ops) != 1 || json.Unmarshal(ops[0].Value, &line) != nil || line.Node != "n2" || !slices.Equal(line.Clients, []int{1}) {
				t.Errorf("start line %+v, want it aimed at n2 (client 1)", ops)
			}
			if err := stop(context.Background()); err != nil || slowed(fs[1]) {
				t.Errorf("stop: %v; n2 still slowed: %v", err, slowed(fs[1]))
			}

			// No holder writes within the window: the window does not
			// start, and says why in one line.
			cl.none = true
			if _, err := inj.Start(context.Background(), e, 20*time.Millisecond); err == nil ||
				!strings.Contains(err.Error(), "no holder entered a critical section") {
				t.Errorf("no writer: %v", err)
			}
			for _, f := range fs {
				if slowed(f) {
					t.Errorf("%s slowed with no writer", f.name)
				}
			}

			// Not aimed at the write: at once, no pause asked for.
			cl.none = false
			e.AimWrite = false
			stop, err = inj.Start(context.Background(), e, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-cl.saw:
				t.Errorf("a window not aimed at the write paused a writer")
			default:
			}
			_ = stop(context.Background())
		})
	}
}
