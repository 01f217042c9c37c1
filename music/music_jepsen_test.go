//go:build jepsen

package music_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/cluster/clustertest"
	"github.com/lockcheck/lockcheck/music"
	"github.com/lockcheck/lockcheck/recipe"
	"github.com/lockcheck/lockcheck/workload"
	"github.com/lockcheck/lockcheck/workload/locktest"
)

func TestMain(m *testing.M) { clustertest.Main(m) }

func setup(t *testing.T) (*gocql.Session, string, string) {
	// Each test contends on lock names of its own and faults nothing
	// (its clocks are the locks' own): the package's tests run side by side.
	t.Parallel()
	return locktest.Setup(t, music.CreateSchema)
}

func TestOneHolderAndReleaseLetsTheOtherIn(t *testing.T) {
	s, ks, prefix := setup(t)
	for _, r := range music.Recipes {
		t.Run(r.Name, func(t *testing.T) {
			ga, gb, _ := locktest.Handover(t, locktest.New(t, r.New, s, recipe.WithKeyspace(ks)), locktest.New(t, r.New, s, recipe.WithKeyspace(ks)), prefix+r.Name)
			if r.Name == "music-seq" && gb.Token <= ga.Token {
				t.Errorf("music-seq ref %d after %d: refs must grow", gb.Token, ga.Token)
			}
		})
	}
}

func TestTwoContendersExactlyOneWins(t *testing.T) {
	s, ks, prefix := setup(t)
	for _, seq := range []bool{false, true} {
		newLock := music.New
		if seq {
			newLock = music.NewSeq
		}
		m := locktest.New(t, newLock, s, recipe.WithKeyspace(ks), music.WithConsistency(gocql.Quorum))
		for i := range 10 {
			key := fmt.Sprintf("%s-%v-%d", prefix, seq, i)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			var wg sync.WaitGroup
			refs := make([]music.Ref, 2)
			for j := range refs {
				wg.Go(func() {
					// Contending Paxos rounds may end unknown: drop
					// that ref (it may exist) and make another.
					for ctx.Err() == nil {
						r, err := m.CreateLockRef(ctx, key)
						if err == nil {
							refs[j] = r
							return
						}
						t.Logf("createLockRef: %v", err)
						if errors.Is(err, workload.ErrUnknown) {
							if err := m.ReleaseLock(ctx, r); err != nil && !errors.Is(err, workload.ErrNotHeld) {
								t.Error(err)
								return
							}
						}
					}
				})
			}
			wg.Wait()
			wins := 0
			for _, r := range refs {
				top, err := m.AcquireLock(ctx, r)
				if err != nil {
					t.Fatal(err)
				}
				if top {
					wins++
				}
			}
			cancel()
			if wins != 1 {
				t.Fatalf("seq=%v round %d: %d refs on top", seq, i, wins)
			}
		}
	}
}

// The documented flaw: a client whose clock is 10 s behind makes a ref that
// sorts before the holder's and enters while the holder is inside. music-seq
// orders refs by Paxos rounds and keeps it out.
func TestClockBehindJumpsTheQueue(t *testing.T) {
	s, ks, prefix := setup(t)
	for _, r := range music.Recipes {
		t.Run(r.Name, func(t *testing.T) {
			name := prefix + r.Name
			var behind workload.SkewClock
			behind.SetOffset(-10 * time.Second)
			holder := locktest.New(t, r.New, s, recipe.WithKeyspace(ks), music.WithConsistency(gocql.Quorum))
			late := locktest.New(t, r.New, s, recipe.WithKeyspace(ks), music.WithConsistency(gocql.Quorum), recipe.WithClock(&behind))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			gh, err := holder.Acquire(ctx, name, "holder")
			if err != nil {
				t.Fatal(err)
			}
			// Long enough for a createLockRef and a top read on a loaded machine.
			short, cancelShort := context.WithTimeout(ctx, 5*time.Second)
			gl, err := late.Acquire(short, name, "late")
			cancelShort()
			switch r.Name {
			case "music":
				if err != nil {
					t.Fatalf("the late client did not jump the queue (the flaw should show): %v", err)
				}
				if err := late.Release(ctx, gl); err != nil {
					t.Error(err)
				}
			case "music-seq":
				if err == nil {
					t.Fatalf("music-seq let a second holder in: %+v", gl)
				}
				if !errors.Is(err, workload.ErrNotAcquired) {
					t.Fatalf("late client: %v, want ErrNotAcquired", err)
				}
			}
			if err := holder.Release(ctx, gh); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestCriticalGetPut(t *testing.T) {
	s, ks, prefix := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m := locktest.New(t, music.NewSeq, s, recipe.WithKeyspace(ks))
	a, err := m.CreateLockRef(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.CreateLockRef(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.CriticalPut(ctx, a, "v1"); err != nil {
		t.Fatal(err)
	}
	if err := m.CriticalPut(ctx, b, "v2"); !errors.Is(err, workload.ErrNotHeld) {
		t.Fatalf("put by a ref not on top: %v", err)
	}
	if err := m.ReleaseLock(ctx, a); err != nil {
		t.Fatal(err)
	}
	if v, err := m.CriticalGet(ctx, b); err != nil || v != "v1" {
		t.Fatalf("get after handover: %q, %v", v, err)
	}
}

func TestNoLostIncrements(t *testing.T) {
	s, ks, prefix := setup(t)
	locktest.NoLostIncrements(t, s, ks, prefix, 5, 8, func() workload.Lock {
		return locktest.New(t, music.NewSeq, s, recipe.WithKeyspace(ks))
	})
}
