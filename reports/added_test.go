package reports

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

func window(kind string, start, end int64, value string, nodes ...string) faultView {
	return faultView{FaultWindow: history.FaultWindow{Kind: kind, Start: start, End: end, Nodes: nodes, Value: json.RawMessage(value)}, Color: "#123456"}
}

// Every slowness kind says what it added, with a figure where one says it;
// other kinds add nothing.
func TestAddedLatency(t *testing.T) {
	faults := []faultView{
		window(history.KindCoordNetDelay, 1e9, 4e9, `{"clients":[1],"links":{"n2":["clients","n1","n3"]},"mode":"coord","node":"n2","shape":{"delay_ms":800,"jitter_ms":20}}`, "n2"),
		window("partition", 5e9, 6e9, `{"grudge":{"n1":["n2"]}}`, "n1"),
		window(history.KindNetRate, 7e9, 9e9, `{"links":{"n1":["clients"]},"mode":"clients","shape":{"rate_kbit":128}}`, "n1"),
		window(history.KindGCStall, 10e9, 12e9, `{"ms":2400}`, "n3"),
		window(history.KindCoordGCStall, 13e9, 14e9, `{"clients":[0,2],"ms":900}`, "n1"),
		window(history.KindClientGCStall, 15e9, 16e9, `{"client":3,"lock":"l0","ms":1800,"process":7}`),
		window(history.KindSlowDisk, 17e9, 19e9, `{"latency_ms":200}`, "n2"),
		window(history.KindSlowNode, 20e9, 22e9, `{"cpu":0.1}`, "n1"),
		window(history.KindCoordSlowNode, 23e9, 25e9, `{"clients":[1],"cpu":0.05,"node":"n3"}`, "n3"),
		window(history.KindGCStall, 26e9, 27e9, `not json`, "n3"),
	}
	got := addedLatency(faults)
	want := []struct {
		ms   int64
		text string
	}{
		{800, "coord-net-delay 1.000s – 4.000s: +800 ms ±20 ms on n2's links to the clients, n1, n3"},
		{0, "net-rate 7.000s – 9.000s: at most 128 kbit/s on n1's links to the clients"},
		{2400, "gc-stall 10.000s – 12.000s: +2400 ms, n3's JVM stopped"},
		{900, "coord-gc-stall 13.000s – 14.000s: +900 ms, n1's JVM stopped"},
		{1800, "client-gc-stall 15.000s – 16.000s: +1800 ms, client 3 (process 7) stopped between its read and its write"},
		{200, "slow-disk 17.000s – 19.000s: +200 ms on every write and fsync of n2's disk"},
		{0, "slow-node 20.000s – 22.000s: n1 held to 10 % of a core (no one figure: what it serves runs many times slower)"},
		{0, "coord-slow-node 23.000s – 25.000s: n3, the coordinator of client 1, held to 5 % of a core (no one figure: its requests run many times slower)"},
	}
	if len(got) != len(want) {
		var texts []string
		for _, a := range got {
			texts = append(texts, a.Text)
		}
		t.Fatalf("addedLatency gave %d windows, want %d:\n%s", len(got), len(want), strings.Join(texts, "\n"))
	}
	for i, w := range want {
		if got[i].MS != w.ms || got[i].Text != w.text {
			t.Errorf("window %d: %d ms %q\nwant %d ms %q", i, got[i].MS, got[i].Text, w.ms, w.text)
		}
	}
}

// The chart draws a window's added latency as a segment across the window
// at that latency, on a scale that holds it even when the operations were
// far quicker.
func TestChartDrawsAddedLatency(t *testing.T) {
	var ops []history.Op
	for i := range 100 {
		at := int64(i) * 1e8
		ops = append(ops,
			history.Op{Process: 0, Type: history.Invoke, F: "acquire", Time: at},
			history.Op{Process: 0, Type: history.OK, F: "acquire", Time: at + 5e6}) // 5 ms each
	}
	const end = 10e9
	faults := []faultView{
		window(history.KindGCStall, 2e9, 4e9, `{"ms":3000}`, "n2"),
		window(history.KindSlowNode, 5e9, 6e9, `{"cpu":0.1}`, "n1"),
	}
	c := newChart(ops, faults, addedLatency(faults), end)
	if len(c.Added) != 1 {
		t.Fatalf("%d added segments, want the stall's only (a CPU quota has no one figure)", len(c.Added))
	}
	seg := c.Added[0]
	if x0, x1 := xOf(2e9, end), xOf(4e9, end); math.Abs(seg.X-x0) > 0.01 || math.Abs(seg.X+seg.W-x1) > 0.01 {
		t.Errorf("segment spans %.1f–%.1f, want the window's %.1f–%.1f", seg.X, seg.X+seg.W, x0, x1)
	}
	if seg.Y <= c.LatencyTop || seg.Y >= c.LatencyBase {
		t.Errorf("segment at y %.1f, want inside the latency plot (%.1f–%.1f)", seg.Y, c.LatencyTop, c.LatencyBase)
	}
	// The scale's top tick is at least the stall: 3000 ms is on the chart,
	// not clipped above the 5 ms operations.
	top := c.YTicks[len(c.YTicks)-1].Label
	if !slices.Contains([]string{"5000 ms", "4000 ms", "3500 ms"}, top) {
		t.Errorf("top tick %q, want a scale above 3000 ms", top)
	}
	if seg.Fill != "#123456" || !strings.Contains(seg.Title, "+3000 ms") {
		t.Errorf("segment %+v: want the kind's colour and the stall in its title", seg)
	}
}
