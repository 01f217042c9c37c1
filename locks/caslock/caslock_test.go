package caslock

import (
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/recipe"
)

// caslock's TTL is twice the timeout, in whole seconds truncated, and the
// table is quoted as its %q.%q.
func TestTTLAndTable(t *testing.T) {
	for _, c := range []struct {
		timeout time.Duration
		ttl     int
	}{{3 * time.Second, 6}, {1500 * time.Millisecond, 3}, {1200 * time.Millisecond, 2}, {0, 60}} {
		l, err := New(nil, recipe.WithTTL(c.timeout), recipe.WithKeyspace("ks"))
		if err != nil {
			t.Fatal(err)
		}
		if got := l.ttl(); got != c.ttl {
			t.Errorf("timeout %v: TTL %d, want %d", c.timeout, got, c.ttl)
		}
		if l.table != `"ks"."caslock_rows"` {
			t.Errorf("table %s", l.table)
		}
	}
}

func TestNewRefusesBadKeyspace(t *testing.T) {
	if _, err := New(nil, recipe.WithKeyspace(`ks"; DROP`)); err == nil {
		t.Error("a keyspace that is no CQL identifier: no error")
	}
}
