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

// Racy is the control lock ("racy"): the lease table driven without LWT.
// Acquire reads the holder at QUORUM and, when the lease is free, writes
// itself as the owner with a plain QUORUM write. Two clients that read
// between each other's read and write both believe they hold the lock, so a
// checker must flag it even without faults; one that passes it is broken.
type Racy struct {
	s     *gocql.Session
	cfg   config
	table string
}

// NewRacy returns the control lock.
func NewRacy(s *gocql.Session, opts ...Option) (*Racy, error) {
	c, table, err := newConfig("leases_racy", opts)
	if err != nil {
		return nil, err
	}
	return &Racy{s: s, cfg: c, table: table}, nil
}

func (r *Racy) holder(ctx context.Context, name string) (string, error) {
	var owner *string
	err := r.s.Query(`SELECT owner FROM `+r.table+` WHERE name = ?`, name).
		Consistency(gocql.Quorum).ScanContext(ctx, &owner)
	if errors.Is(err, gocql.ErrNotFound) || (err == nil && owner == nil) {
		return "", nil
	}
	if err != nil {
		return "", workload.ClassifyRead(err)
	}
	return *owner, nil
}

// Acquire polls until the read shows the lease free (or already ours), then
// writes it: read-then-write with nothing in between that could fail.
func (r *Racy) Acquire(ctx context.Context, name, owner string) (workload.Grant, error) {
	start := time.Now()
	p := recipe.NewPoller(r.cfg.Options)
	for {
		h, err := r.holder(ctx, name)
		if err == nil && (h == "" || h == owner) {
			attempt := time.Now()
			err = r.s.Query(`INSERT INTO `+r.table+` (name, owner) VALUES (?, ?) USING TTL ?`, name, owner, ttlSeconds(r.cfg.TTL)).
				Consistency(gocql.Quorum).ExecContext(ctx)
			if err != nil {
				err = workload.Classify(err)
				if errors.Is(err, workload.ErrUnknown) {
					return workload.Grant{}, fmt.Errorf("acquire %q: %w", name, err)
				}
			} else {
				d := attempt.Add(validity(r.cfg.TTL, r.cfg.margin))
				return workload.Grant{Lock: name, Owner: owner, Deadline: d, Lease: d.Sub(start)}, nil
			}
		}
		if werr := p.Wait(ctx); werr != nil {
			return workload.Grant{}, fmt.Errorf("acquire %q: %w (last: holder %q, %v)", name, workload.ErrNotAcquired, h, err)
		}
	}
}

// Release deletes the lease if the read shows it ours (again read, then write).
func (r *Racy) Release(ctx context.Context, g workload.Grant) error {
	h, err := r.holder(ctx, g.Lock)
	if err != nil {
		return fmt.Errorf("release %q: %w", g.Lock, err)
	}
	if h != g.Owner {
		return fmt.Errorf("release %q by %q: holder %q: %w", g.Lock, g.Owner, h, workload.ErrNotHeld)
	}
	if err := r.s.Query(`DELETE FROM `+r.table+` WHERE name = ?`, g.Lock).Consistency(gocql.Quorum).ExecContext(ctx); err != nil {
		return fmt.Errorf("release %q: %w", g.Lock, workload.Classify(err))
	}
	return nil
}
