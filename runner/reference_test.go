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

// recipeDocs says, for each registered recipe, what it does and how it
// fails, in words for docs/recipes.md. Everything else on the page (name,
// package, promise, schema, a control's broken resource) is read from the
// registry, so that the page lists exactly the recipes `--lock` accepts: a
// recipe registered without words here, or words for a recipe that is not
// registered, fails TestRecipesReference.
var recipeDocs = map[string]struct{ does, fails string }{
	"lease": {
		does:  "seed 000: `INSERT ... IF NOT EXISTS USING TTL`, renew `UPDATE ... IF owner=?`, release `DELETE ... IF owner=?`, holder read at SERIAL with `writetime(owner)`",
		fails: "a holder that stalls past its TTL keeps writing after another took the lease; node clock skew ends a lease early",
	},
	"lease-fenced": {
		does:  "the same plus a `fence` column without TTL bumped in the same Paxos round (conditional batch); grants carry the token",
		fails: "holds may overlap; the resource refuses the stale holder",
	},
	"racy": {
		does:  "the control: read the holder at QUORUM, then write it without LWT",
		fails: "always (two readers both see it free); a checker that passes it is broken",
	},
	"lease-fenced-broken": {
		does:  "the fenced promise's control: `lease-fenced`'s grants and tokens over a resource that accepts any token (`workload.AcceptAnyToken`, the entry's `Resource` option)",
		fails: "a stale holder's write lands (under client-pause); a checker that passes it cannot judge fencing",
	},
	"music": {
		does:  "seed 001: a queue `(key, ref timeuuid)` per key, ref from the client clock inserted `IF NOT EXISTS`, acquire = \"is the top row mine?\" read at ONE by default (the source asks only for a non-serial read), release `DELETE ... IF EXISTS`; `CriticalGet`/`CriticalPut`",
		fails: "a client whose clock is behind sorts first and enters while the holder is inside; a stale top at ONE",
	},
	"music-seq": {
		does:  "refs numbered from a per-key guard row bumped by LWT in the same conditional batch that inserts the ref; top read at QUORUM; the ref is the token",
		fails: "— (order no longer depends on clocks)",
	},
	"bakery": {
		does:  "seed 003: Lamport's bakery over `bakery_choosing` and `bakery_numbers`, one cell per client, QUORUM, client timestamps from the injectable clock",
		fails: "a client clock stepping back: its new number is shadowed by its own older tombstone",
	},
	"bakery-one": {
		does:  "the same at ONE, as the published code ran",
		fails: "stale reads of Choosing/Numbers",
	},
	"election": {
		does:  "seed 002's leadership election as a lock (`lease.ElectionLock`): the group is the lock, a claim (`INSERT ... IF NOT EXISTS USING TTL`) a grant; no `Renew`, so a leader keeps its term by claiming again",
		fails: "a re-claim by the leader returns a fresh-looking token without refreshing the TTL: the row expires under a leader that still writes (leader workload, no fault needed)",
	},
	"election-refresh": {
		does:  "the same with `WithRefreshOnReclaim(true)`: a re-claim heartbeats",
		fails: "—",
	},
}

// seeds are the published designs the first recipes were built from
// (../shared/seeds in the project's workspace).
var seeds = []struct{ id, what, recipes string }{
	{"000", "\"Consensus on Cassandra\": a lease table with TTL, acquired by `INSERT ... IF NOT EXISTS`, renewed by `UPDATE ... IF owner=`, released by `DELETE ... IF owner=`, read at SERIAL with `writetime(owner)` to time the next poll; leader election on top", "`lease`, `lease-fenced`, `lease-fenced-broken`, `racy` (the control); the reference plug-ins"},
	{"001", "MUSIC's locking service on Cassandra LWTs: a per-key lock table sorted by time UUID; createLockRef, acquireLock (is my ref on top?), releaseLock, criticalGet/criticalPut", "`music`, `music-seq`"},
	{"002", "Leadership election per group with expiring columns: tryClaimLeader(identity, duration) returns a token to heartbeat; status per group; custom column names", "`election`, `election-refresh` (`lease.NewElection`)"},
	{"003", "An experimental lock using Lamport's bakery algorithm over two column families, Choosing and Numbers, at QUORUM", "`bakery`, `bakery-one`"},
	{"004", "Leader election as a lock with `IF NOT EXISTS` and a default TTL, exposed over REST: `PUT /v1/locks/{name}` answers 201 Created or 409 Conflict", "`lockcheck lockd`, and the contract of `--lock-url` ([http.md](http.md))"},
}

const recipesHeader = `<!-- Generated from the recipe registry (runner/recipes.go) and runner/reference_test.go by ` + "`go test ./runner -run TestRecipesReference -update`" + `: edit those, not this page. -->
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
	seen := map[string]bool{}
	for _, pkg := range registry {
		for _, e := range pkg {
			d, ok := recipeDocs[e.Name]
			if !ok {
				t.Errorf("recipe %q is registered but runner/reference_test.go's recipeDocs does not describe it", e.Name)
				continue
			}
			seen[e.Name] = true
			schema := funcName(e.Schema)
			pkgName, _, _ := strings.Cut(schema, ".")
			promise := string(e.Promise)
			if len(e.Resource) > 0 {
				promise += " (resource broken on purpose: a control)"
			}
			fmt.Fprintf(&b, "| `%s` | `%s` | `%s` | %s | %s | %s |\n", e.Name, pkgName, schema, promise, d.does, d.fails)
		}
	}
	for name := range recipeDocs {
		if !seen[name] {
			t.Errorf("recipeDocs describes %q, which is not registered", name)
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
