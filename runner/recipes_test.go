package runner

import (
	"context"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/recipe"
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
