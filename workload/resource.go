package workload

import (
	"context"
	"errors"
	"fmt"
	"slices"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// ErrStaleToken: the resource refused a write because it has seen a newer
// fencing token than the writer's (a definite failure: nothing was written).
var ErrStaleToken = errors.New("stale fencing token")

// Resource is the lock-protected set: one set of elements per lock name.
// Clients add to it inside critical sections; lost elements prove that
// mutual exclusion failed.
type Resource interface {
	// Read returns the lock's set in ascending order.
	Read(ctx context.Context, lock string) ([]int64, error)
	// Add is one critical section: read the set, call beforeWrite (may be
	// nil; the workload uses it to let the nemesis stall the client between
	// its check and its write), write the set with elem added. token == 0:
	// an unfenced write. token > 0: the write is refused with ErrStaleToken
	// when the resource has seen a newer token.
	Add(ctx context.Context, lock string, elem int64, token int64, beforeWrite func(context.Context) error) error
}

// ClientResource is a Resource that a client may write through a
// connection of its own: with clients pinned to coordinators (run
// --pin-clients), a client's critical section goes through its coordinator
// as an application's writes go through the node it is connected to, so a
// fault aimed at that coordinator (a stall, a slow link) delays the write
// the lease protects, not only the lock's own queries. The workload reads
// the final sets through the Resource itself.
type ClientResource interface {
	Resource
	// Client is the resource as client i writes it.
	Client(i int) Resource
}

// CassandraResource keeps the sets in one table, a row per lock:
// resource(name text PRIMARY KEY, elems set<bigint>, fence bigint).
type CassandraResource struct {
	s        *gocql.Session
	keyspace string
	anyToken bool
}

// ResourceOption configures a CassandraResource.
type ResourceOption func(*CassandraResource)

// AcceptAnyToken breaks fencing on purpose, for a control recipe: every
// write is accepted whatever its token, as an unfenced read-modify-write,
// so a stale holder's write lands. The checker must catch it.
func AcceptAnyToken() ResourceOption { return func(r *CassandraResource) { r.anyToken = true } }

// NewCassandraResource returns the resource over the table "resource" of
// keyspace; call CreateSchema once before use.
func NewCassandraResource(s *gocql.Session, keyspace string, opts ...ResourceOption) *CassandraResource {
	r := &CassandraResource{s: s, keyspace: keyspace}
	for _, o := range opts {
		o(r)
	}
	return r
}

// CreateSchema creates the table if it does not exist.
func (r *CassandraResource) CreateSchema(ctx context.Context) error {
	q := fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s.resource (name text PRIMARY KEY, elems set<bigint>, fence bigint)`, r.keyspace)
	if err := r.s.Query(q).ExecContext(ctx); err != nil {
		return fmt.Errorf("create table %s.resource: %w", r.keyspace, err)
	}
	return r.s.AwaitSchemaAgreement(ctx)
}

func (r *CassandraResource) table() string { return r.keyspace + ".resource" }

// Read reads the set at QUORUM.
func (r *CassandraResource) Read(ctx context.Context, lock string) ([]int64, error) {
	elems, _, _, err := r.read(ctx, lock)
	return elems, err
}

func (r *CassandraResource) read(ctx context.Context, lock string) (elems []int64, fence int64, exists bool, err error) {
	var f *int64
	err = r.s.Query(`SELECT elems, fence FROM `+r.table()+` WHERE name = ?`, lock).
		Consistency(gocql.Quorum).ScanContext(ctx, &elems, &f)
	if errors.Is(err, gocql.ErrNotFound) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, ClassifyRead(err)
	}
	if f != nil {
		fence = *f
	}
	slices.Sort(elems)
	return elems, fence, true, nil
}

// Add runs one critical section; see Resource.
//
// Unfenced (token == 0): QUORUM read, plain QUORUM write of the whole set;
// two writers that overlap lose one's element, which is what the checkers
// look for.
//
// Fenced (token > 0): the token is first registered with an LWT
// (IF fence <= token), then the set is read and written back with
// IF fence <= token. The registration is what makes fencing hold: with only
// a conditional write, a stale holder whose write lands before the new
// holder's first write is accepted (the fence is still old), and the new
// holder, which read the set before that write, then overwrites it, losing an
// acknowledged element. Once the new token is registered, the stale write is
// refused, and the new holder's read (after the registration's Paxos round
// settled the partition) sees every write accepted before it.
func (r *CassandraResource) Add(ctx context.Context, lock string, elem int64, token int64, beforeWrite func(context.Context) error) error {
	if token < 0 {
		return fmt.Errorf("add: negative token %d", token)
	}
	if r.anyToken {
		token = 0 // fencing broken: the token is not looked at
	}
	if token > 0 {
		if err := r.register(ctx, lock, token); err != nil {
			return err
		}
	}
	elems, _, _, err := r.read(ctx, lock)
	if err != nil {
		return fmt.Errorf("add: %w", err)
	}
	if beforeWrite != nil {
		if err := beforeWrite(ctx); err != nil {
			return fmt.Errorf("add: before write: %w", err)
		}
	}
	if !slices.Contains(elems, elem) {
		elems = append(elems, elem)
	}
	if token == 0 {
		err := r.s.Query(`UPDATE `+r.table()+` SET elems = ? WHERE name = ?`, elems, lock).
			Consistency(gocql.Quorum).ExecContext(ctx)
		if err != nil {
			return fmt.Errorf("add: %w", Classify(err))
		}
		return nil
	}
	var seen *int64
	applied, err := LWT(r.s.Query(`UPDATE `+r.table()+` SET elems = ?, fence = ? WHERE name = ? IF fence <= ?`,
		elems, token, lock, token)).ScanCASContext(ctx, &seen)
	if err != nil {
		return fmt.Errorf("add: %w", ClassifyLWT(err))
	}
	if !applied {
		return fmt.Errorf("add: token %d, resource has seen %d: %w", token, deref(seen), ErrStaleToken)
	}
	return nil
}

// register raises the resource's fence to token, creating the row if needed.
func (r *CassandraResource) register(ctx context.Context, lock string, token int64) error {
	for range 3 { // a missing row is created once; a race on creation loops
		var seen *int64
		applied, err := LWT(r.s.Query(`UPDATE `+r.table()+` SET fence = ? WHERE name = ? IF fence <= ?`,
			token, lock, token)).ScanCASContext(ctx, &seen)
		if err != nil {
			return fmt.Errorf("add: register token: %w", ClassifyLWT(err))
		}
		if applied {
			return nil
		}
		if seen != nil {
			return fmt.Errorf("add: token %d, resource has seen %d: %w", token, *seen, ErrStaleToken)
		}
		// No fence: the row does not exist (IF fence <= ? is false on null).
		m := map[string]any{}
		applied, err = LWT(r.s.Query(`INSERT INTO `+r.table()+` (name, fence) VALUES (?, ?) IF NOT EXISTS`,
			lock, token)).MapScanCASContext(ctx, m)
		if err != nil {
			return fmt.Errorf("add: register token: %w", ClassifyLWT(err))
		}
		if applied {
			return nil
		}
		// The row exists without a fence (written by unfenced adds).
		applied, err = LWT(r.s.Query(`UPDATE `+r.table()+` SET fence = ? WHERE name = ? IF fence = null`,
			token, lock)).MapScanCASContext(ctx, map[string]any{})
		if err != nil {
			return fmt.Errorf("add: register token: %w", ClassifyLWT(err))
		}
		if applied {
			return nil
		}
	}
	// Each attempt above was refused, so nothing of ours was written.
	return fmt.Errorf("add: register token %d: the row kept changing: %w", token, ErrStaleToken)
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
