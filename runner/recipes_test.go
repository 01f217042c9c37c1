package runner

import (
	"context"
	"errors"
	"strings"
	"testing"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/recipe"
	"github.com/lockcheck/lockcheck/workload"
)

// Every recipe is written once, in its package, and records the promise its
// package gives it (a fenced recipe judged as mutex was the old failure).
func TestRegistry(t *testing.T) {
	if err := checkRegistry(registry); err != nil {
		t.Fatal(err)
	}
	rs := Recipes()
	n := 0
	for _, pkg := range registry {
		for _, e := range pkg {
			n++
			if got := rs[e.Name].Promise; got != e.Promise {
				t.Errorf("%s: recorded promise %q, its package says %q", e.Name, got, e.Promise)
			}
		}
	}
	if len(rs) != n || len(RecipeNames()) != n {
		t.Errorf("%d recipes, %d names, %d entries", len(rs), len(RecipeNames()), n)
	}
	for _, name := range []string{"lease", "lease-fenced", "racy", "music", "music-seq", "bakery", "bakery-one"} {
		if _, err := LookupRecipe(name); err != nil {
			t.Error(err)
		}
	}
	if _, err := LookupRecipe("nope"); err == nil || !strings.Contains(err.Error(), "lease-fenced") {
		t.Errorf("unknown lock: %v, want the list of names", err)
	}
}

func TestCheckRegistryRefuses(t *testing.T) {
	e := registry[0][0]
	noPromise := e
	noPromise.Promise = ""
	for name, reg := range map[string][][]recipe.Entry{
		"twice":      {{e}, {e}},
		"no promise": {{noPromise}},
	} {
		if checkRegistry(reg) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A CQL recipe on an Env without CQL is a clear error, not a panic.
func TestFromEntryNeedsCQL(t *testing.T) {
	r, err := LookupRecipe("lease")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := r.Setup(context.Background(), nil, &Test{}); err == nil || !strings.Contains(err.Error(), "Cassandra") {
		t.Fatalf("setup without a cluster: %v", err)
	}
}

// With clients pinned, each client's critical sections go through the
// resource made over its node's session, the final reads through the
// shared one.
func TestPinResourceGoesThroughEachClientsNode(t *testing.T) {
	sessions := map[string]*gocql.Session{"n1": {}, "n2": {}}
	shared := workload.NewCassandraResource(&gocql.Session{}, "ks")
	made := map[*gocql.Session]workload.Resource{}
	res, err := pinResource(shared, sessions, map[int]string{0: "n1", 1: "n2", 2: "n1"}, func(s *gocql.Session) (workload.Resource, error) {
		r := workload.NewCassandraResource(s, "ks")
		made[s] = r
		return r, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cr, ok := res.(workload.ClientResource)
	if !ok {
		t.Fatalf("%T is no workload.ClientResource", res)
	}
	for c, n := range map[int]string{0: "n1", 1: "n2", 2: "n1"} {
		if got := cr.Client(c); got != made[sessions[n]] {
			t.Errorf("client %d writes through %v, want %s's resource", c, got, n)
		}
	}
	if got := res.(pinnedResource).Resource; got != workload.Resource(shared) {
		t.Errorf("the final reads go through %v, want the shared resource", got)
	}
	if _, err := pinResource(shared, sessions, nil, func(*gocql.Session) (workload.Resource, error) { return nil, errors.New("no table") }); err == nil ||
		!strings.Contains(err.Error(), "no table") {
		t.Errorf("a resource that cannot be made: %v, want its error", err)
	}
}
