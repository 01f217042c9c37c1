package checker

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/anishathalye/porcupine"
)

// TestCheckInOrderAgreesWithPorcupine: a piece whose operations do not
// overlap is decided by stepping the model; porcupine's search must give the
// same answer on every such piece, legal or not.
func TestCheckInOrderAgreesWithPorcupine(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	kinds := []byte{'a', 'a', 'r', 'n'}
	var legal, illegal int
	for n := range 3000 {
		var ops []*lockOp
		at := int64(0)
		for range 1 + rng.IntN(6) {
			at += 1 + rng.Int64N(5)
			op := &lockOp{kind: kinds[rng.IntN(len(kinds))], proc: rng.IntN(2), inv: at}
			at += rng.Int64N(4)
			op.ret = at
			op.exp = Never
			if op.kind != 'r' && rng.IntN(2) == 0 {
				op.exp = op.inv + rng.Int64N(12)
			}
			op.info = op.kind == 'r' && rng.IntN(5) == 0
			ops = append(ops, op)
		}
		init := free
		if rng.IntN(3) == 0 {
			init = lockState{owner: rng.IntN(3), expiry: rng.Int64N(10)}
		}
		p := piece{lock: "l", init: init, ops: ops}
		got, ok := p.checkInOrder()
		if !ok {
			t.Fatalf("piece %d: operations that do not overlap were left to porcupine", n)
		}
		want := porcupine.CheckOperations(lockModel(init), p.operations())
		if (got == porcupine.Ok) != want {
			t.Fatalf("piece %d: in order %v, porcupine %v", n, got, want)
		}
		if want {
			legal++
		} else {
			illegal++
		}
	}
	if legal < 500 || illegal < 500 {
		t.Fatalf("too one-sided to compare: %d legal, %d illegal", legal, illegal)
	}
}

// TestCheckInOrderLeavesOverlapsToPorcupine: operations that touch or overlap
// (an invocation at or before the previous return) may be ordered either way.
func TestCheckInOrderLeavesOverlapsToPorcupine(t *testing.T) {
	for _, tc := range []struct {
		name       string
		prevRet    int64
		nextInvoke int64
		inOrder    bool
	}{
		{"after", 5, 6, true},
		{"touching", 5, 5, false},
		{"overlapping", 5, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := piece{init: free, ops: []*lockOp{
				{kind: 'a', proc: 1, inv: 1, ret: tc.prevRet, exp: Never},
				{kind: 'a', proc: 2, inv: tc.nextInvoke, ret: 9, exp: Never},
			}}
			if _, ok := p.checkInOrder(); ok != tc.inOrder {
				t.Fatalf("decided in order: %v, want %v", ok, tc.inOrder)
			}
		})
	}
}

// TestGreedyLinearizationIsSound: a linearization found without
// backtracking must be one porcupine accepts; on contended pieces (acquires
// that wait for a release) it should find most of the legal ones, or it
// saves nothing.
func TestGreedyLinearizationIsSound(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	kinds := []byte{'a', 'a', 'r', 'n'}
	var legal, found int
	for n := range 5000 {
		var ops []*lockOp
		for range 2 + rng.IntN(7) {
			inv := rng.Int64N(30)
			op := &lockOp{kind: kinds[rng.IntN(len(kinds))], proc: rng.IntN(3), inv: inv, ret: inv + rng.Int64N(10), exp: Never}
			if op.kind != 'r' && rng.IntN(2) == 0 {
				op.exp = op.inv + rng.Int64N(15)
			}
			if op.kind == 'r' && rng.IntN(6) == 0 {
				op.info = true
				if rng.IntN(2) == 0 {
					op.ret = Never
				}
			}
			ops = append(ops, op)
		}
		slices.SortStableFunc(ops, func(a, b *lockOp) int { return cmp.Compare(a.inv, b.inv) })
		init := free
		if rng.IntN(3) == 0 {
			init = lockState{owner: rng.IntN(3), expiry: rng.Int64N(10)}
		}
		p := piece{lock: "l", init: init, ops: ops}
		greedy := p.linearizeGreedily()
		want := porcupine.CheckOperations(lockModel(init), p.operations())
		if greedy && !want {
			t.Fatalf("piece %d: a greedy linearization of a piece porcupine finds illegal: %s", n, describePiece(p))
		}
		if want {
			legal++
			if greedy {
				found++
			}
		}
	}
	if legal < 500 || found*10 < legal*8 {
		t.Fatalf("greedy found %d of %d legal pieces", found, legal)
	}
	t.Logf("greedy found %d of %d legal pieces", found, legal)
}

func describePiece(p piece) string {
	s := describeLockState(p.init)
	for _, op := range p.ops {
		s += fmt.Sprintf("; %s [%d,%d]", describeLockOp(op, nil), op.inv, op.ret)
	}
	return s
}
