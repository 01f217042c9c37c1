package workload

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
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

func (m *memRegister) Delete(ctx context.Context, key string, expect int64) (bool, int64, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, row := m.vals[key]
	if !row || cur != expect {
		if m.unknown() {
			return false, 0, false, errTimeout
		}
		return false, cur, row, nil
	}
	if m.stale && m.r.IntN(3) == 0 {
		m.old = maps.Clone(m.vals)
	}
	delete(m.vals, key)
	if m.unknown() {
		return false, 0, false, errTimeout
	}
	return true, 0, false, nil
}

// runRegister runs four clients on two keys, then the final reads, which
// begin at the returned index of ops.
func runRegister(t *testing.T, reg *memRegister, opts ...Option) (checker.Result, []history.Op, int64) {
	t.Helper()
	h := &memHistory{start: time.Now()}
	w, err := NewRegister(func(int) (Register, error) { return reg, nil }, h,
		append([]Option{WithClients(4), WithLocks("a", "b"), WithThink(time.Millisecond), WithStagger(time.Millisecond), WithSeed(3)}, opts...)...)
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

// With deletes the clients also delete keys (applied, rejected with what
// the key held, unknown), and a linearizable register stays valid; one
// that reads a copy from before its latest writes, deletes included, is
// caught.
func TestRegisterWorkloadDeletes(t *testing.T) {
	reg := &memRegister{vals: map[string]int64{}, r: rand.New(rand.NewPCG(7, 8)), flaky: true}
	res, ops, _ := runRegister(t, reg, WithDeletes())
	if res.Verdict != checker.Valid {
		t.Fatalf("a linearizable register with deletes judged %s: %v", res.Verdict, res.Anomalies)
	}
	count := map[history.Type]int{}
	for _, op := range ops {
		if op.F == history.FRegDelete {
			count[op.Type]++
		}
	}
	if count[history.Invoke] == 0 || count[history.OK] == 0 || count[history.Fail] == 0 {
		t.Errorf("deletes by outcome %v: want invoked, applied and rejected ones", count)
	}
	stale := &memRegister{vals: map[string]int64{}, old: map[string]int64{}, r: rand.New(rand.NewPCG(9, 10)), stale: true}
	if res, _, _ := runRegister(t, stale, WithDeletes()); res.Verdict != checker.Invalid {
		t.Errorf("a register with stale reads and deletes judged %s", res.Verdict)
	}
	// Without the option the mix is the one the register's rows were
	// measured with: no delete.
	_, ops, _ = runRegister(t, &memRegister{vals: map[string]int64{}, r: rand.New(rand.NewPCG(7, 8))})
	if slices.ContainsFunc(ops, func(op history.Op) bool { return op.F == history.FRegDelete }) {
		t.Error("a delete without WithDeletes")
	}
}

// client-hold's door: once HoldAtRest returns, no client starts an
// operation until release, and they go on after it.
func TestRegisterHoldAtRest(t *testing.T) {
	reg := &memRegister{vals: map[string]int64{}, r: rand.New(rand.NewPCG(3, 4))}
	h := &memHistory{start: time.Now()}
	w, err := NewRegister(func(int) (Register, error) { return reg, nil }, h,
		WithClients(3), WithLocks("a", "b"), WithThink(time.Millisecond), WithStagger(time.Millisecond), WithSeed(5))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	release, err := w.Control().HoldAtRest(context.Background(), []int{0, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	held := len(h.all())
	if held == 0 {
		t.Fatal("no operation before the clients rested")
	}
	if ops := h.all(); ops[len(ops)-1].Type == history.Invoke {
		t.Errorf("held with an operation open: %+v", ops[len(ops)-1])
	}
	time.Sleep(20 * time.Millisecond) // the clients' think time is 1 ms: they would have gone on
	if n := len(h.all()); n != held {
		t.Errorf("%d operations recorded while the clients were held", n-held)
	}
	release()
	for len(h.all()) == held {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
