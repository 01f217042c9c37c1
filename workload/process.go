package workload

import "sync"

// processes numbers the clients' processes as Jepsen does: client c starts
// as process c and each replacement adds the client count, so a history's
// reader finds a process's client as p mod clients (history.Meta.ClientOf)
// and can tell a client's own replacement from another client.
type processes struct {
	mu      sync.Mutex
	clients int
	current []int // client -> its current process number
}

func newProcesses(clients int) *processes {
	ps := &processes{clients: clients, current: make([]int, clients)}
	for c := range ps.current {
		ps.current[c] = c
	}
	return ps
}

// of is client c's current process number.
func (ps *processes) of(c int) int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.current[c]
}

// next moves client c to a new process and returns its number: after an
// unknown outcome (the old operation may still be in flight), or for a
// final read made on c's behalf once the clients stopped.
func (ps *processes) next(c int) int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.current[c] += ps.clients
	return ps.current[c]
}
