package nemesis

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// A drawn hold holds every client; a step's value names some; a client
// the run does not have, or named twice, is refused.
func TestClientHold(t *testing.T) {
	cl := &fakeClients{n: 3, clocks: map[int]time.Duration{}}
	v, _, stop, rec := startOne(t, ClientHold, 1, cl)
	var cs []int
	json.Unmarshal(v["clients"], &cs)
	if !slices.Equal(cs, []int{0, 1, 2}) || len(cl.held) != 1 || !slices.Equal(cl.held[0], cs) {
		t.Fatalf("held %v (asked %v), want every client", cs, cl.held)
	}
	if err := stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ops := rec.all(); len(ops) != 2 || ops[1].F != history.StopF(ClientHold) {
		t.Fatalf("lines %+v", ops)
	}

	ts, _ := fakeCluster(3)
	cl = &fakeClients{n: 3, clocks: map[int]time.Duration{}}
	s := Schedule{Steps: []Step{{Kind: ClientHold, For: Duration(time.Millisecond), Value: json.RawMessage(`{"clients":[2,0]}`)}}}
	n, err := New(ts, &memRec{}, WithSchedule(s), WithClients(cl))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := n.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if len(cl.held) != 1 || !slices.Equal(cl.held[0], []int{2, 0}) {
		t.Errorf("held %v, want the step's [2 0]", cl.held)
	}
	for _, bad := range []string{`{"clients":[1,1]}`, `{"clients":[-1]}`} {
		s := Schedule{Steps: []Step{{Kind: ClientHold, Value: json.RawMessage(bad)}}}
		if _, err := New(ts, &memRec{}, WithSchedule(s), WithClients(cl)); err == nil || !strings.Contains(err.Error(), "distinct client numbers") {
			t.Errorf("%s: err %v", bad, err)
		}
	}
	if AnyClients(ClientPause) || !AnyClients(ClientHold) {
		t.Error("client-hold is the one client kind any workload's clients serve")
	}
}
