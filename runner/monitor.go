package runner

import (
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/lockcheck/lockcheck/history"
)

// recorder is where the monitor passes operations on (history.Writer).
type recorder interface {
	Append(op history.Op) (history.Op, error)
}

// monitor passes every operation to the history and keeps the running
// figures of the progress line, including a cheap online count of
// overlapping holds (history.md's holds: from an ok acquire to the next
// release's invocation or the lease's end). The checkers decide the verdict;
// this count only tells the operator early that something is wrong.
type monitor struct {
	next  recorder
	store *storeFailure

	ops, ok, fail, info, overlaps atomic.Int64

	mu       sync.Mutex
	invoked  map[int]int64           // process -> time of its acquire invocation
	holds    map[string]map[int]hold // lock -> process -> hold
	nemStart map[string]int
}

type hold struct{ end int64 } // 0: until released

func newMonitor(next recorder) *monitor {
	return &monitor{next: next, store: &storeFailure{done: make(chan struct{})}, invoked: map[int]int64{}, holds: map[string]map[int]hold{}, nemStart: map[string]int{}}
}

func (m *monitor) Append(op history.Op) (history.Op, error) {
	op, err := m.next.Append(op)
	if err != nil {
		return op, err
	}
	m.ops.Add(1)
	switch op.Type {
	case history.OK:
		m.ok.Add(1)
	case history.Fail:
		m.fail.Add(1)
	case history.Info:
		if op.Process != history.NemesisProcess {
			m.info.Add(1)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if op.Process == history.NemesisProcess {
		if k, start, ok := history.FaultEvent(op.F); ok && start {
			m.nemStart[k]++
		}
		return op, nil
	}
	switch {
	case op.F == history.FAcquire && op.Type == history.Invoke:
		m.invoked[op.Process] = op.Time
	case op.F == history.FAcquire && op.Type == history.OK:
		hs := m.holds[op.Lock]
		if hs == nil {
			hs = map[int]hold{}
			m.holds[op.Lock] = hs
		}
		for p, h := range hs {
			if h.end != 0 && h.end <= op.Time {
				delete(hs, p)
				continue
			}
			if p != op.Process {
				m.overlaps.Add(1)
			}
		}
		var end int64
		if op.LeaseMS > 0 {
			end = m.invoked[op.Process] + op.LeaseMS*1e6
		}
		hs[op.Process] = hold{end: end}
	case op.F == history.FRelease && op.Type == history.Invoke:
		delete(m.holds[op.Lock], op.Process)
	}
	return op, nil
}

func (m *monitor) counts() (ok, fail, info int64) {
	return m.ok.Load(), m.fail.Load(), m.info.Load()
}

func (m *monitor) faults() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int, len(m.nemStart))
	for k, v := range m.nemStart {
		out[k] = v
	}
	return out
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
