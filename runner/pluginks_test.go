package runner

import (
	"strings"
	"testing"
)

func TestPluginKeyspace(t *testing.T) {
	for _, tt := range []struct{ ks, name, want string }{
		{"lockcheck", "shedlock", "lockcheck_shedlock"},
		{"lockcheck", "cassandra-migration", "lockcheck_cassandra_migration"},
		{"lockcheck", strings.Repeat("a-", 30), "lockcheck_" + strings.Repeat("a_", 19)},
	} {
		got := PluginKeyspace(tt.ks, tt.name)
		if got != tt.want || !keyspaceName(got) {
			t.Errorf("PluginKeyspace(%q, %q) = %q, want %q", tt.ks, tt.name, got, tt.want)
		}
	}
	for _, bad := range []string{"", "1ks", "ks-x", "ks;drop", strings.Repeat("k", 49)} {
		if keyspaceName(bad) {
			t.Errorf("%q taken as a keyspace name", bad)
		}
	}
}
