package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

var (
	keyspaceRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,47}$`)
	dcRE       = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
)

// CreateKeyspace creates keyspace ks if it is missing, with rf replicas:
// SimpleStrategy, or NetworkTopologyStrategy with rf replicas in each data
// centre of dcs when one is named ("" names none). It is the one statement
// every way in (a cluster started here, the user's hosts, lockd) creates
// lockcheck's keyspace with; the names are checked here, since CQL takes
// them unquoted.
func CreateKeyspace(ctx context.Context, s *gocql.Session, ks string, rf int, dcs ...string) error {
	perDC := map[string]int{}
	for _, dc := range dcs {
		if dc != "" {
			perDC[dc] = rf
		}
	}
	if rf < 1 {
		return fmt.Errorf("keyspace %s: replication factor %d, want at least 1", ks, rf)
	}
	return createKeyspace(ctx, s, ks, rf, perDC)
}

// createKeyspace creates ks with SimpleStrategy and rf replicas when perDC
// is empty, else with NetworkTopologyStrategy and perDC's factors.
func createKeyspace(ctx context.Context, s *gocql.Session, ks string, rf int, perDC map[string]int) error {
	if !keyspaceRE.MatchString(ks) {
		return fmt.Errorf("keyspace %q: want a plain CQL identifier", ks)
	}
	repl := fmt.Sprintf(`{'class': 'SimpleStrategy', 'replication_factor': %d}`, rf)
	if len(perDC) > 0 {
		var parts []string
		for _, dc := range slices.Sorted(maps.Keys(perDC)) {
			if !dcRE.MatchString(dc) {
				return fmt.Errorf("data centre %q: want a data centre name", dc)
			}
			if perDC[dc] < 1 {
				return fmt.Errorf("keyspace %s: replication factor %d in %s, want at least 1", ks, perDC[dc], dc)
			}
			parts = append(parts, fmt.Sprintf(`'%s': %d`, dc, perDC[dc]))
		}
		repl = `{'class': 'NetworkTopologyStrategy', ` + strings.Join(parts, ", ") + `}`
	}
	q := fmt.Sprintf(`CREATE KEYSPACE IF NOT EXISTS %s WITH replication = %s`, ks, repl)
	if err := s.Query(q).ExecContext(ctx); err != nil {
		return fmt.Errorf("create keyspace %s: %w", ks, err)
	}
	return nil
}

// CheckLocalDC refuses a local data centre the cluster does not have, and
// an existing keyspace that keeps no replica in it: LOCAL_SERIAL and
// LOCAL_QUORUM there would fail every operation as unavailable, a set-up
// error that would otherwise look like a run of failures. The data centres
// are the ones the session's contact node knows (itself and its peers).
func CheckLocalDC(ctx context.Context, s *gocql.Session, ks, dc string) error {
	dcs := map[string]bool{}
	for _, q := range []string{`SELECT data_center FROM system.local`, `SELECT data_center FROM system.peers`} {
		it := s.Query(q).Consistency(gocql.One).IterContext(ctx)
		var name string
		for it.Scan(&name) {
			dcs[name] = true
		}
		if err := it.Close(); err != nil {
			return fmt.Errorf("data centres of the cluster: %w", err)
		}
	}
	if !dcs[dc] {
		return fmt.Errorf("--dc %s: the cluster's data centres are %s", dc, strings.Join(slices.Sorted(maps.Keys(dcs)), ", "))
	}
	var repl map[string]string
	err := s.Query(`SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = ?`, ks).Consistency(gocql.One).ScanContext(ctx, &repl)
	switch {
	case errors.Is(err, gocql.ErrNotFound):
		return nil // created in dc by CreateKeyspace
	case err != nil:
		return fmt.Errorf("replication of keyspace %s: %w", ks, err)
	}
	if strings.HasSuffix(repl["class"], "NetworkTopologyStrategy") && (repl[dc] == "" || repl[dc] == "0") {
		delete(repl, "class")
		return fmt.Errorf("--dc %s: keyspace %s keeps no replica there (its replication: %v)", dc, ks, repl)
	}
	return nil
}
