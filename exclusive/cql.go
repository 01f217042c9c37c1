package exclusive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// CQLTable is the lease table CQL keeps in the cluster's keyspace.
const CQLTable = "lockcheck_cluster_lease"

// CQL defaults: a lease outlives any fault window and heal of its holder's
// run (the heal time-out is 3 minutes), renewed well within it.
const (
	DefaultTTL   = 5 * time.Minute
	renewDivisor = 10
)

// CQL is the lease of a cluster of the user's (--hosts): one row of
// KEYSPACE.lockcheck_cluster_lease, taken with INSERT ... IF NOT EXISTS
// USING TTL and renewed by its holder (UPDATE ... IF holder = me) every
// TTL/10. A holder on this host whose process is gone is removed at once
// (DELETE ... IF holder = it); one elsewhere when its row expires.
type CQL struct {
	// Session opens a session in Keyspace (the caller's; closed by CQL).
	Session  func(ctx context.Context) (*gocql.Session, error)
	Keyspace string
	// ID names the cluster (its contact points), for Key.
	ID  string
	TTL time.Duration // 0: DefaultTTL
	Log *slog.Logger
}

// Key is "cql:ID/KEYSPACE".
func (c CQL) Key() string { return "cql:" + c.ID + "/" + c.Keyspace }

func (c CQL) ttl() time.Duration {
	if c.TTL > 0 {
		return c.TTL
	}
	return DefaultTTL
}

const leaseRow = "cluster"

func (c CQL) schema(ctx context.Context, s *gocql.Session) error {
	return s.Query(fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s.%s (name text PRIMARY KEY, holder text)`, c.Keyspace, CQLTable)).ExecContext(ctx)
}

// TryTake inserts me if the row is free, or removes a holder this host
// knows is dead and tries once more.
func (c CQL) TryTake(ctx context.Context, me Holder) (func(), Holder, error) {
	s, err := c.Session(ctx)
	if err != nil {
		return nil, Holder{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if err := c.schema(ctx, s); err != nil {
		s.Close()
		return nil, Holder{}, fmt.Errorf("%w: lease table: %w", ErrUnavailable, err)
	}
	mine, _ := json.Marshal(me)
	for range 2 {
		var cur string
		applied, err := s.Query(fmt.Sprintf(`INSERT INTO %s.%s (name, holder) VALUES (?, ?) IF NOT EXISTS USING TTL ?`, c.Keyspace, CQLTable),
			leaseRow, string(mine), int(c.ttl().Seconds())).WithContext(ctx).ScanCAS(new(string), &cur)
		if err != nil {
			s.Close()
			return nil, Holder{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		if applied {
			return c.hold(s, string(mine)), Holder{}, nil
		}
		var h Holder
		if json.Unmarshal([]byte(cur), &h) != nil {
			h = Holder{Command: "unreadable lease row"}
		}
		if h.Alive() {
			s.Close()
			return nil, h, nil
		}
		c.log().Warn("lease of a process that is gone: removing it", "holder", h.String())
		if _, err := s.Query(fmt.Sprintf(`DELETE FROM %s.%s WHERE name = ? IF holder = ?`, c.Keyspace, CQLTable), leaseRow, cur).
			WithContext(ctx).ScanCAS(new(string)); err != nil {
			s.Close()
			return nil, Holder{}, fmt.Errorf("%w: remove a dead holder: %w", ErrUnavailable, err)
		}
	}
	s.Close()
	return nil, Holder{}, fmt.Errorf("%w: taken by another process as a dead holder's was removed", ErrUnavailable)
}

// hold renews the row until released. A renewal that fails (the holder's
// own faults cut the cluster off) is retried at the next tick: the TTL
// outlasts them.
func (c CQL) hold(s *gocql.Session, mine string) func() {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(c.ttl() / renewDivisor)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			applied, err := s.Query(fmt.Sprintf(`UPDATE %s.%s USING TTL ? SET holder = ? WHERE name = ? IF holder = ?`, c.Keyspace, CQLTable),
				int(c.ttl().Seconds()), mine, leaseRow, mine).WithContext(ctx).ScanCAS(new(string))
			cancel()
			switch {
			case err != nil:
				c.log().Warn("lease not renewed; trying again", "err", err)
			case !applied:
				c.log().Error("lease lost: another process holds the cluster now (this run's renewals failed for longer than its TTL)")
			}
		}
	}()
	return func() {
		close(stop)
		<-done
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := s.Query(fmt.Sprintf(`DELETE FROM %s.%s WHERE name = ? IF holder = ?`, c.Keyspace, CQLTable), leaseRow, mine).
			WithContext(ctx).ScanCAS(new(string)); err != nil {
			c.log().Warn("lease not released: it expires by itself", "ttl", c.ttl(), "err", err)
		}
		s.Close()
	}
}

// Holder reads the row at SERIAL.
func (c CQL) Holder(ctx context.Context) (Holder, bool, error) {
	s, err := c.Session(ctx)
	if err != nil {
		return Holder{}, false, err
	}
	defer s.Close()
	var cur string
	err = s.Query(fmt.Sprintf(`SELECT holder FROM %s.%s WHERE name = ?`, c.Keyspace, CQLTable), leaseRow).
		Consistency(gocql.Serial).WithContext(ctx).Scan(&cur)
	if errors.Is(err, gocql.ErrNotFound) {
		return Holder{}, false, nil
	}
	if err != nil {
		return Holder{}, false, err
	}
	var h Holder
	if json.Unmarshal([]byte(cur), &h) != nil {
		h = Holder{Command: "unreadable lease row"}
	}
	return h, true, nil
}

func (c CQL) log() *slog.Logger {
	if c.Log != nil {
		return c.Log
	}
	return slog.Default()
}
