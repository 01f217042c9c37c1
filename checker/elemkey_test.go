package checker

import (
	"encoding/json"
	"testing"
)

func TestElemKeySameElement(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{`1`, `1.0`, true},
		{`1`, `1e0`, true},
		{`10`, `1e1`, true},
		{`-3`, `-3.00`, true},
		{`0.5`, `5e-1`, true},
		{`0.1`, `0.10`, true},
		{`1`, `2`, false},
		{`0.1`, `0.2`, false},
		{`9007199254740993`, `9007199254740992`, false}, // beyond float64: must not merge
		{`"A"`, `"\u0041"`, true},
		{`"<"`, `"\u003c"`, true},
		{`"é"`, `"\u00e9"`, true},
		{`"a"`, `"b"`, false},
		{`"1"`, `1`, false},
		{`{"x":1,"y":2}`, `{"y":2.0, "x":1}`, true},
		{`[1, 2]`, `[1,2.0]`, true},
		{`[1,2]`, `[2,1]`, false},
		{` 7 `, `7`, true},
	} {
		ka, kb := elemKey(json.RawMessage(tc.a)), elemKey(json.RawMessage(tc.b))
		if (ka == kb) != tc.same {
			t.Errorf("elemKey(%s)=%s, elemKey(%s)=%s: same=%v, want %v", tc.a, ka, tc.b, kb, ka == kb, tc.same)
		}
	}
}
