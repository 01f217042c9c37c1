package workload

import (
	"fmt"
	"slices"
	"sync"
)

// WithRetireStuckLocks moves the clients off a lock name once it is stuck
// for good: its holder was abandoned (its write or release came back
// unknown, or client-kill killed it) holding a grant with no lease, or an
// acquire of a lock whose grants have no lease came back unknown (it may
// have taken effect), so nothing will ever free it and every later
// acquire of it waits in vain. The name's slot
// takes a fresh name ("l0" -> "l0.1" -> "l0.2"), as Jepsen's independent
// keys do, so that a run goes on testing mutual exclusion instead of
// timing acquires out; the stuck name keeps its open hold in the history
// and the final reads read every name used. Leased grants free themselves,
// and their late writes are what the next holder must survive, so they
// never retire a name.
func WithRetireStuckLocks() Option { return func(c *config) { c.retireStuck = true } }

// lockNames are the names the clients pick from, one slot per configured
// name, and every name used so far.
type lockNames struct {
	mu      sync.Mutex
	slots   []string
	base    []string
	retired []int // per slot: how many names it has retired
	used    []string
}

func newLockNames(names []string) *lockNames {
	return &lockNames{slots: slices.Clone(names), base: slices.Clone(names), retired: make([]int, len(names)), used: slices.Clone(names)}
}

// slot is the name in slot k now.
func (n *lockNames) slot(k int) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.slots[k]
}

// retire gives the slot holding name a fresh name and returns it; false
// when name is in no slot (another client retired it already).
func (n *lockNames) retire(name string) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	k := slices.Index(n.slots, name)
	if k < 0 {
		return "", false
	}
	n.retired[k]++
	fresh := fmt.Sprintf("%s.%d", n.base[k], n.retired[k])
	n.slots[k] = fresh
	n.used = append(n.used, fresh)
	return fresh, true
}

// all is every name used, in the order first used.
func (n *lockNames) all() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.used)
}

// abandon ends client i's hold of g with its process: the grant stays with
// the old process, which will never release it. A grant with no lease then
// holds its lock for good, and with WithRetireStuckLocks the clients move on
// to a fresh name.
func (w *Workload) abandon(i int, g Grant) {
	w.drop(i)
	if g.Lease > 0 || g.Stealable {
		return
	}
	w.retire(i, g.Lock)
}

// retire moves the clients off name, which a retired process may hold for
// good (with WithRetireStuckLocks; without, it says so in the log).
func (w *Workload) retire(i int, name string) {
	if !w.cfg.retireStuck {
		// Said, so that a run whose acquires all time out from here on
		// has its cause in the log, and the way around it.
		w.cfg.log.Warn("lock stuck: a retired process may hold it with a grant that never expires; every later acquire of it waits (run --retire-stuck moves clients to a fresh name)",
			"client", i, "lock", name)
		return
	}
	if fresh, ok := w.names.retire(name); ok {
		w.cfg.log.Info("lock stuck: a retired process may hold it with a grant that never expires; clients move on",
			"client", i, "lock", name, "fresh", fresh)
	}
}
