package temporal

import (
	"context"
	"errors"
	"testing"

	"github.com/lockcheck/lockcheck/recipe"
)

// A lock name is one shard, the same for every client, and a valid int
// shard id.
func TestShardID(t *testing.T) {
	seen := map[int32]string{}
	for _, name := range []string{"l0", "l1", "l2", "run-20261123T232019-l0", ""} {
		id := ShardID(name)
		if id < 0 || id != ShardID(name) {
			t.Errorf("ShardID(%q) = %d: want a stable non-negative id", name, id)
		}
		if other, ok := seen[id]; ok {
			t.Errorf("%q and %q share shard %d", name, other, id)
		}
		seen[id] = name
	}
}

func TestNewAndResource(t *testing.T) {
	if _, err := New(nil, recipe.WithKeyspace("bad keyspace")); err == nil {
		t.Error("a bad keyspace: no error")
	}
	if _, err := NewResource(nil, "bad keyspace"); err == nil {
		t.Error("a resource in a bad keyspace: no error")
	}
	r, err := NewResource(nil, "ks")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Add(context.Background(), "l0", 1, 1, nil); !errors.Is(err, errThroughLock) {
		t.Errorf("Add beside the lock: %v, want the refusal", err)
	}
}
