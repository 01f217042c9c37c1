// Package workload drives concurrent clients against a Lock and the
// lock-protected resource, recording every operation in a history.
package workload

import (
	"context"
	"errors"
	"time"
)

// Sentinel errors that every Lock wraps, so that a client can tell a definite
// failure from an unknown outcome with errors.Is.
var (
	// ErrNotAcquired: the lock was certainly not granted (definite failure).
	ErrNotAcquired = errors.New("lock not acquired")
	// ErrHeldByOther: the lock is held by another owner (definite failure).
	ErrHeldByOther = errors.New("lock held by another owner")
	// ErrNotHeld: a release or renew by an owner that does not hold the lock.
	ErrNotHeld = errors.New("lock not held by this owner")
	// ErrUnknown: the outcome is unknown (CAS timeout, client timeout): it
	// may take effect later, or never. Never retry such an operation blindly.
	ErrUnknown = errors.New("lock outcome unknown")
)

// Grant is a held lock as its holder sees it.
type Grant struct {
	Lock  string
	Owner string
	// Token is the fencing token; zero when the recipe has none.
	Token int64
	// Deadline is when the grant stops being valid on the client's clock
	// (read with a monotonic reading); zero when the grant does not expire.
	Deadline time.Time
	// Lease is the validity counted from the acquire's invocation; zero when
	// the grant does not expire. Recorded as lease_ms in the history.
	Lease time.Duration
	// Stealable says that a later acquire takes the lock from this grant's
	// holder without waiting for it (Temporal's shard ownership): the grant
	// has no lease, yet an abandoned one keeps no one out.
	Stealable bool
}

// Lock is what a client drives. Implementations wrap ErrNotAcquired,
// ErrHeldByOther, ErrNotHeld or ErrUnknown in the errors they return.
type Lock interface {
	Acquire(ctx context.Context, name, owner string) (Grant, error)
	Release(ctx context.Context, g Grant) error
}

// Clock is the client clock the recipes read (time UUIDs, client timestamps).
// It is injectable so that the nemesis can skew a client's clock.
type Clock interface {
	Now() time.Time
}

// ProcessPauser is a Lock whose client runs in a process of its own (a
// plug-in of `--lock-cmd`). A client pause stops that process as well as
// the harness's client, so that the lock's own code (renewals, heartbeats)
// stalls too, as in a real GC pause; resume lets it go on.
type ProcessPauser interface {
	PauseProcess() (resume func() error, err error)
}

// ClockSetter is a Lock whose client reads a clock the SkewClock cannot
// reach (a plug-in process under libfaketime). SetClientClock moves it with
// the client's SkewClock.
type ClockSetter interface {
	SetClockOffset(d time.Duration) error
}

// FencedWriter is a Lock whose fencing lives in the data it protects
// (Temporal's shard ownership: every write in the shard's partition carries
// IF range_id = ? in the same conditional batch). Such a lock cannot be
// judged with a resource written beside it, so the workload writes the
// protected resource through it: WriteFenced has Resource.Add's contract
// for the holder of g (read the set, call beforeWrite, write the set with
// elem added; a write the lock refuses because g is no longer the owner's
// wraps ErrStaleToken). The final reads still go through the run's
// Resource, which must read what WriteFenced writes (recipe.Entry's
// NewResource).
type FencedWriter interface {
	WriteFenced(ctx context.Context, g Grant, elem int64, beforeWrite func(context.Context) error) error
}
