package history

import (
	"slices"
	"testing"
)

func TestFaultEvent(t *testing.T) {
	tests := []struct {
		f         string
		kind      string
		start, ok bool
	}{
		{"start-partition", "partition", true, true},
		{"stop-loss", "loss", false, true},
		{"start-client-pause", "client-pause", true, true},
		{"start-kill-failed", "", false, false},
		{FHeal, "", false, false},
		{FHealLeftover, "", false, false},
		{FMeta, "", false, false},
		{"start-", "", false, false},
	}
	for _, tt := range tests {
		kind, start, ok := FaultEvent(tt.f)
		if kind != tt.kind || start != tt.start || ok != tt.ok {
			t.Errorf("FaultEvent(%q) = %q, %v, %v; want %q, %v, %v", tt.f, kind, start, ok, tt.kind, tt.start, tt.ok)
		}
	}
	if got := StartF("loss"); got != "start-loss" {
		t.Errorf("StartF = %q", got)
	}
	if k, start, ok := FaultEvent(StopF("power-loss")); k != "power-loss" || start || !ok {
		t.Errorf("StopF round trip: %q %v %v", k, start, ok)
	}
}

func TestFaultWindows(t *testing.T) {
	nem := func(tm int64, f, node string) Op {
		return Op{Time: tm, Process: NemesisProcess, Type: Info, F: f, Node: node, Value: []byte(`{"t":` + string(rune('0'+tm%10)) + `}`)}
	}
	ops := []Op{
		nem(0, FMeta, ""),
		nem(1, StartF("pause"), "n1"),
		{Time: 2, Process: 3, Type: Invoke, F: FAcquire},
		nem(3, StartF("pause"), "n2"), // overlaps: one window until the last stop
		nem(4, StopF("pause"), "n1"),
		nem(5, StartF("loss"), "n1,n3"),
		nem(6, StopF("pause"), "n2"),
		nem(7, StartFailedF("kill"), ""),
		nem(8, StopF("loss"), "n1,n3"),
		nem(9, StopF("clock"), ""), // a stop without a start is ignored
		nem(10, StartF("partition"), "n2"),
		nem(11, FHeal, ""),
	}
	got := FaultWindows(ops, 20)
	want := []FaultWindow{
		{Kind: "pause", Start: 1, End: 6, Starts: 2, Nodes: []string{"n1", "n2"}},
		{Kind: "loss", Start: 5, End: 8, Starts: 1, Nodes: []string{"n1", "n3"}},
		{Kind: "partition", Start: 10, End: 20, Starts: 1, Nodes: []string{"n2"}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d windows %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Kind != w.Kind || g.Start != w.Start || g.End != w.End || g.Starts != w.Starts || !slices.Equal(g.Nodes, w.Nodes) {
			t.Errorf("window %d = %+v, want %+v", i, g, w)
		}
	}
	if string(got[0].Value) != `{"t":1}` {
		t.Errorf("window value %s, want the first start's", got[0].Value)
	}
	if !got[0].Closed || !got[1].Closed || got[2].Closed {
		t.Errorf("closed %v %v %v, want the two stopped windows only", got[0].Closed, got[1].Closed, got[2].Closed)
	}
	if string(got[0].Stop) != `{"t":6}` || string(got[1].Stop) != `{"t":8}` || got[2].Stop != nil {
		t.Errorf("stop values %s, %s, %s: want the closing stop's (6, 8) and none for a window never stopped", got[0].Stop, got[1].Stop, got[2].Stop)
	}
}
