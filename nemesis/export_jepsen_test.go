//go:build jepsen

package nemesis

import (
	"context"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Exported for the jepsen tests, which are package nemesis_test (they need
// clustertest, which imports nemesis).

// StartKind starts the nemesis's i-th kind once.
func StartKind(ctx context.Context, n *Nemesis, i int) (Stop, error) {
	return n.kinds[i].Start(ctx, &n.env, time.Second)
}

// LossMode is the mode the nemesis's next loss fault would draw.
func LossMode(n *Nemesis) string {
	d, err := (&loss{}).draw(&n.env)
	if err != nil {
		return ""
	}
	return d.Mode
}

// ChainOf is the iptables chain of a kind.
func ChainOf(kind string) string { return string(chainOf(kind)) }

// Vanish ends what the nemesis runs in this process (a clock strobe) and
// nothing else, as if its process had been killed.
func Vanish(n *Nemesis) {
	for _, k := range n.kinds {
		if c, ok := k.Injector.(*clock); ok {
			c.stopStrobe()
		}
	}
}

// MemRec is the tests' in-memory recorder.
type MemRec = memRec

// All are the lines recorded.
func (r *memRec) All() []history.Op { return r.all() }
