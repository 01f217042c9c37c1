package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/recipe"
	"github.com/lockcheck/lockcheck/workload"
)

// ElectionLock drives an Election as a lock ("election", "election-refresh"):
// the lock name is the group, the owner the identity, a grant a claimed
// term. It has no Renew: a leader keeps its term by claiming again, which is
// where seed 002's flaw lies. As published a re-claim by the leader returns
// a fresh-looking token without refreshing the TTL, so the leader believes
// in a term the server is about to end and another claims the group while it
// still writes; with refresh on reclaim the re-claim heartbeats.
type ElectionLock struct {
	e   *Election
	ttl time.Duration
}

// NewElectionLock returns the election as published ("election").
func NewElectionLock(s *gocql.Session, opts ...Option) (*ElectionLock, error) {
	return newElectionLock(s, false, opts)
}

// NewElectionLockRefresh returns the fixed election ("election-refresh").
func NewElectionLockRefresh(s *gocql.Session, opts ...Option) (*ElectionLock, error) {
	return newElectionLock(s, true, opts)
}

func newElectionLock(s *gocql.Session, refresh bool, opts []Option) (*ElectionLock, error) {
	e, err := NewElection(s, opts, WithRefreshOnReclaim(refresh))
	if err != nil {
		return nil, err
	}
	return &ElectionLock{e: e, ttl: e.cfg.TTL}, nil
}

// Acquire claims the group until it is ours or ctx ends. A claim with an
// unknown outcome does not end it: the next claim by the same identity
// settles it. If ctx ends with one unsettled, Acquire relinquishes what it
// can and returns ErrUnknown.
func (l *ElectionLock) Acquire(ctx context.Context, name, owner string) (workload.Grant, error) {
	start := time.Now()
	p := recipe.NewPoller(l.e.cfg.Options)
	var pending, last error
	for {
		if ctx.Err() == nil {
			tok, err := l.e.TryClaim(ctx, name, owner, l.ttl)
			if err == nil {
				return workload.Grant{Lock: name, Owner: owner, Deadline: tok.Deadline, Lease: tok.Deadline.Sub(start)}, nil
			}
			if errors.Is(err, workload.ErrUnknown) {
				pending = err
			}
			last = err
		}
		if werr := p.Wait(ctx); werr != nil {
			if pending != nil {
				cctx, cancel := recipe.Detached(ctx)
				_ = l.e.Relinquish(cctx, Token{Group: name, Identity: owner})
				cancel()
				return workload.Grant{}, fmt.Errorf("claim %q: gave up with a claim unsettled: %w", name, pending)
			}
			return workload.Grant{}, fmt.Errorf("claim %q: %w (last: %v)", name, workload.ErrNotAcquired, last)
		}
	}
}

// Release relinquishes the term; ErrNotHeld when the identity no longer leads.
func (l *ElectionLock) Release(ctx context.Context, g workload.Grant) error {
	return l.e.Relinquish(ctx, Token{Group: g.Lock, Identity: g.Owner, TTL: l.ttl})
}
