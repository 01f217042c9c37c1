//go:build jepsen

package cluster_test

import (
	"context"
	"maps"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/cluster/clustertest"
)

// Every membership change on a cluster of its own (3 nodes, RF 2, one
// spare), timed: a spare joins and leaves, a member leaves and the reset
// brings it back, a member is replaced in its own place, a member is
// removed by the others and joins again. The ring is read back after each.
func TestMembership(t *testing.T) {
	if os.Getenv("LOCKCHECK_FULL") == "" {
		t.Skip("a full-tier test (minutes of bootstraps): LOCKCHECK_FULL=1")
	}
	c := clustertest.Start(t, "membership", cluster.WithNodes(3), cluster.WithSpares(1), cluster.WithReplicationFactor(2), cluster.WithHeap("384M"))
	ctx := ctxFor(t, 20*time.Minute)
	ringIs := ringChecker(t, ctx, c)
	timed := func(step string, f func(context.Context) error) {
		t.Helper()
		begin := time.Now()
		if err := f(ctx); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		t.Logf("%s took %v", step, time.Since(begin).Round(100*time.Millisecond))
	}
	start := map[string]string{"n1": "UN", "n2": "UN", "n3": "UN"}
	ringIs("start", start)
	spares := c.Spares()
	if len(spares) != 1 || spares[0].Name != "n4" || !spares[0].IsSpare() {
		t.Fatalf("spares %v, want n4", spares)
	}
	n4 := spares[0]
	n1, _ := c.Node("n1")
	n2, _ := c.Node("n2")
	n3, _ := c.Node("n3")

	timed("join of spare n4", n4.Join)
	ringIs("after join", map[string]string{"n1": "UN", "n2": "UN", "n3": "UN", "n4": "UN"})
	if f, err := c.MembershipFaults(ctx); err != nil || len(f) != 1 {
		t.Fatalf("membership faults with the spare in: %v %v", f, err)
	}
	timed("decommission of n4", n4.Decommission)
	ringIs("after n4 left", start)

	timed("decommission of member n2", n2.Decommission)
	ringIs("after n2 left", map[string]string{"n1": "UN", "n3": "UN"})
	if f, _ := c.MembershipFaults(ctx); !slices.Equal(f, []string{"n2 out of the ring"}) {
		t.Fatalf("membership faults %v, want n2 out of the ring", f)
	}
	timed("reset (n2 bootstraps back)", func(ctx context.Context) error {
		changed, err := c.ResetMembership(ctx)
		if err == nil && !changed {
			t.Error("reset with n2 out of the ring changed nothing")
		}
		return err
	})
	ringIs("after reset", start)

	timed("replace of n3 in its own place", n3.Replace)
	ringIs("after replace", start)

	timed("removenode of n1", n1.Remove)
	ringIs("after remove", map[string]string{"n2": "UN", "n3": "UN"})
	timed("join of n1 again", n1.Join)
	ringIs("after n1 joined again", start)

	if changed, err := c.ResetMembership(ctx); err != nil || changed {
		t.Errorf("reset of the starting ring: changed %v, %v", changed, err)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
}

// ringChecker fails the test when the ring is not as a step wants it.
func ringChecker(t *testing.T, ctx context.Context, c *cluster.Cluster) func(step string, want map[string]string) {
	return func(step string, want map[string]string) {
		t.Helper()
		got, err := c.Ring(ctx)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if !maps.Equal(got, want) {
			t.Fatalf("%s: ring %v, want %v", step, got, want)
		}
	}
}
