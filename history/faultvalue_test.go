package history

import (
	"encoding/json"
	"testing"

	"github.com/lockcheck/lockcheck/internal/valuetest"
)

// Each typed value encodes exactly as the nemesis's map-based values did
// (a stored history must read back the same), and a stored line decodes
// into its type and back to the same bytes.
func TestFaultValuesMatchOldEncoding(t *testing.T) {
	// Lines of a stored history (store/lease-fenced-...-loss/20261123T204246),
	// written by the map-based nemesis.
	stored := []struct {
		line  string
		typed any
	}{
		{`{"index":782,"time":25845231491,"process":-1,"type":"info","f":"start-clock","value":{"kind":"bump","offsets":{"n2":"-8.132s","n3":"-27ms"}},"node":"n2,n3"}`, &ClockStart{}},
		{`{"index":975,"time":31706548345,"process":-1,"type":"info","f":"stop-clock","value":{"kind":"bump"},"node":"n2,n3"}`, &ClockStop{}},
		{`{"index":1662,"time":49733960562,"process":-1,"type":"info","f":"start-client-pause","value":{"client":3,"lock":"lease-fenced-partition_pause_kill_clock_client-pause_client-clock_loss-20261123T204246-l0","ms":4700,"process":12}}`, &ClientPauseStart{}},
		{`{"index":1753,"time":54469460495,"process":-1,"type":"info","f":"stop-client-pause","value":{"client":3,"process":12}}`, &ClientPauseStop{}},
		{`{"index":2152,"time":61889127331,"process":-1,"type":"info","f":"start-client-clock","value":{"client":3,"offset":"-5.658s"}}`, &ClientClockStart{}},
		{`{"index":2277,"time":64639761194,"process":-1,"type":"info","f":"stop-client-clock","value":{"client":3}}`, &ClientClockStop{}},
	}
	for _, tt := range stored {
		var op Op
		if err := json.Unmarshal([]byte(tt.line), &op); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(op.Value, tt.typed); err != nil {
			t.Fatalf("%s: %v", op.F, err)
		}
		b, err := json.Marshal(tt.typed)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != string(op.Value) {
			t.Errorf("%s: %T encodes %s, the stored line has %s", op.F, tt.typed, b, op.Value)
		}
	}

	// The kinds the stored history lacks: each typed value against the map
	// the nemesis recorded for the same fault before the types.
	built := []struct {
		name  string
		old   any
		typed any
	}{
		{"start-clock strobe", map[string]any{"kind": "strobe", "offsets": map[string]string{"n1": "-1.5s"}, "period": "120ms"},
			ClockStart{Kind: "strobe", Offsets: map[string]string{"n1": "-1.5s"}, Period: "120ms"}},
		{"stop-power-loss", map[string]any{"how": "power on"}, PowerStop{How: "power on"}},
		{"start-coord-partition", map[string]any{"node": "n2", "clients": []int{1, 4}, "others": map[string][]int{"n1": {0, 3}, "n3": {2}},
			"grudge": Grudge{"n1": {"n2"}, "n3": {"n2"}}, "port": 7000, "at_rest": true},
			CoordPartitionStart{Node: "n2", Clients: []int{1, 4}, Others: map[string][]int{"n1": {0, 3}, "n3": {2}},
				Grudge: Grudge{"n1": {"n2"}, "n3": {"n2"}}, Port: 7000, AtRest: true}},
		{"stop-coord-partition", map[string]any{"node": "n2"}, CoordPartitionStop{Node: "n2"}},
		{"start-coord-clock", map[string]any{"node": "n3", "clients": []int{2}, "offset": "+4.997s", "lease": "3s", "holders": []int{}},
			CoordClockStart{Node: "n3", Clients: []int{2}, Offset: "+4.997s", Lease: "3s", Holders: []int{}}},
		{"start-coord-clock no holders", map[string]any{"node": "n3", "clients": []int{2}, "offset": "+4.997s", "lease": "3s", "holders": []int(nil)},
			CoordClockStart{Node: "n3", Clients: []int{2}, Offset: "+4.997s", Lease: "3s"}},
		{"stop-coord-clock", map[string]any{"node": "n3"}, CoordClockStop{Node: "n3"}},
		{"start-client-pause", map[string]any{"client": 0, "process": 7, "lock": "l0", "ms": int64(3000)},
			ClientPauseStart{Client: 0, Process: 7, Lock: "l0", MS: 3000}},
	}
	for _, tt := range built {
		valuetest.SameEncoding(t, tt.name, tt.old, tt.typed)
	}
}
