package checker

import (
	"context"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// An overlap's operations include the grant that set each hold's end: a
// leader's last heartbeat (an ok renew) whose lease the next holder's grant
// fell inside, beside the acquires that started the holds. Without it the
// table shows a hold ending at a time no operation in it explains.
func TestOverlapShowsTheGrantThatSetTheEnd(t *testing.T) {
	h := (&b{}).
		op(0, 1, I, "acquire", "x").op(1, 1, K, "acquire", "x", lease(100)).
		op(60, 1, I, "renew", "x").op(61, 1, K, "renew", "x", lease(100)).
		// Process 2 is granted at 120 ms: inside process 1's renewed lease
		// (60 + 100), after its first one (0 + 100).
		op(110, 2, I, "acquire", "x").op(120, 2, K, "acquire", "x", lease(100)).
		op(150, 2, I, "release", "x").op(151, 2, K, "release", "x").
		end(400)
	res, err := Check(context.Background(), h.list())
	if err != nil {
		t.Fatal(err)
	}
	var overlap *Anomaly
	for i := range res.Anomalies {
		if res.Anomalies[i].Kind == KindOverlap {
			overlap = &res.Anomalies[i]
		}
	}
	if overlap == nil {
		t.Fatalf("no overlap in %+v", res.Anomalies)
	}
	var renews, acquires int
	for _, op := range overlap.Ops {
		switch {
		case op.F == history.FRenew && op.Process == 1:
			renews++
		case op.F == history.FAcquire:
			acquires++
		}
	}
	if renews != 2 || acquires != 4 {
		t.Errorf("overlap ops %+v: want the renew's invoke and ok (2, got %d) and both acquires (4, got %d)", overlap.Ops, renews, acquires)
	}
}
