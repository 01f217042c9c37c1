package music

import (
	"testing"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/recipe"
)

func TestRecipesAndDefaults(t *testing.T) {
	tests := []struct {
		name string
		opts []Option
		seq  bool
		cl   gocql.Consistency
	}{
		{"music", nil, false, gocql.One},
		{"music-seq", nil, true, gocql.Quorum},
		{"music", []Option{WithConsistency(gocql.Quorum)}, false, gocql.Quorum},
		{"music-seq", []Option{WithConsistency(gocql.One)}, true, gocql.One},
	}
	for _, tt := range tests {
		var found bool
		for _, r := range Recipes {
			if r.Name != tt.name {
				continue
			}
			found = true
			l, err := r.New(nil, tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			m := l.(*Music)
			if m.seq != tt.seq || m.cfg.consistency != tt.cl {
				t.Errorf("%s %v: seq %v cl %v, want %v %v", tt.name, tt.opts, m.seq, m.cfg.consistency, tt.seq, tt.cl)
			}
		}
		if !found {
			t.Errorf("no recipe %q", tt.name)
		}
	}
}

func TestBadKeyspaceIsAnError(t *testing.T) {
	for _, r := range Recipes {
		if err := r.Validate(); err != nil {
			t.Error(err)
		}
		if _, err := r.New(nil, recipe.WithKeyspace("ks.x")); err == nil {
			t.Errorf("%s: a bad keyspace was accepted", r.Name)
		}
	}
}
