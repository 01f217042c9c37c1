package nemesis

import (
	"encoding/json"
	"testing"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/valuetest"
)

// The values a kind declares in its own file (pause, loss, partition,
// kill) encode exactly as the nemesis's map-based values did, so that a
// stored history reads back the same (history's TestFaultValuesMatchOldEncoding
// holds the shared ones).
func TestKindValuesMatchOldEncoding(t *testing.T) {
	// Lines of a stored history (store/lease-fenced-...-loss/20261123T204246),
	// written by the map-based nemesis.
	stored := []struct {
		line  string
		typed any
	}{
		{`{"index":127,"time":13166307889,"process":-1,"type":"info","f":"start-pause","value":{"how":"docker"},"node":"n3"}`, &PauseValue{}},
		{`{"index":463,"time":18397119325,"process":-1,"type":"info","f":"stop-pause","value":{"how":"docker"},"node":"n3"}`, &PauseValue{}},
		{`{"index":1213,"time":36579106306,"process":-1,"type":"info","f":"start-loss","value":{"mode":"clients","probability":0.15,"drops":{"n1":["clients"]}},"node":"n1"}`, &LossStart{}},
		{`{"index":1435,"time":43910425573,"process":-1,"type":"info","f":"stop-loss","value":{"mode":"clients"},"node":"n1"}`, &LossStop{}},
	}
	for _, tt := range stored {
		var op history.Op
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
	// Each typed value against the map the nemesis recorded for the same
	// fault before the types.
	g := Grudge{"n1": {"n2", "n3"}, "n2": {"n1"}, "n3": {"n1"}}
	built := []struct {
		name  string
		old   any
		typed any
	}{
		{"start-partition", map[string]any{"kind": "isolate", "grudge": g}, PartitionStart{Kind: "isolate", Grudge: g}},
		{"stop-partition", map[string]any{"kind": "isolate"}, PartitionStop{Kind: "isolate"}},
		{"start-kill", map[string]any{"how": "kill -9"}, KillValue{How: "kill -9"}},
		{"stop-kill", map[string]any{"how": "restart"}, KillValue{How: "restart"}},
	}
	for _, tt := range built {
		valuetest.SameEncoding(t, tt.name, tt.old, tt.typed)
	}
}
