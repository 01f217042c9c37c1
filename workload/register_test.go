package workload

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

// memRegister is a linearizable register in memory. With flaky set, some
// writes report an unknown outcome, applied or not, and some reads fail;
// with stale set, reads answer from a copy taken before the latest writes
// (a register that is not linearizable).
type memRegister struct {
	mu    sync.Mutex
	vals  map[string]int64
	old   map[string]int64
	r     *rand.Rand
	flaky bool
	stale bool
}

var errTimeout = errors.New("timeout")

func (m *memRegister) unknown() bool { return m.flaky && m.r.IntN(8) == 0 }

func (m *memRegister) Read(ctx context.Context, key string) (int64, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.flaky && m.r.IntN(10) == 0 {
		return 0, false, errTimeout
	}
	src := m.vals
	if m.stale {
		src = m.old
	}
	v, ok := src[key]
	return v, ok, nil
}

func (m *memRegister) write(key string, v int64, cond func(cur int64, row bool) bool) (bool, int64, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, row := m.vals[key]
	if !cond(cur, row) {
		if m.unknown() {
			return false, 0, false, errTimeout
		}
		return false, cur, row, nil
	}
	if m.stale && m.r.IntN(3) == 0 {
		m.old = map[string]int64{}
		for k, x := range m.vals {
			m.old[k] = x
		}
	}
	m.vals[key] = v
	if m.unknown() {
		return false, 0, false, errTimeout
	}
	return true, 0, false, nil
}

func (m *memRegister) Insert(ctx context.Context, key string, v int64) (bool, int64, bool, error) {
	return m.write(key, v, func(_ int64, row bool) bool { return !row })
}

func (m *memRegister) CAS(ctx context.Context, key string, expect, v int64) (bool, int64, bool, error) {
	return m.write(key, v, func(cur int64, row bool) bool { return row && cur == expect })
}

// runRegister runs four clients on two keys, then the final reads, which
// begin at the returned index of ops.
func runRegister(t *testing.T, reg *memRegister) (checker.Result, []history.Op, int64) {
	t.Helper()
	h := &memHistory{start: time.Now()}
	w, err := NewRegister(func(int) (Register, error) { return reg, nil }, h,
		WithClients(4), WithLocks("a", "b"), WithThink(time.Millisecond), WithStagger(time.Millisecond), WithSeed(3))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := w.Run(ctx); err != nil {
		t.Fatal(err)
	}
	reg.mu.Lock()
	reg.flaky = false
	reg.mu.Unlock()
	finals := int64(len(h.all()))
	if err := w.FinalReads(context.Background(), reg); err != nil {
		t.Fatal(err)
	}
	ops := h.all()
	res, err := checker.Check(context.Background(), ops)
	if err != nil {
		t.Fatal(err)
	}
	return res, ops, finals
}

func TestRegisterWorkloadRecordsEveryOutcome(t *testing.T) {
	reg := &memRegister{vals: map[string]int64{}, r: rand.New(rand.NewPCG(1, 2)), flaky: true}
	res, ops, finals := runRegister(t, reg)
	if res.Verdict != checker.Valid {
		t.Fatalf("a linearizable register judged %s: %v", res.Verdict, res.Anomalies)
	}
	// Every outcome shows: applied, rejected with what was seen, unknown,
	// and failed reads; unknown moves the client to a new process.
	count := map[string]int{}
	for _, op := range ops {
		var v history.RegValue
		_ = json.Unmarshal(op.Value, &v)
		switch {
		case op.Type == history.OK && op.F != history.FRegRead:
			count["applied"]++
		case op.Type == history.Fail && len(v.Seen) > 0:
			count["rejected"]++
		case op.Type == history.Info:
			count["unknown"]++
		case op.Type == history.Fail && op.F == history.FRegRead:
			count["read failed"]++
		case op.Type == history.OK:
			count["read"]++
		}
	}
	for _, k := range []string{"applied", "rejected", "unknown", "read failed", "read"} {
		if count[k] == 0 {
			t.Errorf("no %s operation in %d lines: %v", k, len(ops), count)
		}
	}
	last := ops[len(ops)-1]
	if last.F != history.FRegRead || last.Type != history.OK {
		t.Errorf("the history does not end with the final reads: %+v", last)
	}
	checkPerClient(t, ops, 4, func(op history.Op) (int, bool) {
		k := slices.Index([]string{"a", "b"}, op.Key)
		return k, op.Index >= finals && k >= 0
	})
}

func TestRegisterWorkloadStaleReadsCaught(t *testing.T) {
	reg := &memRegister{vals: map[string]int64{}, old: map[string]int64{}, r: rand.New(rand.NewPCG(5, 6)), stale: true}
	res, _, _ := runRegister(t, reg)
	if res.Verdict != checker.Invalid {
		t.Fatalf("a register with stale reads judged %s", res.Verdict)
	}
}
