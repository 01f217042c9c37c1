package runner

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// A plug-in's lock library makes its own tables, often with fixed names
// ("locks"), and many create them with CREATE TABLE IF NOT EXISTS, which
// keeps a table of another shape silently. The run's keyspace persists and
// is shared by every recipe and plug-in, so each plug-in (by its name in
// the store) gets a keyspace of its own beside it: LOCKCHECK_KEYSPACE is
// <run keyspace>_<name>, with the run keyspace's replication. Runs of one
// plug-in share it (its tables persist from run to run, as an
// application's would); lock names are fresh every run.

// maxKeyspace is Cassandra's longest keyspace name.
const maxKeyspace = 48

// PluginKeyspace is the keyspace a plug-in named name is given beside the
// run's keyspace ks: ks_name, dashes as underscores, cut to 48 characters.
func PluginKeyspace(ks, name string) string {
	k := ks + "_" + strings.ReplaceAll(name, "-", "_")
	if len(k) > maxKeyspace {
		k = k[:maxKeyspace]
	}
	return k
}

// createPluginKeyspace creates ks's plug-in keyspace for name, if missing,
// with ks's replication, and waits for the schema to agree.
func createPluginKeyspace(ctx context.Context, s *gocql.Session, ks, name string) (string, error) {
	pk := PluginKeyspace(ks, name)
	var repl map[string]string
	if err := s.Query(`SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = ?`, ks).
		Consistency(gocql.One).ScanContext(ctx, &repl); err != nil {
		return "", fmt.Errorf("replication of keyspace %s: %w", ks, err)
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(repl)) {
		v := repl[k]
		if k == "class" {
			v = strings.TrimPrefix(v, "org.apache.cassandra.locator.")
		}
		if strings.ContainsAny(k+v, "'\\") {
			return "", fmt.Errorf("keyspace %s: replication %q: not a plain value", ks, repl)
		}
		parts = append(parts, fmt.Sprintf("'%s': '%s'", k, v))
	}
	if !keyspaceName(pk) {
		return "", fmt.Errorf("plug-in keyspace %q: want a plain CQL identifier", pk)
	}
	q := fmt.Sprintf(`CREATE KEYSPACE IF NOT EXISTS %s WITH replication = {%s}`, pk, strings.Join(parts, ", "))
	if err := s.Query(q).ExecContext(ctx); err != nil {
		return "", fmt.Errorf("create keyspace %s: %w", pk, err)
	}
	if err := s.AwaitSchemaAgreement(ctx); err != nil {
		return "", fmt.Errorf("keyspace %s: schema agreement: %w", pk, err)
	}
	return pk, nil
}

// keyspaceName says whether k is a plain CQL identifier Cassandra takes as
// a keyspace name.
func keyspaceName(k string) bool {
	if k == "" || len(k) > maxKeyspace || !(k[0] >= 'a' && k[0] <= 'z' || k[0] >= 'A' && k[0] <= 'Z') {
		return false
	}
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
