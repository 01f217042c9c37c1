package workload

import (
	"slices"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// checkPerClient checks Jepsen's numbering in ops of clients: a process
// beyond the first ones began after its client's previous process had an
// unknown outcome, or is a final read (final says which, and the index of
// its lock or key) made for client index mod clients.
func checkPerClient(t *testing.T, ops []history.Op, clients int, final func(history.Op) (int, bool)) {
	t.Helper()
	unknown := map[int]bool{}
	replaced, finals := 0, 0
	for _, op := range ops {
		if op.Type == history.Info {
			unknown[op.Process] = true
		}
		if op.Type != history.Invoke || op.Process < clients {
			continue
		}
		if k, ok := final(op); ok {
			finals++
			if op.Process%clients != k%clients {
				t.Errorf("the final read of lock %d is process %d, client %d's; want client %d's", k, op.Process, op.Process%clients, k%clients)
			}
			continue
		}
		replaced++
		if !unknown[op.Process-clients] {
			t.Errorf("process %d began with no unknown outcome of process %d before it", op.Process, op.Process-clients)
		}
	}
	if replaced == 0 || finals == 0 {
		t.Errorf("nothing to check: %d operations of replacement processes, %d final reads beyond the first processes", replaced, finals)
	}
}

// finalRead is a lock workload's final read: the only reads it makes.
func finalRead(locks ...string) func(history.Op) (int, bool) {
	return func(op history.Op) (int, bool) {
		k := slices.Index(locks, op.Lock)
		return k, op.F == history.FRead && k >= 0
	}
}
