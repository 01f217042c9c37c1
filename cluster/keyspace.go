package cluster

import (
	"context"
	"fmt"
	"regexp"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

var (
	keyspaceRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,47}$`)
	dcRE       = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
)

// CreateKeyspace creates keyspace ks if it is missing, with rf replicas:
// SimpleStrategy, or NetworkTopologyStrategy in data centre dc when dc is
// given. It is the one statement every way in (a cluster started here, the
// user's hosts, lockd) creates lockcheck's keyspace with; the names are
// checked here, since CQL takes them unquoted.
func CreateKeyspace(ctx context.Context, s *gocql.Session, ks string, rf int, dc string) error {
	if !keyspaceRE.MatchString(ks) {
		return fmt.Errorf("keyspace %q: want a plain CQL identifier", ks)
	}
	if dc != "" && !dcRE.MatchString(dc) {
		return fmt.Errorf("data centre %q: want a data centre name", dc)
	}
	if rf < 1 {
		return fmt.Errorf("keyspace %s: replication factor %d, want at least 1", ks, rf)
	}
	repl := fmt.Sprintf(`{'class': 'SimpleStrategy', 'replication_factor': %d}`, rf)
	if dc != "" {
		repl = fmt.Sprintf(`{'class': 'NetworkTopologyStrategy', '%s': %d}`, dc, rf)
	}
	q := fmt.Sprintf(`CREATE KEYSPACE IF NOT EXISTS %s WITH replication = %s`, ks, repl)
	if err := s.Query(q).ExecContext(ctx); err != nil {
		return fmt.Errorf("create keyspace %s: %w", ks, err)
	}
	return nil
}
