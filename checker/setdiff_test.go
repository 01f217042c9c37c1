package checker

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockcheck/lockcheck/history"
)

// Differential test of the resource check against porcupine with a set
// model, on histories porcupine judges exactly as set-full does: one holder,
// operations one at a time (adds ok or info, reads by other processes),
// elements written in several spellings of one number. On such a history a
// set is linearizable exactly when no read lacks a known element (an ok add
// returned or a read saw it before it was invoked) and none holds an element
// not yet added. The porcupine side compares elements by their rational
// value (math/big), independently of the checker's canonical form.

// spell writes n as one of the JSON spellings of the same number.
func spell(r *rand.Rand, n int) string {
	switch r.IntN(5) {
	case 0:
		return fmt.Sprintf("%d.0", n)
	case 1:
		return fmt.Sprintf("%de0", n)
	case 2:
		if n != 0 {
			return fmt.Sprintf("%d0e-1", n)
		}
	case 3:
		if n%10 == 0 && n != 0 {
			return fmt.Sprintf("%de1", n/10)
		}
	}
	return fmt.Sprint(n)
}

func randomSetHistory(r *rand.Rand, steps, values int, infos bool) []history.Op {
	h := (&b{}).grant(0, "l", 0, 1, 0, 0)
	holder := 0
	at := 2.0
	in := map[int]bool{} // what the "resource" holds
	var added []int
	reader := 100
	for range steps {
		if r.IntN(2) == 0 || len(added) == 0 {
			e := 10 * r.IntN(values) // few values: some repeat
			typ := K
			if infos && r.IntN(3) == 0 {
				typ = N
			}
			took := typ == K || r.IntN(2) == 0
			h.op(at, holder, I, "add", "l", raw(spell(r, e))).op(at+1, holder, typ, "add", "l", raw(spell(r, e)))
			if took {
				in[e] = true
			}
			added = append(added, e)
			if typ == N {
				// The holder goes on under a new process number, granted
				// the lock again (the old hold never ends: the resource
				// check does not mind).
				holder++
				h.grant(holder, "l", at+1.2, at+1.5, 0, 0)
			}
		} else {
			var set []string
			for e := range in {
				set = append(set, spell(r, e))
			}
			switch r.IntN(2 + steps/3) {
			case 0: // lose one
				if len(set) > 0 {
					set = set[1:]
				}
			case 1: // a phantom
				set = append(set, spell(r, 1000))
			}
			h.op(at, reader, I, "read", "l").op(at+1, reader, K, "read", "l", raw("["+strings.Join(set, ",")+"]"))
			reader++
		}
		at += 2
	}
	return h.list()
}

type setIn struct {
	add  bool
	elem string // canonical by big.Rat (add)
}

func ratKey(s string) string {
	var x big.Rat
	if _, ok := x.SetString(strings.TrimSpace(s)); !ok {
		return "?" + s
	}
	return x.RatString()
}

// porcupineSet judges the adds and reads of ops as a linearizable set.
func porcupineSet(t *testing.T, ops []history.Op) bool {
	calls := pairCalls(ops)
	var hist []porcupine.Operation
	for i := range calls {
		c := &calls[i]
		switch {
		case c.f == history.FAdd && c.typ != history.Fail:
			ret := c.ret
			if c.typ != history.OK {
				ret = Never
			}
			hist = append(hist, porcupine.Operation{ClientId: c.proc, Call: c.inv, Return: ret,
				Input: setIn{add: true, elem: ratKey(string(c.invLine.value))}, Output: c.typ == history.Info})
		case c.f == history.FRead && c.typ == history.OK:
			var els []json.RawMessage
			if err := json.Unmarshal(c.retLine.value, &els); err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, e := range els {
				keys = append(keys, ratKey(string(e)))
			}
			slices.Sort(keys)
			hist = append(hist, porcupine.Operation{ClientId: c.proc, Call: c.inv, Return: c.ret,
				Input: setIn{}, Output: strings.Join(keys, " ")})
		}
	}
	m := porcupine.NondeterministicModel{
		Init: func() []any { return []any{""} },
		Step: func(state, input, output any) []any {
			s, in := state.(string), input.(setIn)
			if !in.add {
				if output.(string) == s {
					return []any{s}
				}
				return nil
			}
			keys := strings.Fields(s)
			if !slices.Contains(keys, in.elem) {
				keys = append(keys, in.elem)
				slices.Sort(keys)
			}
			next := strings.Join(keys, " ")
			if output.(bool) { // info: took effect, or not
				return []any{s, next}
			}
			return []any{next}
		},
	}
	res := porcupine.CheckOperationsTimeout(m.ToModel(), hist, 20*time.Second)
	if res == porcupine.Unknown {
		t.Skip("porcupine did not decide in 20 s")
	}
	return res == porcupine.Ok
}

func TestResourceAgreesWithPorcupineSet(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 1))
	counts := map[bool]int{}
	for i := range 700 {
		steps, values, infos := 4+r.IntN(10), 6, true
		if i%35 == 0 {
			// Long ones, with many elements: the known times are folded
			// as reads pass them. Without info adds (each would be an op
			// pending forever, which porcupine searches exhaustively).
			steps, values, infos = 700+r.IntN(200), 2000, false
		}
		ops := randomSetHistory(r, steps, values, infos)
		if len(ops) == 0 {
			continue
		}
		res, err := Check(context.Background(), ops)
		if err != nil {
			t.Fatal(err)
		}
		want := porcupineSet(t, ops)
		got := checkVerdict(res, CheckResource) != Invalid
		counts[want]++
		if got != want {
			for _, op := range ops {
				t.Log(op.Time/1e6, op.Process, op.Type, op.F, string(op.Value))
			}
			t.Fatalf("history %d: resource check valid=%v, porcupine's set linearizable=%v (%s)", i, got, want, kinds(res.Anomalies))
		}
	}
	if counts[true] < 50 || counts[false] < 50 {
		t.Fatalf("too one-sided a sample: %v", counts)
	}
	t.Logf("linearizable: %d, not: %d", counts[true], counts[false])
}
