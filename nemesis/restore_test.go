package nemesis

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/faultkind"
	"github.com/lockcheck/lockcheck/history"
)

// The fake's restore: a snapshot keeps the node's data version, a restore
// puts it back (the node is killed and started, as cluster.Node's is).
func (f *fakeNode) Snapshot(_ context.Context, tag string) error {
	return f.set("snapshot "+tag, !f.killed && f.snaps[tag] == 0, func() {
		if f.snaps == nil {
			f.snaps = map[string]int{}
		}
		f.snaps[tag] = f.data + 1 // +1: version 0 is a snapshot too
	})
}
func (f *fakeNode) Snapshots(context.Context) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.killed {
		return nil, fmt.Errorf("%s: not running", f.name)
	}
	return slices.Sorted(maps.Keys(f.snaps)), nil
}
func (f *fakeNode) ClearSnapshot(_ context.Context, tag string) error {
	return f.set("clearsnapshot "+tag, !f.killed, func() { delete(f.snaps, tag) })
}
func (f *fakeNode) RestoreSnapshot(_ context.Context, tag string) (int, int, int, error) {
	err := f.set("restore "+tag, f.snaps[tag] != 0, func() {
		f.data, f.restoring, f.killed, f.chains, f.jumps, f.paused = f.snaps[tag]-1, "", false, nil, nil, false
	})
	return 24, 100, 2, err
}
func (f *fakeNode) Restoring(context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.restoring, nil
}
func (f *fakeNode) ReplicatesAll() bool { return true }

// A window snapshots one node at its start and puts that snapshot back at
// its stop: what the node was written meanwhile is gone, the snapshot
// stays for a later step, and the heal clears it.
func TestRestorePutsTheSnapshotBack(t *testing.T) {
	for seed := range int64(6) {
		v, fs, stop, rec := startOne(t, Restore, seed, &fakeClients{n: 2, clocks: map[int]time.Duration{}})
		var tag string
		json.Unmarshal(v["snapshot"], &tag)
		if !strings.HasPrefix(tag, RestorePrefix) {
			t.Fatalf("seed %d: snapshot %q, want the prefix %s", seed, tag, RestorePrefix)
		}
		node := rec.all()[0].Node
		var f *fakeNode
		for _, n := range fs {
			n.data = 7 // written since the snapshot
			if n.name == node {
				f = n
			} else if len(n.snaps) > 0 {
				t.Errorf("seed %d: %s has snapshots %v, the window was %s's", seed, n.name, n.snaps, node)
			}
		}
		if f == nil || f.snaps[tag] != 1 {
			t.Fatalf("seed %d: node %q, snapshot %q not taken there", seed, node, tag)
		}
		if err := stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if f.data != 0 {
			t.Errorf("seed %d: %s's data after the restore: version %d, want the snapshot's 0", seed, node, f.data)
		}
		ops := rec.all()
		if len(ops) != 2 || ops[1].F != history.StopF(Restore) || ops[1].Node != node {
			t.Fatalf("seed %d: lines %+v", seed, ops)
		}
		var sv RestoreStop
		if err := json.Unmarshal(ops[1].Value, &sv); err != nil || sv.Snapshot != tag || sv.Tables != 24 || sv.Removed != 100 || sv.Commitlog != 2 {
			t.Errorf("seed %d: stop value %s (%v)", seed, ops[1].Value, err)
		}
		if f.snaps[tag] == 0 {
			t.Errorf("seed %d: the stop cleared the snapshot a later step may restore", seed)
		}
		healed, err := (&restore{}).Reset(context.Background(), &Env{}, Target{Name: f.name, Node: f})
		if err != nil || !healed || len(f.snaps) != 0 {
			t.Errorf("seed %d: reset healed %v (%v), snapshots left %v", seed, healed, err, f.snaps)
		}
	}
}

// A schedule's step may restore two nodes together, or a snapshot an
// earlier step took (existing): the later window takes none.
func TestRestoreScheduleTwoNodesAndExisting(t *testing.T) {
	ts, fs := fakeCluster(3)
	rec := &memRec{}
	tag := RestorePrefix + "two"
	s := Schedule{Steps: []Step{
		{Kind: Restore, At: 0, For: Duration(20 * time.Millisecond), Nodes: []string{"n1", "n2"}, Value: json.RawMessage(`{"snapshot":"` + tag + `"}`)},
		{Kind: Restore, At: Duration(60 * time.Millisecond), For: Duration(20 * time.Millisecond), Nodes: []string{"n2"}, Value: json.RawMessage(`{"existing":true,"snapshot":"` + tag + `"}`)},
	}}
	n, err := New(ts, rec, WithSchedule(s))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := n.Run(ctx); err != nil {
		t.Fatal(err)
	}
	var calls []string
	for _, f := range fs {
		f.mu.Lock()
		for _, c := range f.calls {
			if strings.HasPrefix(c, "snapshot") || strings.HasPrefix(c, "restore") {
				calls = append(calls, f.name+" "+c)
			}
		}
		f.mu.Unlock()
	}
	want := []string{"n1 snapshot " + tag, "n1 restore " + tag, "n2 snapshot " + tag, "n2 restore " + tag, "n2 restore " + tag}
	if !slices.Equal(calls, want) {
		t.Errorf("calls %q, want %q", calls, want)
	}
	if err := n.Heal(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		if len(f.snaps) != 0 {
			t.Errorf("%s keeps snapshots %v after the heal", f.name, f.snaps)
		}
	}
}

// A restore step whose snapshot cannot be there when its window starts is
// refused before the run, in one line.
func TestRestoreScheduleRefused(t *testing.T) {
	step := func(nodes []string, value string) Step {
		return Step{Kind: Restore, For: Duration(time.Second), Nodes: nodes, Value: json.RawMessage(value)}
	}
	mine := `{"snapshot":"` + RestorePrefix + `a"}`
	for _, tc := range []struct {
		name  string
		steps []Step
		has   map[string]int // n2's snapshots before the run
		want  string         // "" accepted
	}{
		{"drawn", []Step{step(nil, "")}, nil, ""},
		{"taken by an earlier step", []Step{step([]string{"n2"}, mine), step([]string{"n2"}, `{"existing":true,"snapshot":"`+RestorePrefix+`a"}`)}, nil, ""},
		{"the operator's own", []Step{step([]string{"n2"}, `{"existing":true,"snapshot":"backup-1"}`)}, map[string]int{"backup-1": 1}, ""},
		{"never taken", []Step{step([]string{"n2"}, `{"existing":true,"snapshot":"backup-1"}`)}, map[string]int{"backup-0": 1},
			`schedule step 1: restores snapshot "backup-1" on node n2, which no earlier step takes there and the node does not have (it has: backup-0)`},
		{"node with none", []Step{step([]string{"n2"}, `{"existing":true,"snapshot":"backup-1"}`)}, nil, "(it has: none)"},
		{"taken on another node", []Step{step([]string{"n1"}, mine), step([]string{"n2"}, `{"existing":true,"snapshot":"`+RestorePrefix+`a"}`)}, nil,
			"schedule step 2: restores snapshot"},
		{"an earlier run's", []Step{step([]string{"n2"}, `{"existing":true,"snapshot":"`+RestorePrefix+`b"}`)}, map[string]int{RestorePrefix + "b": 1},
			"the heal before the run clears"},
		{"no node", []Step{step(nil, `{"existing":true,"snapshot":"backup-1"}`)}, nil, "names no node"},
		{"no tag", []Step{step([]string{"n2"}, `{"existing":true}`)}, nil, "names none"},
		{"a shell word", []Step{step([]string{"n2"}, `{"snapshot":"x; rm -rf /"}`)}, nil, "want letters"},
		{"not the heal's", []Step{step([]string{"n2"}, `{"snapshot":"backup-2"}`)}, nil, "does not begin with"},
		{"taken twice", []Step{step([]string{"n2"}, mine), step([]string{"n1"}, mine)}, nil, "which an earlier step takes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts, fs := fakeCluster(3)
			fs[1].snaps = tc.has
			for i := range tc.steps {
				tc.steps[i].At = Duration(time.Duration(i) * 2 * time.Second)
			}
			_, err := New(ts, &memRec{}, WithSchedule(Schedule{Steps: tc.steps}))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == "":
			case err == nil:
				t.Fatalf("accepted, want %q", tc.want)
			case !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n"):
				t.Fatalf("error %q, want one line with %q", err, tc.want)
			}
		})
	}
}

// A harness killed in the middle of a restore leaves the node's data half
// swapped (the marker) and its snapshot: the reset finishes the restore,
// then clears lockcheck's snapshots and no one else's.
func TestRestoreResetFinishesAndClears(t *testing.T) {
	f := &fakeNode{name: "n1", data: 9, restoring: RestorePrefix + "x", snaps: map[string]int{RestorePrefix + "x": 3, "backup-1": 1}}
	healed, err := (&restore{}).Reset(context.Background(), &Env{}, Target{Name: "n1", Node: f})
	if err != nil || !healed {
		t.Fatalf("healed %v, %v", healed, err)
	}
	if f.data != 2 || f.restoring != "" {
		t.Errorf("data version %d, marker %q: the restore was not finished", f.data, f.restoring)
	}
	if !slices.Equal(slices.Sorted(maps.Keys(f.snaps)), []string{"backup-1"}) {
		t.Errorf("snapshots left %v, want the operator's backup-1 only", f.snaps)
	}
	// A healthy node: nothing to do.
	healed, err = (&restore{}).Reset(context.Background(), &Env{}, Target{Name: "n1", Node: f})
	if err != nil || healed {
		t.Errorf("second reset healed %v, %v", healed, err)
	}
	// A node a killed harness left stopped is started (kill's heal).
	f.killed = true
	if healed, err = (&restore{}).Reset(context.Background(), &Env{}, Target{Name: "n1", Node: f}); err != nil || !healed || f.killed {
		t.Errorf("stopped node: healed %v, %v, still stopped %v", healed, err, f.killed)
	}
}

// The cause names the restore only for an anomaly that was still going
// when the restored node came back, and hedges when the node does not
// hold every key.
func TestExplainRestore(t *testing.T) {
	start, _ := json.Marshal(RestoreStart{ReplicatesAll: true, Snapshot: RestorePrefix + "x"})
	stop, _ := json.Marshal(RestoreStop{DownMS: 10_000, Snapshot: RestorePrefix + "x"})
	w := history.FaultWindow{Kind: Restore, Start: 5e9, End: 40e9, Nodes: []string{"n2"}, Value: start, Stop: stop, Closed: true}
	for _, tc := range []struct {
		name     string
		w        func(history.FaultWindow) history.FaultWindow
		end      int64
		want     bool
		contains string
	}{
		{"after the restore", nil, 41e9, true, "n2 was restored from its snapshot " + RestorePrefix + "x taken at 5.000s (Paxos state included; down from 30.000s, serving again by 40.000s): it forgot"},
		{"while it came back", nil, 31e9, true, "forgot"},
		{"before the restore", nil, 29e9, false, ""},
		{"never ends", nil, 1<<63 - 1, true, "fencing token"},
		{"not stopped", func(w history.FaultWindow) history.FaultWindow { w.Closed, w.Stop = false, nil; return w }, 41e9, false, ""},
		{"a share of the keys", func(w history.FaultWindow) history.FaultWindow {
			w.Value, _ = json.Marshal(RestoreStart{Snapshot: RestorePrefix + "x"})
			return w
		}, 41e9, true, "if the lock's key is among those the node replicates"},
	} {
		ww := w
		if tc.w != nil {
			ww = tc.w(w)
		}
		s, ok := explainRestore(ww, faultkind.Anomaly{Kind: faultkind.TokenOrder, Start: 20e9, End: tc.end})
		if ok != tc.want || !strings.Contains(s, tc.contains) {
			t.Errorf("%s: %v %q, want %v with %q", tc.name, ok, s, tc.want, tc.contains)
		}
	}
}

// Two nodes restored together are said as such.
func TestExplainRestoreTwoNodes(t *testing.T) {
	start, _ := json.Marshal(RestoreStart{ReplicatesAll: true, Snapshot: RestorePrefix + "q"})
	stop, _ := json.Marshal(RestoreStop{DownMS: 36_822, Snapshot: RestorePrefix + "q"})
	w := history.FaultWindow{Kind: Restore, Start: 13_813e6, End: 65_636e6, Nodes: []string{"n1", "n2"}, Value: start, Stop: stop, Closed: true}
	s, ok := explainRestore(w, faultkind.Anomaly{Kind: faultkind.TokenOrder, Start: 29e9, End: 67e9})
	want := "n1 and n2 were restored from their snapshot " + RestorePrefix + "q taken at 13.813s (Paxos state included; down from 28.814s, serving again by 65.636s): they forgot"
	if !ok || !strings.Contains(s, want) {
		t.Errorf("%v %q, want %q", ok, s, want)
	}
}
