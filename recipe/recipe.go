// Package recipe is what every lock recipe package shares: the registry
// entry a package lists its recipes in, the options the runner gives every
// recipe (keyspace, client clock, logger, TTL, poll bounds), the CQL
// identifier check and the poller.
//
// A recipe package exports Recipes []Entry; the runner's registry lists
// those slices, so adding a recipe is one entry in its package's list and
// adding a package is one line in the registry.
package recipe

import (
	"context"
	"errors"
	"fmt"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/workload"
)

// Entry is one lock recipe as the package that implements it registers it:
// the only place its name, promise, constructor and schema are written.
type Entry struct {
	// Name is the recipe's name for `lockcheck run --lock NAME`.
	Name string
	// Promise is what the recipe claims; the checker judges its runs by it.
	Promise history.Promise
	// New makes one client's lock. The runner passes WithKeyspace,
	// WithClock, WithTTL and WithLogger. New must not use the session yet (a
	// unit test may pass nil); it returns an error for bad options.
	New func(s *gocql.Session, opts ...Option) (workload.Lock, error)
	// Schema creates the recipe's tables in keyspace if they do not exist.
	Schema func(ctx context.Context, s *gocql.Session, keyspace string) error
	// Resource configures the lock-protected resource of the recipe's runs;
	// a control recipe breaks it on purpose (workload.AcceptAnyToken).
	Resource []workload.ResourceOption
	// DCLocal says that the recipe honours WithDCLocal (LOCAL_SERIAL and
	// LOCAL_QUORUM instead of SERIAL and QUORUM): the runner refuses
	// `--dc-local` for a recipe that would ignore it.
	DCLocal bool
	// NewResource, when set, is the protected resource of the recipe's
	// runs instead of lockcheck's resource table: a lock whose fencing
	// lives in the data (a workload.FencedWriter) writes the resource
	// itself, and the final reads read it here. Schema creates its tables.
	NewResource func(s *gocql.Session, keyspace string) (workload.Resource, error)
	// Does and Fails say, in a sentence each, what the recipe does (its CQL
	// and consistency levels) and how it fails: docs/recipes.md is rendered
	// from them (runner's TestRecipesReference), so every registered recipe
	// has them.
	Does, Fails string
}

// Validate tells whether e can be registered.
func (e Entry) Validate() error {
	var errs []error
	if !nameRE.MatchString(e.Name) {
		errs = append(errs, fmt.Errorf("bad name %q", e.Name))
	}
	if !KnownPromise(e.Promise) {
		errs = append(errs, fmt.Errorf("unknown promise %q", e.Promise))
	}
	if e.New == nil {
		errs = append(errs, errors.New("no constructor"))
	}
	if e.Schema == nil {
		errs = append(errs, errors.New("no schema"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("recipe %q: %w", e.Name, err)
	}
	return nil
}

// KnownPromise tells whether the checker knows p. An empty promise is not
// one: a run recorded with it would be judged as mutex by default.
func KnownPromise(p history.Promise) bool {
	return p == history.PromiseMutex || p == history.PromiseFenced
}

// Constructor adapts a package's typed constructor (New returning *Lease,
// say) to Entry.New.
func Constructor[L workload.Lock](f func(*gocql.Session, ...Option) (L, error)) func(*gocql.Session, ...Option) (workload.Lock, error) {
	return func(s *gocql.Session, opts ...Option) (workload.Lock, error) {
		l, err := f(s, opts...)
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return l, nil
	}
}
