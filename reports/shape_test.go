package reports

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// The page lists what each shaping window added, beside the operations'
// latency; other windows add nothing there.
func TestShapedLatency(t *testing.T) {
	faults := []faultView{
		{FaultWindow: history.FaultWindow{Kind: history.KindCoordNetDelay, Start: 1e9, End: 4e9,
			Value: json.RawMessage(`{"clients":[1],"links":{"n2":["clients","n1","n3"]},"mode":"coord","node":"n2","shape":{"delay_ms":800,"jitter_ms":20}}`)}},
		{FaultWindow: history.FaultWindow{Kind: "partition", Start: 5e9, End: 6e9}},
		{FaultWindow: history.FaultWindow{Kind: history.KindNetRate, Start: 7e9, End: 9e9,
			Value: json.RawMessage(`{"links":{"n1":["clients"]},"mode":"clients","shape":{"rate_kbit":128}}`)}},
	}
	got := shapedLatency(faults)
	want := []string{
		"coord-net-delay 1.000s – 4.000s: +800 ms ±20 ms on n2's links to the clients, n1, n3",
		"net-rate 7.000s – 9.000s: at most 128 kbit/s on n1's links to the clients",
	}
	if !slices.Equal(got, want) {
		t.Errorf("shapedLatency =\n%q\nwant\n%q", got, want)
	}
}
