package recipe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/workload"
)

// Options are the settings every recipe takes. A recipe package keeps them
// beside its own settings and fills both with Configure.
type Options struct {
	Keyspace string         // default "lockcheck"
	Clock    workload.Clock // the client clock; default the system's
	Log      *slog.Logger   // default slog.Default()
	// TTL is how long a grant lives on the server, for recipes whose
	// grants expire; zero leaves the recipe's default.
	TTL time.Duration
	// MinPoll and MaxPoll bound the wait between attempts of a blocking Acquire.
	MinPoll, MaxPoll time.Duration
	// DCLocal keeps every statement in the client's own data centre: LWT
	// conditions at LOCAL_SERIAL, commits, reads and writes at
	// LOCAL_QUORUM (WithDCLocal; recipes whose Entry says DCLocal).
	DCLocal bool
}

// Serial is the consistency of the recipe's LWT conditions and serial
// reads: SERIAL, or LOCAL_SERIAL with WithDCLocal.
func (o Options) Serial() gocql.Consistency {
	if o.DCLocal {
		return gocql.LocalSerial
	}
	return gocql.Serial
}

// Quorum is the consistency of the recipe's quorum reads, writes and LWT
// commits: QUORUM, or LOCAL_QUORUM with WithDCLocal.
func (o Options) Quorum() gocql.Consistency {
	if o.DCLocal {
		return gocql.LocalQuorum
	}
	return gocql.Quorum
}

// Defaults are the shared options before any Option: a recipe package
// starts from them and changes what it needs (its poll bounds, its TTL).
func Defaults() Options {
	return Options{Keyspace: "lockcheck", Clock: workload.SystemClock{}, Log: slog.Default(),
		MinPoll: 2 * time.Millisecond, MaxPoll: 100 * time.Millisecond}
}

// Option configures a recipe: either a shared option (WithKeyspace, ...) or
// one of a package's own (made with Own). Only this package implements it,
// so that a package's option given to another package is an error, not a
// silent no-op.
type Option interface {
	apply(shared *Options, own any) error
}

type sharedOption func(*Options)

func (f sharedOption) apply(o *Options, _ any) error { f(o); return nil }

type ownOption[T any] func(*T)

func (f ownOption[T]) apply(_ *Options, own any) error {
	t, ok := own.(*T)
	if !ok {
		return fmt.Errorf("an option of %T given to a recipe configured by %T", (*T)(nil), own)
	}
	f(t)
	return nil
}

// Own makes an option that sets a recipe package's own configuration T.
func Own[T any](f func(*T)) Option { return ownOption[T](f) }

// WithKeyspace sets the keyspace of the recipe's tables (default "lockcheck").
func WithKeyspace(ks string) Option { return sharedOption(func(o *Options) { o.Keyspace = ks }) }

// WithClock sets the client clock a recipe reads (time UUIDs, client
// timestamps, wall-clock arithmetic); the nemesis skews it.
func WithClock(c workload.Clock) Option { return sharedOption(func(o *Options) { o.Clock = c }) }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return sharedOption(func(o *Options) { o.Log = l }) }

// WithTTL sets how long a grant lives on the server (recipes whose grants
// expire; the others ignore it).
func WithTTL(d time.Duration) Option { return sharedOption(func(o *Options) { o.TTL = d }) }

// WithPoll bounds the wait between attempts of a blocking Acquire.
func WithPoll(minPoll, maxPoll time.Duration) Option {
	return sharedOption(func(o *Options) { o.MinPoll, o.MaxPoll = minPoll, maxPoll })
}

// WithDCLocal runs the recipe in the client's own data centre: LOCAL_SERIAL
// for its LWT conditions and LOCAL_QUORUM beside them, the settings a
// multi-DC deployment picks for latency. LOCAL_SERIAL is linearizable only
// within one data centre: two clients in two data centres each run a Paxos
// round of their own replicas. Only recipes whose Entry says DCLocal take
// it (the runner refuses the others).
func WithDCLocal(on bool) Option { return sharedOption(func(o *Options) { o.DCLocal = on }) }

// Configure applies opts over the defaults already in shared and own, then
// checks the shared options. Constructors return its error: a bad keyspace
// is an input, not a programming error.
func Configure[T any](shared *Options, own *T, opts []Option) error {
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o.apply(shared, own); err != nil {
			return fmt.Errorf("recipe options: %w", err)
		}
	}
	var errs []error
	if _, err := Ident(shared.Keyspace); err != nil {
		errs = append(errs, fmt.Errorf("keyspace: %w", err))
	}
	if shared.Clock == nil {
		shared.Clock = workload.SystemClock{}
	}
	if shared.Log == nil {
		shared.Log = slog.Default()
	}
	if shared.TTL < 0 {
		errs = append(errs, fmt.Errorf("negative TTL %v", shared.TTL))
	}
	if shared.MinPoll <= 0 || shared.MaxPoll < shared.MinPoll {
		errs = append(errs, fmt.Errorf("poll bounds %v..%v: want 0 < min <= max", shared.MinPoll, shared.MaxPoll))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("recipe options: %w", err)
	}
	return nil
}

// Detached is a short context for cleanup after the caller's ended (deleting
// what an abandoned attempt may have left).
func Detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
}
