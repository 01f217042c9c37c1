package reports

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

func TestDeletedValueBack(t *testing.T) {
	const key = "k"
	var idx int64
	op := func(time int64, p int, typ history.Type, f, value string) history.Op {
		idx++
		return history.Op{Index: idx, Time: time * 1e9, Process: p, Type: typ, F: f, Key: key, Value: json.RawMessage(value)}
	}
	// call is an invocation and its answer a second later.
	call := func(at int64, p int, f, inv string, typ history.Type, ret string) []history.Op {
		return []history.Op{op(at, p, history.Invoke, f, inv), op(at+1, p, typ, f, ret)}
	}
	hist := func(parts ...[]history.Op) []history.Op {
		var out []history.Op
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	purge := faultView{FaultWindow: history.FaultWindow{Kind: "maintenance", Start: 30e9, End: 32e9, Nodes: []string{"n3"},
		Value: json.RawMessage(`{"op":"compact","table":"system.paxos"}`)}}
	insert7 := call(1, 0, history.FRegInsert, `{"new":7}`, history.OK, `{"new":7}`)
	for _, tc := range []struct {
		name string
		ops  []history.Op
		want string // a part of the sentence; "" = no cause of this kind
	}{
		{"a deleted value read again after a purge",
			hist(insert7, call(10, 1, history.FRegDelete, `{"expect":7}`, history.OK, `{"expect":7}`),
				call(40, 2, history.FRegRead, ``, history.OK, `{"seen":7}`)),
			"a deleted value came back: process 1's DELETE ... IF value = 7 on key k was answered applied at 11.000s, nothing wrote 7 after it was sent, and process 2's reg-read invoked at 40.000s read it (answered at 41.000s): the delete was lost; between them: maintenance {\"op\":\"compact\",\"table\":\"system.paxos\"} on n3 (30.000s – 32.000s)"},
		{"an overwritten value that refuses a write",
			hist(insert7, call(10, 1, history.FRegCAS, `{"expect":7,"new":8}`, history.OK, `{"expect":7,"new":8}`),
				call(40, 2, history.FRegInsert, `{"new":9}`, history.Fail, `{"new":9,"seen":7}`)),
			"an overwritten value came back: process 1's UPDATE ... SET value = 8 IF value = 7"},
		{"a CAS that finds the deleted value",
			hist(insert7, call(10, 1, history.FRegDelete, `{"expect":7}`, history.OK, `{"expect":7}`),
				call(40, 2, history.FRegCAS, `{"expect":7,"new":9}`, history.OK, `{"expect":7,"new":9}`)),
			"process 2's reg-cas invoked at 40.000s found it and replaced it (applied)"},
		{"written again after the delete: no loss",
			hist(insert7, call(10, 1, history.FRegDelete, `{"expect":7}`, history.OK, `{"expect":7}`),
				call(20, 3, history.FRegInsert, `{"new":7}`, history.OK, `{"new":7}`),
				call(40, 2, history.FRegRead, ``, history.OK, `{"seen":7}`)), ""},
		{"an insert of the value in flight across the delete: no loss",
			hist([]history.Op{op(9, 3, history.Invoke, history.FRegInsert, `{"new":7}`)},
				call(10, 1, history.FRegDelete, `{"expect":7}`, history.OK, `{"expect":7}`),
				[]history.Op{op(12, 3, history.Info, history.FRegInsert, `{"new":7}`)},
				call(40, 2, history.FRegRead, ``, history.OK, `{"seen":7}`)), ""},
		{"a refused write of the value does not bring it back",
			hist(insert7, call(10, 1, history.FRegDelete, `{"expect":7}`, history.OK, `{"expect":7}`),
				call(20, 3, history.FRegInsert, `{"new":7}`, history.Fail, `{"new":7,"seen":5}`),
				call(40, 2, history.FRegRead, ``, history.OK, `{"seen":7}`)), "a deleted value came back"},
		{"read while the delete ran: no loss",
			hist(insert7, call(10, 1, history.FRegDelete, `{"expect":7}`, history.OK, `{"expect":7}`),
				call(10, 2, history.FRegRead, ``, history.OK, `{"seen":7}`)), ""},
		{"a delete that did not apply loses nothing",
			hist(insert7, call(10, 1, history.FRegDelete, `{"expect":7}`, history.Info, `{"expect":7}`),
				call(40, 2, history.FRegRead, ``, history.OK, `{"seen":7}`)), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := checker.Anomaly{Kind: checker.KindNonLinearizable, Check: "linearizable-register", Lock: key, Start: 0, End: 50e9, Ops: tc.ops}
			got, ok := deletedValueBack(a, []faultView{purge}, newCauseTimeline(tc.ops, nil, nil))
			switch {
			case tc.want == "" && ok:
				t.Fatalf("cause %q, want none", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Fatalf("cause\n%s\nwant a part\n%s", got, tc.want)
			}
		})
	}
}

func TestDeletedValueBackIsTheReportsCause(t *testing.T) {
	ops := []history.Op{
		{Index: 1, Time: 1e9, Process: 0, Type: history.Invoke, F: history.FRegDelete, Key: "k", Value: json.RawMessage(`{"expect":3}`)},
		{Index: 2, Time: 2e9, Process: 0, Type: history.OK, F: history.FRegDelete, Key: "k", Value: json.RawMessage(`{"expect":3}`)},
		{Index: 3, Time: 5e9, Process: 1, Type: history.Invoke, F: history.FRegRead, Key: "k"},
		{Index: 4, Time: 6e9, Process: 1, Type: history.OK, F: history.FRegRead, Key: "k", Value: json.RawMessage(`{"seen":3}`)},
	}
	a := checker.Anomaly{Kind: checker.KindNonLinearizable, Lock: "k", Start: 1e9, End: 6e9, Ops: ops}
	got := likelyCause(a, nil, newCauseTimeline(ops, nil, nil))
	if want := "a deleted value came back: process 0's DELETE ... IF value = 3 on key k"; !strings.HasPrefix(got, want) ||
		!strings.HasSuffix(got, "no fault window lies between them") {
		t.Fatalf("likely cause %q", got)
	}
}
