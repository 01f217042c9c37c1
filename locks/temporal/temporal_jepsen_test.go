//go:build jepsen

package temporal_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/cluster/clustertest"
	"github.com/lockcheck/lockcheck/locks/temporal"
	"github.com/lockcheck/lockcheck/recipe"
	"github.com/lockcheck/lockcheck/workload"
	"github.com/lockcheck/lockcheck/workload/locktest"
)

func TestMain(m *testing.M) { clustertest.Main(m) }

// A steal bumps the range id; the old owner's write is refused in the same
// Paxos round (ErrStaleToken) and the new owner's lands; the resource reads
// what the owners wrote.
func TestStealFencesTheOldOwner(t *testing.T) {
	s, ks, prefix := locktest.Setup(t, temporal.CreateSchema)
	a := locktest.New(t, temporal.New, s, recipe.WithKeyspace(ks))
	b := locktest.New(t, temporal.New, s, recipe.WithKeyspace(ks))
	res, err := temporal.NewResource(s, ks)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	shard := prefix + "-shard"
	ga, err := a.Acquire(ctx, shard, "a")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.WriteFenced(ctx, ga, 1, nil); err != nil {
		t.Fatal(err)
	}
	gb, err := b.Acquire(ctx, shard, "b")
	if err != nil {
		t.Fatal(err)
	}
	if gb.Token != ga.Token+1 || ga.Deadline != (time.Time{}) {
		t.Errorf("tokens %d then %d, a's deadline %v: want the range id bumped by one and no expiry", ga.Token, gb.Token, ga.Deadline)
	}
	if err := a.WriteFenced(ctx, ga, 2, nil); !errors.Is(err, workload.ErrStaleToken) {
		t.Errorf("the old owner's write: %v, want ErrStaleToken", err)
	}
	if err := b.WriteFenced(ctx, gb, 3, nil); err != nil {
		t.Fatal(err)
	}
	got, err := res.Read(ctx, shard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []int64{1, 3}) {
		t.Errorf("the set is %v, want [1 3]", got)
	}
}
