package nemesis

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// client-kill asks the clients for the target and restart delay the run
// set, each kill within the in-flight bound, and its lines pair up: the
// start names who died and what it did, the stop the fresh process. A
// replayed step kills at the recorded target, down as long.
func TestClientKill(t *testing.T) {
	ops, cl := runKills(t, 600*time.Millisecond, WithKinds(ClientKill), WithSeed(5), WithClientKill(30*time.Millisecond, KillTargetAcquire))
	if len(cl.kills) == 0 {
		t.Fatal("no client killed")
	}
	for _, k := range cl.kills {
		if k.in != KillTargetAcquire || k.restart != 30*time.Millisecond || k.delay < 0 || k.delay >= killInFlightMax {
			t.Errorf("kill asked %+v, want acquire, 30ms, a delay below %v", k, killInFlightMax)
		}
	}
	starts, stops := 0, 0
	for _, op := range ops {
		switch op.F {
		case history.StartF(ClientKill):
			starts++
			var v history.ClientKillStart
			if err := json.Unmarshal(op.Value, &v); err != nil || v.InFlight != KillTargetAcquire || v.RestartMS != 30 {
				t.Errorf("start line %s (%v)", op.Value, err)
			}
		case history.StopF(ClientKill):
			stops++
			var v history.ClientKillStop
			if err := json.Unmarshal(op.Value, &v); err != nil || v.Process == 0 {
				t.Errorf("stop line %s (%v)", op.Value, err)
			}
		}
	}
	if starts == 0 || starts != stops {
		t.Errorf("%d start lines, %d stop lines", starts, stops)
	}

	// Replayed: the step's value, not the run's settings.
	sched, err := ScheduleFromHistory(ops)
	if err != nil {
		t.Fatal(err)
	}
	sched.Steps = sched.Steps[:1]
	ops2, cl2 := runKills(t, 600*time.Millisecond, WithSchedule(sched), WithClientKill(time.Second, KillTargetRelease))
	if len(cl2.kills) != 1 || cl2.kills[0].in != KillTargetAcquire || cl2.kills[0].restart != 30*time.Millisecond {
		t.Errorf("replayed kills %+v, want one at acquire, down 30ms", cl2.kills)
	}
	if len(ops2) == 0 {
		t.Error("replay wrote nothing")
	}
}

// A restart delay or target that makes no sense is one line before the run.
func TestClientKillRefused(t *testing.T) {
	ts, _ := fakeCluster(3)
	for _, tt := range []struct {
		restart time.Duration
		target  string
		want    string
	}{
		{-time.Second, KillTargetAny, "restart delay -1s is negative"},
		{time.Second, "sometimes", `unknown target "sometimes"`},
	} {
		_, err := New(ts, &memRec{}, WithKinds(ClientKill), WithClients(&fakeClients{n: 4, clocks: map[int]time.Duration{}}), WithClientKill(tt.restart, tt.target))
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v %q: %v, want one line with %q", tt.restart, tt.target, err, tt.want)
		}
	}
	if slicesContains(All(), ClientKill) {
		t.Error("client-kill is in all: a lock with no TTL would be stuck in every run of all")
	}
}

// runKills runs a nemesis over fake clients for d.
func runKills(t *testing.T, d time.Duration, opts ...Option) ([]history.Op, *fakeClients) {
	t.Helper()
	ts, _ := fakeCluster(3)
	rec := &timedRec{}
	rec.Append(history.Op{Process: history.NemesisProcess, Type: history.Info, F: history.FMeta}) // time 0
	cl := &fakeClients{n: 4, clocks: map[int]time.Duration{}}
	n, err := New(ts, rec, append([]Option{WithInterval(10 * time.Millisecond), WithClients(cl)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := n.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Heal(context.Background()); err != nil {
		t.Fatal(err)
	}
	return rec.all(), cl
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
