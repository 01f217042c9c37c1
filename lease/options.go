package lease

import (
	"fmt"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/recipe"
)

// DefaultTTL is the lease's time to live when WithTTL is not given. The
// published table has default_time_to_live = 180; the tests use seconds.
const DefaultTTL = 180 * time.Second

type config struct {
	recipe.Options
	table       string        // "" = the recipe's default table
	margin      time.Duration // < 0: default
	consistency gocql.Consistency
}

// Option configures a Lease, Racy or Election: the shared options of package
// recipe (WithKeyspace, WithClock, WithTTL, WithLogger, WithPoll) or this
// package's own below. The client clock is read for wall-clock arithmetic
// (the poll time from writetime); grant deadlines use the process's
// monotonic clock, which stepping a wall clock does not move. The TTL is
// rounded up to whole seconds, as CQL TTLs are (default DefaultTTL).
type Option = recipe.Option

// WithTable overrides the recipe's table (default "leases", "leases_fenced",
// "leases_racy" or "leadership_election").
func WithTable(t string) Option { return recipe.Own(func(c *config) { c.table = t }) }

// WithMargin sets the safety margin subtracted from the TTL for a grant's
// validity. The default is 1 s + TTL/10: Cassandra stores expiry in whole
// seconds (local deletion time = now in seconds + TTL), so a cell can expire
// up to 1 s before its nominal TTL even on a cluster without clock skew.
func WithMargin(d time.Duration) Option { return recipe.Own(func(c *config) { c.margin = d }) }

// WithConsistency sets the commit consistency of the LWTs (default QUORUM,
// LOCAL_QUORUM with recipe.WithDCLocal); conditions are read at SERIAL
// (LOCAL_SERIAL with recipe.WithDCLocal).
func WithConsistency(cl gocql.Consistency) Option {
	return recipe.Own(func(c *config) { c.consistency = cl })
}

// newConfig applies opts and returns the config and the quoted
// keyspace.table of the recipe.
func newConfig(defaultTable string, opts []Option) (config, string, error) {
	c := config{Options: recipe.Defaults(), margin: -1, consistency: gocql.Quorum}
	c.TTL = DefaultTTL
	c.MinPoll, c.MaxPoll = 5*time.Millisecond, 250*time.Millisecond
	if err := recipe.Configure(&c.Options, &c, opts); err != nil {
		return c, "", fmt.Errorf("lease: %w", err)
	}
	if c.table == "" {
		c.table = defaultTable
	}
	if c.TTL < time.Second {
		c.TTL = time.Second
	}
	table, err := recipe.Table(c.Keyspace, c.table)
	if err != nil {
		return c, "", fmt.Errorf("lease: %w", err)
	}
	return c, table, nil
}

// commit is the LWTs' commit consistency: the option, with QUORUM made
// LOCAL_QUORUM by recipe.WithDCLocal.
func (c config) commit() gocql.Consistency {
	if c.consistency == gocql.Quorum {
		return c.Quorum()
	}
	return c.consistency
}

// ttlSeconds is a CQL TTL: whole seconds, rounded up, at least 1.
func ttlSeconds(d time.Duration) int {
	s := int((d + time.Second - 1) / time.Second)
	return max(s, 1)
}

// validity is how long a grant whose attempt started at start is valid
// for: the TTL the server applies minus the margin, never zero (zero means
// "does not expire" in a Grant).
//
// A negative margin is the default, 1 s + TTL/10 of the TTL this grant was
// given (TryAcquire's ttl, as lockd passes each request's): a default
// computed once from the configured TTL would eat a shorter lease whole.
func validity(ttl, margin time.Duration) time.Duration {
	if margin < 0 {
		margin = time.Second + ttl/10
	}
	v := time.Duration(ttlSeconds(ttl))*time.Second - margin
	return max(v, time.Millisecond)
}
