package checker

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/lockcheck/lockcheck/history"
)

// rb builds a register history; times are in milliseconds. Values are
// ints; -1 stands for "no row" in seen.
type rb struct{ b }

func regVal(expect, nw, seen *int) json.RawMessage {
	v := history.RegValue{}
	if expect != nil {
		v.Expect, _ = json.Marshal(*expect)
	}
	if nw != nil {
		v.New, _ = json.Marshal(*nw)
	}
	if seen != nil {
		if *seen < 0 {
			v.Seen = history.NoRow
		} else {
			v.Seen, _ = json.Marshal(*seen)
		}
	}
	out, _ := json.Marshal(v)
	if string(out) == "{}" {
		return nil
	}
	return out
}

func ip(n int) *int { return &n }

func (h *rb) line(ms float64, p int, typ history.Type, f, key string, v json.RawMessage) *rb {
	h.op(ms, p, typ, f, "", func(o *history.Op) { o.Key, o.Value = key, v })
	return h
}

// read: p reads key over [t0, t1] and sees seen (-1: no row).
func (h *rb) read(p int, key string, t0, t1 float64, seen int) *rb {
	return h.line(t0, p, I, history.FRegRead, key, nil).line(t1, p, K, history.FRegRead, key, regVal(nil, nil, ip(seen)))
}

// insert: typ ok applied, fail with seen >= 0 rejected, info unknown.
func (h *rb) insert(p int, key string, t0, t1 float64, nw int, typ history.Type, seen ...int) *rb {
	h.line(t0, p, I, history.FRegInsert, key, regVal(nil, ip(nw), nil))
	var s *int
	if len(seen) > 0 {
		s = ip(seen[0])
	}
	return h.line(t1, p, typ, history.FRegInsert, key, regVal(nil, ip(nw), s))
}

func (h *rb) cas(p int, key string, t0, t1 float64, expect, nw int, typ history.Type, seen ...int) *rb {
	h.line(t0, p, I, history.FRegCAS, key, regVal(ip(expect), ip(nw), nil))
	var s *int
	if len(seen) > 0 {
		s = ip(seen[0])
	}
	return h.line(t1, p, typ, history.FRegCAS, key, regVal(ip(expect), ip(nw), s))
}

// del: a conditional delete of expect (DELETE ... IF value = expect).
func (h *rb) del(p int, key string, t0, t1 float64, expect int, typ history.Type, seen ...int) *rb {
	h.line(t0, p, I, history.FRegDelete, key, regVal(ip(expect), nil, nil))
	var s *int
	if len(seen) > 0 {
		s = ip(seen[0])
	}
	return h.line(t1, p, typ, history.FRegDelete, key, regVal(ip(expect), nil, s))
}

// casOpen invokes a cas that never completes (the run was killed).
func (h *rb) casOpen(p int, key string, t0 float64, expect, nw int) *rb {
	return h.line(t0, p, I, history.FRegCAS, key, regVal(ip(expect), ip(nw), nil))
}

// checkBoth checks ops in memory and streamed (with pieces of every size,
// so that the cuts and the carried writes are exercised) and fails when the
// verdicts differ from each other or from want.
func checkBoth(t *testing.T, ops []history.Op, want Verdict) Result {
	t.Helper()
	var res Result
	for _, seg := range []int{0, 1, 2, 64} {
		r, err := Check(context.Background(), ops, WithSegmentMin(seg))
		if err != nil {
			t.Fatalf("segment %d: %v", seg, err)
		}
		if got := checkVerdict(r, CheckRegister); got != want {
			t.Errorf("segment %d in memory: register %s, want %s (%v)", seg, got, want, r.Anomalies)
		}
		var buf bytes.Buffer
		for _, op := range ops {
			line, _ := json.Marshal(op)
			buf.Write(append(line, '\n'))
		}
		sr, err := CheckReader(context.Background(), &buf, WithSegmentMin(seg))
		if err != nil {
			t.Fatalf("segment %d streamed: %v", seg, err)
		}
		if got := checkVerdict(sr, CheckRegister); got != want {
			t.Errorf("segment %d streamed: register %s, want %s", seg, got, want)
		}
		if sr.Verdict != r.Verdict {
			t.Errorf("segment %d: streamed %s, in memory %s", seg, sr.Verdict, r.Verdict)
		}
		if seg == 64 {
			res = r
		}
	}
	return res
}

func TestRegisterHistories(t *testing.T) {
	const k = "k0"
	tests := []struct {
		name  string
		build func(h *rb)
		want  Verdict
	}{
		{"sequential", func(h *rb) {
			h.read(0, k, 0, 1, -1).insert(1, k, 2, 3, 1, K).cas(0, k, 4, 5, 1, 2, K).read(1, k, 6, 7, 2).
				cas(0, k, 8, 9, 1, 3, F, 2).insert(1, k, 10, 11, 4, F, 2).read(0, k, 12, 13, 2)
		}, Valid},
		{"stale read after an applied cas", func(h *rb) {
			h.insert(0, k, 0, 1, 1, K).cas(0, k, 2, 3, 1, 2, K).read(1, k, 4, 5, 1)
		}, Invalid},
		{"near miss: the read overlaps the cas", func(h *rb) {
			h.insert(0, k, 0, 1, 1, K).cas(0, k, 2, 5, 1, 2, K).read(1, k, 4, 6, 1)
		}, Valid},
		// CASSANDRA-12126's shape: a rejected write reports a value that a
		// write completed before it had replaced.
		{"rejected cas saw a replaced value", func(h *rb) {
			h.insert(0, k, 0, 1, 1, K).cas(0, k, 2, 3, 1, 2, K).cas(1, k, 4, 5, 3, 4, F, 1)
		}, Invalid},
		{"near miss: the rejected cas overlaps the write", func(h *rb) {
			h.insert(0, k, 0, 1, 1, K).cas(0, k, 2, 6, 1, 2, K).cas(1, k, 4, 7, 3, 4, F, 1)
		}, Valid},
		{"rejected cas that saw what it expected", func(h *rb) {
			h.insert(0, k, 0, 1, 1, K).cas(1, k, 4, 5, 1, 4, F, 1)
		}, Invalid},
		{"rejected insert saw no row", func(h *rb) {
			h.insert(1, k, 4, 5, 4, F, -1)
		}, Invalid},
		{"two inserts applied", func(h *rb) {
			h.insert(0, k, 0, 1, 1, K).insert(1, k, 2, 3, 2, K)
		}, Invalid},
		{"near miss: a failed insert without seen did nothing", func(h *rb) {
			h.insert(0, k, 0, 1, 1, K).insert(1, k, 2, 3, 2, F).read(0, k, 4, 5, 1)
		}, Valid},
		{"a value nobody wrote", func(h *rb) {
			h.insert(0, k, 0, 1, 1, K).read(1, k, 2, 3, 7)
		}, Invalid},
		// An unknown write may take effect long after its invocation: its
		// value shows after many pieces.
		{"an info write takes effect late", func(h *rb) {
			h.insert(0, k, 0, 1, 1, K).cas(9, k, 2, 3, 1, 50, N)
			for i := range 10 {
				h.read(1, k, 10+float64(4*i), 11+float64(4*i), 1)
			}
			h.read(1, k, 100, 101, 50).cas(2, k, 102, 103, 50, 51, K).read(1, k, 104, 105, 51)
		}, Valid},
		{"near miss: an info write cannot take effect twice", func(h *rb) {
			h.insert(0, k, 0, 1, 1, K).cas(9, k, 2, 3, 1, 50, N)
			h.read(1, k, 10, 11, 50).cas(2, k, 12, 13, 50, 1, K)
			for i := range 5 {
				h.read(1, k, 20+float64(4*i), 21+float64(4*i), 1)
			}
			h.read(1, k, 100, 101, 50)
		}, Invalid},
		// The same value written twice: a sighting of it proves nothing
		// about the unknown one, which may still take effect.
		{"a repeated value keeps the unknown write", func(h *rb) {
			h.insert(0, k, 0, 1, 1, K).cas(9, k, 2, 3, 1, 2, N).cas(2, k, 4, 5, 1, 2, K).read(1, k, 6, 7, 2).
				cas(2, k, 8, 9, 2, 1, K)
			for i := range 4 {
				h.read(1, k, 20+float64(4*i), 21+float64(4*i), 1)
			}
			h.read(1, k, 100, 101, 2)
		}, Valid},
		{"an info cas chain", func(h *rb) {
			h.insert(0, k, 0, 1, 1, K).cas(8, k, 2, 3, 1, 2, N).cas(9, k, 4, 5, 2, 3, N).read(1, k, 10, 11, 3)
		}, Valid},
		{"a killed run's cas in flight", func(h *rb) {
			h.insert(0, k, 0, 1, 1, K).casOpen(9, k, 2, 1, 5).read(1, k, 10, 11, 1).read(1, k, 12, 13, 5)
		}, Valid},
		// CASSANDRA-12126 black-box: a cas accepted by one replica and not
		// committed ends unknown; a SERIAL read through a quorum without
		// that replica sees the old value; a later round completes the
		// proposal. An unknown write may take effect after the read, so
		// the history is linearizable: the fix's guarantee (a write not
		// seen by a SERIAL read will never be) is stronger than
		// linearizability with unknown outcomes (docs/notes-on-cassandra.md).
		{"12126's shape with the write unknown", func(h *rb) {
			h.insert(0, k, 0, 1, 1, K).cas(9, k, 2, 10, 1, 2, N).read(1, k, 11, 12, 1).cas(2, k, 13, 14, 5, 6, F, 1).
				read(1, k, 20, 21, 2)
		}, Valid},
		{"12126's shape had the write been reported failed", func(h *rb) {
			h.insert(0, k, 0, 1, 1, K).cas(9, k, 2, 10, 1, 2, F).read(1, k, 11, 12, 1).read(1, k, 20, 21, 2)
		}, Invalid},
		// A conditional delete is a cas to no row.
		{"delete, then insert again", func(h *rb) {
			h.insert(0, k, 0, 1, 1, K).del(1, k, 2, 3, 1, K).read(2, k, 4, 5, -1).insert(0, k, 6, 7, 2, K).read(2, k, 8, 9, 2)
		}, Valid},
		// CASSANDRA-19617 black-box: a row deleted by an applied delete
		// comes back (a stale Paxos commit re-applied after the tombstone
		// was purged) with no write since.
		{"19617's shape: a deleted value read back", func(h *rb) {
			h.insert(0, k, 0, 1, 1, K).del(0, k, 2, 3, 1, K).cas(1, k, 4, 5, 1, 2, F, -1).read(1, k, 6, 7, 1)
		}, Invalid},
		{"near miss: the delete unknown", func(h *rb) {
			h.insert(0, k, 0, 1, 1, K).del(0, k, 2, 3, 1, N).read(1, k, 6, 7, 1).read(1, k, 8, 9, -1)
		}, Valid},
		{"near miss: a rejected delete", func(h *rb) {
			h.insert(0, k, 0, 1, 1, K).cas(2, k, 2, 3, 1, 2, K).del(0, k, 4, 5, 1, F, 2).read(1, k, 6, 7, 2)
		}, Valid},
		{"rejected delete that saw what it expected", func(h *rb) {
			h.insert(0, k, 0, 1, 1, K).del(0, k, 2, 3, 1, F, 1)
		}, Invalid},
		{"a rejected insert saw the deleted value", func(h *rb) {
			h.insert(0, k, 0, 1, 1, K).del(0, k, 2, 3, 1, K).insert(1, k, 4, 5, 2, F, 1)
		}, Invalid},
		{"keys are apart", func(h *rb) {
			h.insert(0, "a", 0, 1, 1, K).insert(1, "b", 0, 1, 2, K).read(2, "a", 2, 3, 1).read(3, "b", 2, 3, 2)
		}, Valid},
		{"near miss across keys: b's value read on a", func(h *rb) {
			h.insert(0, "a", 0, 1, 1, K).insert(1, "b", 0, 1, 2, K).read(2, "a", 2, 3, 2)
		}, Invalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &rb{}
			tt.build(h)
			res := checkBoth(t, h.list(), tt.want)
			if res.Verdict != tt.want {
				t.Errorf("verdict %s, want %s", res.Verdict, tt.want)
			}
			if tt.want == Invalid {
				if len(res.Anomalies) == 0 || res.Anomalies[0].Check != CheckRegister || len(res.Anomalies[0].Ops) == 0 {
					t.Errorf("anomalies %+v", res.Anomalies)
				}
			}
			// A register history has no lock: the lock checks had nothing
			// to judge.
			for _, c := range res.Checks {
				if c.Name != CheckRegister && c.Name != CheckStatistics && (c.Judged || !c.Skipped) {
					t.Errorf("check %s judged on a register history", c.Name)
				}
			}
		})
	}
}

// TestRegisterBesideLocks: a lock history gets no register check (its
// result is what it was), and a history with both judges both.
func TestRegisterBesideLocks(t *testing.T) {
	h := &b{}
	h.hold(0, "l", 0, 10, 0)
	res, err := Check(context.Background(), h.list())
	if err != nil {
		t.Fatal(err)
	}
	if checkVerdict(res, CheckRegister) != "missing" {
		t.Error("a lock history has a register check")
	}
	r := &rb{}
	r.hold(0, "l", 0, 10, 0)
	r.insert(1, "k", 0, 1, 1, K).cas(1, "k", 2, 3, 1, 2, K).read(2, "k", 4, 5, 1)
	res, err = Check(context.Background(), r.list())
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != Invalid || checkVerdict(res, CheckRegister) != Invalid || checkVerdict(res, CheckMutex) != Valid {
		t.Errorf("verdict %s, checks %+v", res.Verdict, res.Checks)
	}
	for _, c := range res.Checks {
		if c.Name == CheckMutex && (!c.Judged || c.Skipped) {
			t.Error("the lock's mutex check not judged beside a register")
		}
	}
}

// TestRegisterRandomValid: histories generated by a linearizable register
// (each op takes effect at an instant inside its window, some outcomes
// unknown) are valid however they are cut.
func TestRegisterRandomValid(t *testing.T) {
	for seed := range 20 {
		ops := simRegister(int64(seed), 300)
		res := checkBoth(t, ops, Valid)
		if res.Verdict != Valid {
			t.Fatalf("seed %d: %s %v", seed, res.Verdict, res.Anomalies)
		}
	}
}

// simRegister simulates clients on two keys of a linearizable register:
// op i takes effect at instant 2i+1, inside its window.
func simRegister(seed int64, n int) []history.Op {
	r := rand.New(rand.NewPCG(uint64(seed), 7))
	h := &rb{}
	state := map[string]int{}
	next := 1
	for i := 0; i < n; i++ {
		key := []string{"a", "b"}[r.IntN(2)]
		p := i // a fresh process for every op: any overlap is possible
		eff := float64(2*i + 1)
		t0 := max(0, eff-0.5-float64(r.IntN(4)))
		t1 := eff + 0.5 + float64(r.IntN(4))
		cur, ok := state[key]
		seen := -1
		if ok {
			seen = cur
		}
		v := next
		next++
		switch x := r.IntN(10); {
		case x < 4:
			h.read(p, key, t0, t1, seen)
		case x < 5:
			if !ok {
				state[key] = v
				h.insert(p, key, t0, t1, v, []history.Type{K, N}[r.IntN(2)])
			} else {
				h.insert(p, key, t0, t1, v, F, seen)
			}
		default:
			expect := seen
			if r.IntN(3) == 0 || expect < 0 {
				expect = v + 100000
			}
			switch {
			case ok && expect == cur:
				state[key] = v
				h.cas(p, key, t0, t1, expect, v, []history.Type{K, K, N}[r.IntN(3)])
			case r.IntN(4) == 0:
				h.cas(p, key, t0, t1, expect, v, N) // unknown, and in truth not applied
			default:
				h.cas(p, key, t0, t1, expect, v, F, seen)
			}
		}
	}
	return h.list()
}

// wholeRegister is the reference: porcupine on each key's whole history,
// every unknown write kept as one that may take effect or not anywhere,
// nothing cut, carried or left out.
func wholeRegister(ops []history.Op) Verdict {
	byKey := map[string][]*regOp{}
	open := map[int]*regCall{}
	var order []*regCall
	for _, op := range ops {
		if !history.IsRegisterF(op.F) {
			continue
		}
		if op.Type == history.Invoke {
			c := &regCall{inv: op}
			_ = json.Unmarshal(op.Value, &c.parsed)
			open[op.Process] = c
			order = append(order, c)
			continue
		}
		c := open[op.Process]
		delete(open, op.Process)
		c.ret, c.done = op, true
		var v history.RegValue
		if json.Unmarshal(op.Value, &v) == nil {
			c.parsed.Seen = v.Seen
		}
	}
	for _, c := range order {
		if m := c.modelOp(); m != nil {
			byKey[c.inv.Key] = append(byKey[c.inv.Key], m)
		}
	}
	v := Valid
	for k, kops := range byKey {
		p := regPiece{key: k, ops: kops}
		switch checkRegPiece(context.Background(), p) {
		case porcupine.Illegal:
			return Invalid
		case porcupine.Unknown:
			v = Unknown
		}
	}
	return v
}

// TestRegisterAgreesWithWholePorcupine: on random histories, linearizable
// ones and ones broken by a changed outcome, the streamed check (pieces
// of every size, unknown writes carried and left out) gives porcupine's
// verdict on the whole history.
func TestRegisterAgreesWithWholePorcupine(t *testing.T) {
	invalid := 0
	for seed := range 300 {
		ops := simRegister(int64(seed), 40)
		r := rand.New(rand.NewPCG(uint64(seed), 99))
		// Break it now and then: a read or a rejection that saw another
		// value, an applied write reported rejected, a rejected one
		// reported applied.
		if seed%3 != 0 {
			for range 1 + r.IntN(2) {
				i := r.IntN(len(ops))
				op := &ops[i]
				if op.Type == history.Invoke || !history.IsRegisterF(op.F) {
					continue
				}
				var v history.RegValue
				_ = json.Unmarshal(op.Value, &v)
				switch {
				case len(v.Seen) > 0:
					v.Seen, _ = json.Marshal(1 + r.IntN(40))
				case op.Type == history.OK:
					op.Type = history.Fail
					v.Seen, _ = json.Marshal(1 + r.IntN(40))
				}
				op.Value, _ = json.Marshal(v)
			}
		}
		want := wholeRegister(ops)
		if want == Invalid {
			invalid++
		}
		for _, seg := range []int{0, 1, 3, 64} {
			res, err := Check(context.Background(), ops, WithSegmentMin(seg))
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			if got := checkVerdict(res, CheckRegister); got != want {
				t.Fatalf("seed %d, segment %d: %s, whole porcupine %s", seed, seg, got, want)
			}
		}
	}
	if invalid < 50 {
		t.Errorf("only %d of 300 histories not linearizable: the test would not see a missed violation", invalid)
	}
	t.Logf("%d of 300 not linearizable", invalid)
}
