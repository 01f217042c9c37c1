package lease

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"regexp"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/workload"
)

// DefaultTTL is the lease's time to live when WithTTL is not given. The
// published table has default_time_to_live = 180; the tests use seconds.
const DefaultTTL = 180 * time.Second

type config struct {
	keyspace    string
	table       string // "" = the recipe's default table
	clock       workload.Clock
	ttl         time.Duration
	margin      time.Duration // < 0: default
	consistency gocql.Consistency
	log         *slog.Logger
	minPoll     time.Duration
	maxPoll     time.Duration
}

// Option configures a Lease, Racy or Election.
type Option func(*config)

// WithKeyspace sets the keyspace (default "lockcheck").
func WithKeyspace(ks string) Option { return func(c *config) { c.keyspace = ks } }

// WithTable overrides the recipe's table (default "leases", "leases_fenced",
// "leases_racy" or "leadership_election").
func WithTable(t string) Option { return func(c *config) { c.table = t } }

// WithClock sets the client clock, read for wall-clock arithmetic (the poll
// time from writetime). Grant deadlines use the process's monotonic clock:
// stepping a wall clock does not move a running timer.
func WithClock(clk workload.Clock) Option { return func(c *config) { c.clock = clk } }

// WithTTL sets the lease's time to live (rounded up to whole seconds, as
// CQL TTLs are).
func WithTTL(d time.Duration) Option { return func(c *config) { c.ttl = d } }

// WithMargin sets the safety margin subtracted from the TTL for a grant's
// validity. The default is 1 s + TTL/10: Cassandra stores expiry in whole
// seconds (local deletion time = now in seconds + TTL), so a cell can expire
// up to 1 s before its nominal TTL even on a cluster without clock skew.
func WithMargin(d time.Duration) Option { return func(c *config) { c.margin = d } }

// WithConsistency sets the commit consistency of the LWTs (default QUORUM);
// conditions are always read at SERIAL.
func WithConsistency(cl gocql.Consistency) Option { return func(c *config) { c.consistency = cl } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithPoll bounds the wait between attempts of a blocking Acquire.
func WithPoll(minPoll, maxPoll time.Duration) Option {
	return func(c *config) { c.minPoll, c.maxPoll = minPoll, maxPoll }
}

func newConfig(defaultTable string, opts []Option) config {
	c := config{
		keyspace:    "lockcheck",
		clock:       workload.SystemClock{},
		ttl:         DefaultTTL,
		margin:      -1,
		consistency: gocql.Quorum,
		log:         slog.Default(),
		minPoll:     5 * time.Millisecond,
		maxPoll:     250 * time.Millisecond,
	}
	for _, o := range opts {
		o(&c)
	}
	if c.table == "" {
		c.table = defaultTable
	}
	if c.ttl < time.Second {
		c.ttl = time.Second
	}
	return c
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

var identRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,47}$`)

// ident quotes a configurable CQL identifier after checking it, so that a
// table or column name can be a reserved word ("group") but never inject CQL.
func ident(name string) (string, error) {
	if !identRE.MatchString(name) {
		return "", fmt.Errorf("bad CQL identifier %q", name)
	}
	return `"` + name + `"`, nil
}

func mustIdent(name string) string {
	q, err := ident(name)
	if err != nil {
		panic(err)
	}
	return q
}

// poller waits between attempts with jittered exponential backoff.
type poller struct{ cur, max time.Duration }

func newPoller(c config) *poller { return &poller{cur: c.minPoll, max: c.maxPoll} }

func (p *poller) wait(ctx context.Context) error {
	d := p.cur/2 + rand.N(p.cur/2+1)
	p.cur = min(p.cur*2, p.max)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// detached is a short context for cleanup after the caller's ended.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
}
