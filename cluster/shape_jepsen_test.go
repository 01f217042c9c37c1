//go:build jepsen

package cluster_test

import (
	"context"
	"slices"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/cluster/clustertest"
	"github.com/lockcheck/lockcheck/faultcap"
	"github.com/lockcheck/lockcheck/netshape"
)

// A node that declares net-delay really delays: a query through it, pinned,
// is slower by about the delay while its link to the clients is shaped (a
// lower bound only, half the delay: the machine's load can only add), and
// its Unshape finds the shaping and leaves none.
func TestShapeDelaysQueries(t *testing.T) {
	c := clustertest.Get(t)
	ctx := ctxFor(t, 3*time.Minute)
	n := c.Nodes()[0]
	if !slices.Contains(n.Capabilities(), faultcap.NetDelay) {
		t.Fatalf("node %s lacks net-delay (caps %v): no netem and no lockcheck-shaper", n.Name, n.Capabilities())
	}
	s, err := c.PinnedSession(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The fastest of a few queries: what the link adds shows in every one.
	fastest := func() time.Duration {
		best := time.Duration(1<<63 - 1)
		for range 5 {
			start := time.Now()
			var v string
			if err := s.Query(`SELECT release_version FROM system.local`).Consistency(gocql.One).WithContext(ctx).Scan(&v); err != nil {
				t.Fatal(err)
			}
			best = min(best, time.Since(start))
		}
		return best
	}
	before := fastest()
	const delay = 400 * time.Millisecond
	if err := n.Shape(ctx, netshape.Shape{Peers: []string{c.GatewayIP()}, Delay: delay, Jitter: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = n.Unshape(context.Background()) })
	during := fastest()
	found, err := n.Unshape(ctx)
	if err != nil || !found {
		t.Fatalf("Unshape = %v, %v; want the shaping found", found, err)
	}
	after := fastest()
	t.Logf("fastest of 5 queries through %s: %v before, %v shaped by %v, %v after", n.Name, before, during, delay, after)
	if during < before+delay/2 {
		t.Errorf("shaped by %v, the query took %v (%v before): not slower by half the delay", delay, during, before)
	}
	if found, err := n.Unshape(ctx); err != nil || found {
		t.Errorf("a second Unshape found %v, %v: want nothing left", found, err)
	}
}
