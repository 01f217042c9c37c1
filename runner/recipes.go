package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/bakery"
	"github.com/lockcheck/lockcheck/lease"
	"github.com/lockcheck/lockcheck/locks/accordtxn"
	"github.com/lockcheck/lockcheck/locks/caslock"
	"github.com/lockcheck/lockcheck/locks/temporal"
	"github.com/lockcheck/lockcheck/music"
	"github.com/lockcheck/lockcheck/recipe"
	"github.com/lockcheck/lockcheck/workload"
)

// registry lists the recipes of every lock package, each written once, in
// its own package (name, promise, constructor, schema). A new variant is an
// entry in its package's Recipes; a new package is one line here.
var registry = [][]recipe.Entry{
	lease.Recipes,
	music.Recipes,
	bakery.Recipes,
	temporal.Recipes,
	caslock.Recipes,
	accordtxn.Recipes,
}

// FromEntry makes a Recipe of a CQL recipe's entry: on env it opens a
// session, creates the entry's schema and the resource's, and gives each
// client a lock made with the run's keyspace, the client's clock, the TTL
// and the logger.
func FromEntry(e recipe.Entry) Recipe {
	return Recipe{Name: e.Name, Promise: e.Promise, DCLocal: e.DCLocal, Setup: func(ctx context.Context, env Env, t *Test) (workload.NewLockFunc, workload.Resource, func(), error) {
		if err := e.Validate(); err != nil {
			return nil, nil, nil, err
		}
		if env == nil {
			return nil, nil, nil, fmt.Errorf("recipe %s needs a Cassandra cluster", e.Name)
		}
		s, res, err := cassandraResource(ctx, env, e.Schema, e.Resource...)
		if err != nil {
			return nil, nil, nil, err
		}
		ks := env.Keyspace()
		if e.NewResource != nil {
			if res, err = e.NewResource(s, ks); err != nil {
				s.Close()
				return nil, nil, nil, fmt.Errorf("recipe %s: resource: %w", e.Name, err)
			}
		}
		closeFn := s.Close
		sessionOf := func(int) *gocql.Session { return s }
		if t.pins != nil {
			// Each client's lock queries and critical sections through its
			// own coordinator; the schema and the final reads keep the
			// shared session.
			pinned, closePinned, err := nodeSessions(ctx, env, t.pins)
			if err != nil {
				s.Close()
				return nil, nil, nil, err
			}
			closeFn = func() { closePinned(); s.Close() }
			sessionOf = func(client int) *gocql.Session { return pinned[t.pins[client]] }
			res, err = pinResource(res, pinned, t.pins, func(ps *gocql.Session) (workload.Resource, error) {
				if e.NewResource != nil {
					return e.NewResource(ps, ks)
				}
				return workload.NewCassandraResource(ps, ks, e.Resource...), nil
			})
			if err != nil {
				closeFn()
				return nil, nil, nil, fmt.Errorf("recipe %s: %w", e.Name, err)
			}
		} else if t.dcs != nil {
			// Each client's lock queries its own data centre, as an
			// application deployed in both would.
			local, closeLocal, err := dcSessions(ctx, env, t.dcs)
			if err != nil {
				s.Close()
				return nil, nil, nil, err
			}
			closeFn = func() { closeLocal(); s.Close() }
			sessionOf = func(client int) *gocql.Session { return local[t.dcs[client]] }
		}
		nl := func(client int, clock workload.Clock) (workload.Lock, error) {
			return e.New(sessionOf(client), recipe.WithKeyspace(ks), recipe.WithClock(clock), recipe.WithTTL(t.TTL), recipe.WithLogger(t.Log), recipe.WithDCLocal(t.DCLocal))
		}
		// A constructor that refuses these options refuses them for every
		// client: say so before the clients start.
		if _, err := nl(0, workload.SystemClock{}); err != nil {
			closeFn()
			return nil, nil, nil, fmt.Errorf("recipe %s: %w", e.Name, err)
		}
		return nl, res, closeFn, nil
	}}
}

// Recipes are the locks `lockcheck run --lock` takes, by name.
func Recipes() map[string]Recipe {
	rs := map[string]Recipe{}
	for _, pkg := range registry {
		for _, e := range pkg {
			rs[e.Name] = FromEntry(e)
		}
	}
	return rs
}

// checkRegistry tells whether every entry is valid and every name unique.
func checkRegistry(reg [][]recipe.Entry) error {
	var errs []error
	seen := map[string]bool{}
	for _, pkg := range reg {
		for _, e := range pkg {
			if err := e.Validate(); err != nil {
				errs = append(errs, err)
			}
			if seen[e.Name] {
				errs = append(errs, fmt.Errorf("recipe %q registered twice", e.Name))
			}
			seen[e.Name] = true
		}
	}
	return errors.Join(errs...)
}

// DCLocalRecipes are the names of the recipes that take Test.DCLocal, sorted.
func DCLocalRecipes() []string {
	var names []string
	for n, r := range Recipes() {
		if r.DCLocal {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// RecipeNames are the names of Recipes, sorted.
func RecipeNames() []string {
	var names []string
	for n := range Recipes() {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// LookupRecipe finds a recipe by name.
func LookupRecipe(name string) (Recipe, error) {
	r, ok := Recipes()[name]
	if !ok {
		return Recipe{}, fmt.Errorf("unknown lock %q (want one of %s)", name, strings.Join(RecipeNames(), ", "))
	}
	return r, nil
}
