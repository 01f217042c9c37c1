package accordtxn

import (
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/recipe"
)

// TestStatementsQuote: the transactions carry literals (6.0-alpha2 refused
// bind markers in them), so a quote in a name or owner must not end the
// literal.
func TestStatementsQuote(t *testing.T) {
	l, err := New(nil, recipe.WithKeyspace("ks"))
	if err != nil {
		t.Fatal(err)
	}
	for name, stmt := range map[string]string{
		"create":  l.createStmt("a'b"),
		"acquire": l.acquireStmt("a'b", "c'd", 1, 2),
		"release": l.releaseStmt("a'b", "c'd", 3),
	} {
		if strings.Contains(stmt, "'a'b'") || strings.Contains(stmt, "'c'd'") {
			t.Errorf("%s: unescaped quote:\n%s", name, stmt)
		}
		if !strings.Contains(stmt, "'a''b'") {
			t.Errorf("%s: want the name as 'a''b':\n%s", name, stmt)
		}
		if !strings.HasPrefix(stmt, "BEGIN TRANSACTION") || !strings.HasSuffix(stmt, "COMMIT TRANSACTION") {
			t.Errorf("%s: not one transaction:\n%s", name, stmt)
		}
	}
}

func TestNewRefusesBadKeyspace(t *testing.T) {
	if _, err := New(nil, recipe.WithKeyspace("bad keyspace")); err == nil {
		t.Fatal("New accepted a keyspace that is no CQL identifier")
	}
}
