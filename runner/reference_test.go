package runner

import (
	"bytes"
	"fmt"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/golden"
)

// seeds are the published designs the first recipes were built from
// (../shared/seeds in the project's workspace).
var seeds = []struct{ id, what, recipes string }{
	{"000", "\"Consensus on Cassandra\": a lease table with TTL, acquired by `INSERT ... IF NOT EXISTS`, renewed by `UPDATE ... IF owner=`, released by `DELETE ... IF owner=`, read at SERIAL with `writetime(owner)` to time the next poll; leader election on top", "`lease`, `lease-fenced`, `lease-fenced-broken`, `racy` (the control); the reference plug-ins"},
	{"001", "MUSIC's locking service on Cassandra LWTs: a per-key lock table sorted by time UUID; createLockRef, acquireLock (is my ref on top?), releaseLock, criticalGet/criticalPut", "`music`, `music-seq`"},
	{"002", "Leadership election per group with expiring columns: tryClaimLeader(identity, duration) returns a token to heartbeat; status per group; custom column names", "`election`, `election-refresh` (`lease.NewElection`)"},
	{"003", "An experimental lock using Lamport's bakery algorithm over two column families, Choosing and Numbers, at QUORUM", "`bakery`, `bakery-one`"},
	{"004", "Leader election as a lock with `IF NOT EXISTS` and a default TTL, exposed over REST: `PUT /v1/locks/{name}` answers 201 Created or 409 Conflict", "`lockcheck lockd`, and the contract of `--lock-url` ([http.md](http.md))"},
}

const recipesHeader = `<!-- Generated from the recipe registry (runner/recipes.go; each entry's Does and Fails) and runner/reference_test.go by ` + "`go test ./runner -run TestRecipesReference -update`" + `: edit those, not this page. -->
# Lock recipes

The recipes ` + "`lockcheck run --lock NAME`" + ` accepts. Every recipe is built as published (flaws
included, so the suite can show the flaw) and, where it matters, fixed by the smallest change that
should make it safe. Which runs catch each flaw, and how often: [findings.md](findings.md); why:
[notes-on-cassandra.md](notes-on-cassandra.md).

## Seeds 000-004

The seeds are the source documents of the first recipes: five published designs for locks and
leader election on Cassandra.

| seed | what it describes | recipes |
| --- | --- | --- |
`

const recipesBody = `
## Options and conventions

Each recipe is a small package with its own CQL schema (` + "`CreateSchema(ctx, session, keyspace)`" + `,
idempotent), a cheap constructor per client (` + "`New(session, opts...) (*Lock, error)`" + `: a bad keyspace or
table name is an error, never a panic) and a ` + "`Recipes []recipe.Entry`" + ` list, the only place a recipe's
name, promise, constructor and schema are written. The runner's registry (` + "`runner/recipes.go`" + `) is one
line per package. The options every recipe takes live in package ` + "`recipe`" + `: ` + "`recipe.WithKeyspace`" + ` (default
` + "`lockcheck`" + `), ` + "`WithClock`" + ` (the client clock: time UUIDs, client timestamps; skewed by the nemesis through
` + "`workload.SkewClock`" + `), ` + "`WithLogger`" + `, ` + "`WithTTL`" + ` (recipes whose grants expire) and ` + "`WithPoll`" + ` (the backoff
bounds of ` + "`recipe.Poller`" + `, the one poller every recipe waits with); a package adds its own
(` + "`WithConsistency`" + `, ` + "`lease.WithTable`" + `/` + "`WithMargin`" + `), and an option of one package given to another is an
error. The conventions every recipe follows (errors, leases, tokens, unknown outcomes) are those a
lock of yours follows: [go-api.md](go-api.md#what-a-lock-must-do-workloadlock). Adding a recipe:
[DEVELOPERS.md](../DEVELOPERS.md#adding-a-recipe).

Leader election (seed 002) is ` + "`lease.NewElection`" + `: ` + "`TryClaim(ctx, group, identity, ttl)`" + ` returns a
token to ` + "`Heartbeat`" + ` at about half the TTL, ` + "`Relinquish`" + `, ` + "`Status(group)`" + ` (leader and time left);
table and column names are configurable (` + "`WithTable`" + `, ` + "`WithColumns`" + `). As published, a re-entrant
claim returns a token without refreshing the TTL; ` + "`WithRefreshOnReclaim(true)`" + ` is the fix.
` + "`election`" + ` and ` + "`election-refresh`" + ` adapt it to a lock (` + "`lease/electionlock.go`" + `).

## The protected resource

The protected resource (` + "`workload.NewCassandraResource`" + `, table ` + "`resource(name, elems set<bigint>,\nfence bigint)`" + `): ` + "`Add`" + ` reads the set at QUORUM, calls the workload's ` + "`beforeWrite`" + ` hook, writes the set
back. Unfenced (` + "`token == 0`" + `) it is a plain QUORUM write: overlapping holders lose elements. Fenced, it
first registers the token (` + "`UPDATE ... SET fence=? IF fence <= ?`" + `, or ` + "`INSERT ... IF NOT EXISTS`" + ` for a
new row), then writes ` + "`IF fence <= token`" + `; a refusal is ` + "`workload.ErrStaleToken`" + ` (definite). The
registration matters: with only the conditional write, a stale holder's write that lands before the
new holder's first write is accepted and then overwritten by the new holder's older read. A control
recipe configures the resource to be broken on purpose (` + "`workload.AcceptAnyToken`" + `: the entry's
` + "`Resource`" + ` option).
`

// funcName is the package-qualified name of a function value
// ("lease.CreateSchema").
func funcName(f any) string {
	n := runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name()
	return n[strings.LastIndex(n, "/")+1:]
}

// renderRecipes writes docs/recipes.md from the registry.
func renderRecipes(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString(recipesHeader)
	for _, s := range seeds {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", s.id, s.what, s.recipes)
	}
	b.WriteString("\n## The recipes\n\n")
	b.WriteString("| `--lock` | package | schema | promise | what it does | how it fails |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, pkg := range registry {
		for _, e := range pkg {
			// Every registered recipe says what it does and how it fails
			// (recipe.Entry's Does and Fails): the page is their only home.
			if e.Does == "" || e.Fails == "" {
				t.Errorf("recipe %q is registered without Does and Fails", e.Name)
				continue
			}
			schema := funcName(e.Schema)
			pkgName, _, _ := strings.Cut(schema, ".")
			promise := string(e.Promise)
			if len(e.Resource) > 0 {
				promise += " (resource broken on purpose: a control)"
			}
			fmt.Fprintf(&b, "| `%s` | `%s` | `%s` | %s | %s | %s |\n", e.Name, pkgName, schema, promise, e.Does, e.Fails)
		}
	}
	fmt.Fprintf(&b, "\nPromises: `%s` (no two holders at once) or `%s` (holds may overlap; the resource, which refuses\nolder tokens, never loses a write). What each promise judges: [checking.md](checking.md#promises).\n",
		history.PromiseMutex, history.PromiseFenced)
	b.WriteString(recipesBody)
	return b.Bytes()
}

// TestRecipesReference keeps docs/recipes.md what the registry says
// (golden file): -update rewrites it.
func TestRecipesReference(t *testing.T) {
	golden.Check(t, filepath.Join("..", "docs", "recipes.md"), renderRecipes(t),
		"go test ./runner -run TestRecipesReference -update")
}
