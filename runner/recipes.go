package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/bakery"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/lease"
	"github.com/lockcheck/lockcheck/music"
	"github.com/lockcheck/lockcheck/workload"
)

// CQLEnv is an Env that serves CQL sessions (the Cassandra cluster).
type CQLEnv interface {
	Env
	Session(ctx context.Context) (*gocql.Session, error)
	Keyspace() string
}

// Promises are what each recipe promises, recorded in the run's meta line.
// The fixed recipes that hand out fencing tokens promise fencing, not
// exclusive holds: their holds may overlap (stale reads, skewed clocks) as
// long as the resource refuses the stale holder.
var Promises = map[string]history.Promise{
	"lease": history.PromiseMutex, "racy": history.PromiseMutex, "music": history.PromiseMutex,
	"bakery": history.PromiseMutex, "bakery-one": history.PromiseMutex,
	"lease-fenced": history.PromiseFenced, "music-seq": history.PromiseFenced,
}

// cqlRecipe makes a recipe from a package's constructor.
func cqlRecipe(name string, schema func(context.Context, *gocql.Session, string) error,
	newLock func(s *gocql.Session, ks string, clock workload.Clock, t *Test) workload.Lock) Recipe {
	return Recipe{Name: name, Promise: Promises[name], Setup: func(ctx context.Context, env Env, t *Test) (workload.NewLockFunc, workload.Resource, func(), error) {
		ce, ok := env.(CQLEnv)
		if !ok {
			return nil, nil, nil, fmt.Errorf("recipe %s needs a Cassandra cluster", name)
		}
		s, err := ce.Session(ctx)
		if err != nil {
			return nil, nil, nil, err
		}
		ks := ce.Keyspace()
		res := workload.NewCassandraResource(s, ks)
		if err := schema(ctx, s, ks); err != nil {
			s.Close()
			return nil, nil, nil, err
		}
		if err := res.CreateSchema(ctx); err != nil {
			s.Close()
			return nil, nil, nil, err
		}
		nl := func(client int, clock workload.Clock) (workload.Lock, error) {
			return newLock(s, ks, clock, t), nil
		}
		return nl, res, s.Close, nil
	}}
}

// Recipes are the locks `lockcheck run --lock` takes, by name.
func Recipes() map[string]Recipe {
	rs := map[string]Recipe{}
	for _, r := range lease.Recipes {
		rs[r.Name] = cqlRecipe(r.Name, lease.CreateSchema, func(s *gocql.Session, ks string, c workload.Clock, t *Test) workload.Lock {
			return r.New(s, lease.WithKeyspace(ks), lease.WithClock(c), lease.WithTTL(t.TTL), lease.WithLogger(t.Log))
		})
	}
	for _, r := range music.Recipes {
		rs[r.Name] = cqlRecipe(r.Name, music.CreateSchema, func(s *gocql.Session, ks string, c workload.Clock, t *Test) workload.Lock {
			return r.New(s, music.WithKeyspace(ks), music.WithClock(c), music.WithLogger(t.Log))
		})
	}
	for _, r := range bakery.Recipes {
		rs[r.Name] = cqlRecipe(r.Name, bakery.CreateSchema, func(s *gocql.Session, ks string, c workload.Clock, t *Test) workload.Lock {
			return r.New(s, bakery.WithKeyspace(ks), bakery.WithClock(c), bakery.WithLogger(t.Log))
		})
	}
	return rs
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
