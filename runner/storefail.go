package runner

import (
	"fmt"
	"sync"
)

// StoreError is a run whose store failed under it (full or read-only): the
// clients and faults were stopped and the cluster healed, and the history
// holds every operation recorded before the failure (Ops of them) and checks
// as any other; the run vouches for no verdict.
type StoreError struct {
	Dir string
	Ops int64
	Err error
}

func (e *StoreError) Error() string {
	if e.Ops == 0 {
		return fmt.Sprintf("the store %s failed: %v", e.Dir, e.Err)
	}
	return fmt.Sprintf("the store failed under the run, which stopped: %v (the %d operations recorded before it are in %s)", e.Err, e.Ops, e.Dir)
}

func (e *StoreError) Unwrap() error { return e.Err }

// storeFailure is the history writer's word that the store can take no
// more: its cause, set once, then done closed.
type storeFailure struct {
	once sync.Once
	err  error // written before done is closed, read only after
	done chan struct{}
}

func (s *storeFailure) set(err error) {
	s.once.Do(func() {
		s.err = err
		close(s.done)
	})
}

// cause is the failure, or nil while the store takes lines.
func (s *storeFailure) cause() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}
