//go:build jepsen

package lockcheck_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck"
	"github.com/lockcheck/lockcheck/cluster/clustertest"
	"github.com/lockcheck/lockcheck/examples/leaselock"
	"github.com/lockcheck/lockcheck/lease"
	"github.com/lockcheck/lockcheck/lockd"
	"github.com/lockcheck/lockcheck/recipe"
	"github.com/lockcheck/lockcheck/workload"
	"github.com/lockcheck/lockcheck/workload/locktest"
)

func TestMain(m *testing.M) { clustertest.Main(m) }

// meta is the first line of a run's history.
func meta(t *testing.T, res lockcheck.Result) string {
	t.Helper()
	h, err := os.ReadFile(filepath.Join(res.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(h), "\n")
	return first
}

// short are the options of a short run without faults on the shared cluster.
// Such runs share it side by side (runner takes their set-ups in turn), as
// TestMatrix's client rows do: the package holds the shared cluster for the
// longest run, not their sum.
func short(t *testing.T) []lockcheck.Option {
	return []lockcheck.Option{lockcheck.WithCluster(clustertest.Get(t).Name()), lockcheck.WithTime(5 * time.Second),
		lockcheck.WithQuiet(time.Second), lockcheck.WithSeed(3)}
}

// The TTL given by option is the one the user's constructor gets and the
// one the meta line records; the Result says what `lockcheck run` prints.
func TestAPITTLReachesTheLock(t *testing.T) {
	t.Parallel()
	var ttl atomic.Int64
	var logged atomic.Bool
	lock := lockcheck.Lock{Name: "leaselock", Schema: leaselock.CreateTable,
		New: func(c lockcheck.Client) (workload.Lock, error) {
			ttl.Store(int64(c.TTL))
			logged.Store(c.Log != nil)
			return leaselock.New(c.Session, c.Keyspace, c.TTL), nil
		}}
	res := lockcheck.Test(t, lock, append(short(t), lockcheck.WithTTL(4*time.Second))...)
	if got := time.Duration(ttl.Load()); got != 4*time.Second || !logged.Load() {
		t.Errorf("constructor got TTL %v, logger %t; want 4s and a logger", got, logged.Load())
	}
	if m := meta(t, res); !strings.Contains(m, `"ttl":"4s"`) {
		t.Errorf("meta %s does not record ttl 4s", m)
	}
	if res.Requested != 5*time.Second || res.Phases.TotalMS <= 0 || res.Took <= 0 || res.Seed != 3 || res.Report == "" {
		t.Errorf("result %+v lacks what lockcheck run prints", res)
	}
}

// A built-in recipe by name, its clients pinned to coordinators.
func TestAPIRecipePinned(t *testing.T) {
	t.Parallel()
	res := lockcheck.Test(t, lockcheck.Lock{Recipe: "lease-fenced"}, append(short(t), lockcheck.WithPinClients())...)
	if m := meta(t, res); !strings.Contains(m, `"pins":"0=n1 1=n2 2=n3`) || !strings.Contains(m, `"lock":"lease-fenced"`) {
		t.Errorf("meta %s does not record the recipe and its pins", m)
	}
}

// A REST lock service through Lock.URL: lockd over lease-fenced on the
// shared cluster, fenced. Not beside the others: its schema is made outside
// runner's set-up turn (locktest), in the tables lease-fenced's run makes.
func TestAPILockURL(t *testing.T) {
	s, ks, _ := locktest.Setup(t, lease.CreateSchema)
	srv := httptest.NewServer(lockd.Handler(locktest.New(t, lease.NewFenced, s, recipe.WithKeyspace(ks)), slog.New(slog.DiscardHandler)))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := lockcheck.Run(ctx, lockcheck.Lock{URL: srv.URL, Promise: lockcheck.Fenced},
		append(short(t), lockcheck.WithStore(t.TempDir()))...)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != lockcheck.Valid || res.Ops == 0 {
		t.Errorf("verdict %s with %d ops, want valid; report %s", res.Verdict, res.Ops, res.Report)
	}
	if m := meta(t, res); !strings.Contains(m, `"lock":"http"`) || !strings.Contains(m, `"promise":"fenced"`) {
		t.Errorf("meta %s", m)
	}
}
