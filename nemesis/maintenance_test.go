package nemesis

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// fakeMaint is a node's tables as the maintenance kind sees them: each
// flush writes an SSTable, a compaction merges SSTables into a new one.
type fakeMaint struct {
	gen      int
	sstables map[string][]string // table -> its SSTables
	off      map[string]bool     // tables with autocompaction off
	gcGrace  map[string]int
	changes  []string
}

func (m *fakeMaint) write(table string, replace []string) string {
	if m.sstables == nil {
		m.sstables = map[string][]string{}
	}
	m.gen++
	f := fmt.Sprintf("/data/%s/nb-%d-big-Data.db", table, m.gen)
	m.sstables[table] = append(slices.DeleteFunc(m.sstables[table], func(s string) bool { return slices.Contains(replace, s) }), f)
	return f
}

func (f *fakeNode) Flush(_ context.Context, table string) error {
	return f.set("flush "+table, !f.killed, func() { f.maint.write(table, nil) })
}
func (f *fakeNode) Compact(_ context.Context, table string) error {
	return f.set("compact "+table, !f.killed, func() { f.maint.write(table, f.maint.sstables[table]) })
}
func (f *fakeNode) CompactFiles(_ context.Context, files []string) error {
	return f.set("compact --user-defined "+strings.Join(files, " "), !f.killed && len(files) > 0, func() {
		table := strings.Split(files[0], "/")[2]
		f.maint.write(table, files)
	})
}
func (f *fakeNode) SSTables(_ context.Context, table string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.maint.sstables[table]), nil
}
func (f *fakeNode) SetAutoCompaction(_ context.Context, table string, on bool) error {
	return f.set(fmt.Sprintf("autocompaction %s %t", table, on), !f.killed, func() {
		if f.maint.off == nil {
			f.maint.off = map[string]bool{}
		}
		f.maint.off[table] = !on
		f.maint.note("autocompaction "+table, !on)
	})
}
func (f *fakeNode) SetGCGrace(_ context.Context, table string, seconds int) error {
	return f.set(fmt.Sprintf("gc-grace %s %d", table, seconds), !f.killed, func() {
		if f.maint.gcGrace == nil {
			f.maint.gcGrace = map[string]int{}
		}
		f.maint.gcGrace[table] = seconds
		f.maint.note("gc-grace "+table, seconds != DefaultGCGrace)
	})
}
func (m *fakeMaint) note(line string, add bool) {
	m.changes = slices.DeleteFunc(m.changes, func(s string) bool { return s == line })
	if add {
		m.changes = append(m.changes, line)
	}
}
func (f *fakeNode) MaintenanceChanges(context.Context) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.maint.changes), nil
}
func (f *fakeNode) UndoMaintenance(ctx context.Context) error {
	changes, _ := f.MaintenanceChanges(ctx)
	for _, c := range changes {
		what, table, _ := strings.Cut(c, " ")
		var err error
		if what == "autocompaction" {
			err = f.SetAutoCompaction(ctx, table, true)
		} else {
			err = f.SetGCGrace(ctx, table, DefaultGCGrace)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// CASSANDRA-19617's operator steps as a schedule: a flush with a mark keeps
// that SSTable out of the later compaction of the newer ones, the
// settings a window changed stay changed until the heal undoes them, and
// every window is a start and a stop line saying what it did.
func TestMaintenanceMarkKeepsTheOlderSSTables(t *testing.T) {
	ts, fs := fakeCluster(3)
	rec := &memRec{}
	step := func(nodes []string, v string) Step {
		return Step{Kind: Maintenance, For: Duration(time.Millisecond), Nodes: nodes, Value: json.RawMessage(v), Overlap: false}
	}
	s := Schedule{Steps: []Step{
		step([]string{"n1"}, `{"gc_grace":5,"op":"gc-grace","table":"lwt_register"}`),
		step([]string{"n3"}, `{"op":"autocompaction-off","table":"system.paxos"}`),
		step([]string{"n3"}, `{"mark":"before","op":"flush","table":"system.paxos"}`),
		step([]string{"n1", "n2", "n3"}, `{"op":"flush","table":"system.paxos"}`),
		step([]string{"n3"}, `{"newer_than":"before","op":"compact","table":"system.paxos"}`),
		step([]string{"n1"}, `{"op":"repair-paxos"}`),
	}}
	// Each step follows the one before it, as the row's do: the run deals
	// them in full and Run returns once the last has ended.
	for i := 1; i < len(s.Steps); i++ {
		s.Steps[i].After = &Follow{Step: i, Phase: Ended}
	}
	n, err := New(ts, rec, WithSchedule(s))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n.Run(ctx); err != nil {
		t.Fatal(err)
	}
	n3 := fs[2]
	if got := n3.maint.sstables["system.paxos"]; len(got) != 2 || got[0] != "/data/system.paxos/nb-1-big-Data.db" {
		t.Errorf("n3's Paxos SSTables %v: want the marked flush's kept and the newer one compacted into one", got)
	}
	var stops []MaintenanceStop
	for _, op := range rec.all() {
		if op.F == history.StopF(Maintenance) {
			var v MaintenanceStop
			if err := json.Unmarshal(op.Value, &v); err != nil {
				t.Fatal(err)
			}
			if v.Error != "" {
				t.Errorf("step failed: %s", v.Error)
			}
			stops = append(stops, v)
		}
	}
	if len(stops) != len(s.Steps) {
		t.Fatalf("%d stop lines for %d steps", len(stops), len(s.Steps))
	}
	if got := stops[2].SSTables["n3"]; !slices.Equal(got, []string{"/data/system.paxos/nb-1-big-Data.db"}) {
		t.Errorf("the mark holds %v", got)
	}
	if got := stops[4].SSTables["n3"]; !slices.Equal(got, []string{"/data/system.paxos/nb-2-big-Data.db"}) {
		t.Errorf("compacted %v: want only the SSTable flushed after the mark", got)
	}
	if !slices.Contains(fs[0].calls, "repair paxos") {
		t.Errorf("n1 did not repair: %v", fs[0].calls)
	}
	// What outlives the windows: autocompaction off on n3, gc_grace on n1.
	for i, want := range []string{"gc-grace lwt_register", "", "autocompaction system.paxos"} {
		got, _ := fs[i].MaintenanceChanges(ctx)
		if want == "" && len(got) != 0 || want != "" && !slices.Equal(got, []string{want}) {
			t.Errorf("%s: changes %v, want %q", fs[i].name, got, want)
		}
	}
	for i, tg := range ts {
		healed, err := (&maintenance{}).Reset(ctx, &Env{}, tg)
		if err != nil || healed != (i != 1) {
			t.Errorf("%s: reset healed %t (%v)", tg.Name, healed, err)
		}
	}
	if n3.maint.off["system.paxos"] || fs[0].maint.gcGrace["lwt_register"] != DefaultGCGrace {
		t.Errorf("after the heal: autocompaction off %v, gc_grace %v", n3.maint.off, fs[0].maint.gcGrace)
	}
}

// A step that cannot be done is refused before the run, in one line.
func TestMaintenanceRefusesBadSteps(t *testing.T) {
	for _, tc := range []struct {
		steps []Step
		want  string
	}{
		{[]Step{{Kind: Maintenance, Nodes: []string{"n1"}, Value: json.RawMessage(`{"op":"defrag"}`)}}, `op "defrag"`},
		{[]Step{{Kind: Maintenance, Nodes: []string{"n1"}, Value: json.RawMessage(`{"op":"flush","tabel":"x"}`)}}, "unknown field"},
		{[]Step{{Kind: Maintenance, Nodes: []string{"n1"}, Value: json.RawMessage(`{"newer_than":"m","op":"compact","table":"system.paxos"}`)}}, "no earlier flush sets there"},
		{[]Step{
			{Kind: Maintenance, Nodes: []string{"n1"}, Value: json.RawMessage(`{"mark":"m","op":"flush","table":"system.paxos"}`)},
			{Kind: Maintenance, Nodes: []string{"n2"}, Value: json.RawMessage(`{"newer_than":"m","op":"compact","table":"system.paxos"}`)},
		}, "on node n2"},
		{[]Step{{Kind: Maintenance, Nodes: []string{"n1"}, Value: json.RawMessage(`{"op":"gc-grace","table":"lwt_register"}`)}}, "gc_grace goes with"},
		{[]Step{{Kind: Maintenance, Nodes: []string{"n1"}, Value: json.RawMessage(`{"gc_grace":5,"op":"gc-grace","table":"system.paxos"}`)}}, "run's keyspace"},
		{[]Step{{Kind: Maintenance, Value: json.RawMessage(`{"mark":"m","op":"flush","table":"t"}`)}}, "name the nodes"},
	} {
		ts, _ := fakeCluster(3)
		_, err := New(ts, &memRec{}, WithSchedule(Schedule{Steps: tc.steps}))
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err %v, want one line with %q", tc.steps[len(tc.steps)-1].Value, err, tc.want)
		}
	}
	// A node that cannot be maintained refuses the kind.
	ts, fs := fakeCluster(2)
	fs[1].lacks = []Capability{CapMaintenance}
	if _, err := New(ts, &memRec{}, WithKinds(Maintenance)); err == nil || !strings.Contains(err.Error(), `n2, which lacks "maintenance"`) {
		t.Errorf("err %v", err)
	}
}

// A drawn window flushes, compacts or repairs the run's keyspace on one
// node and changes no setting.
func TestMaintenanceDrawn(t *testing.T) {
	seen := map[string]bool{}
	for seed := range int64(12) {
		v, fs, stop, _ := startOne(t, Maintenance, seed, &fakeClients{n: 2})
		var op string
		json.Unmarshal(v["op"], &op)
		if !slices.Contains(drawnOps, op) {
			t.Fatalf("seed %d: drawn op %q", seed, op)
		}
		seen[op] = true
		if err := stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			if len(f.maint.changes) > 0 {
				t.Errorf("seed %d: a drawn window left %v on %s", seed, f.maint.changes, f.name)
			}
		}
	}
	if len(seen) != len(drawnOps) {
		t.Errorf("twelve seeds drew only %v", seen)
	}
}
