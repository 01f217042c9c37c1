//go:build jepsen

package runner

import (
	"context"
	"log/slog"
	"maps"
	"os"
	"strings"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/cluster/clustertest"
	"github.com/lockcheck/lockcheck/nemesis"
)

// TestHostsTwoDCs uses a two-data-centre cluster (4 nodes, dc1 and dc2) as
// a user's own, as `run --hosts --dc` does: the runs know its contact
// points only. A --dc the cluster lacks, or one the user's keyspace keeps
// no replica in, is refused before any run; a keyspace lockcheck creates
// replicates in --dc only; a user's keyspace in both data centres run at
// LOCAL_SERIAL from one of them keeps the fenced lease valid (one data
// centre's Paxos is all the clients use), and the published lease's flaw is
// still caught there. Full tier (LOCKCHECK_FULL=1, or LOCKCHECK_HOSTS_DC=1):
// the cluster takes two to four minutes to start on 2 cores.
func TestHostsTwoDCs(t *testing.T) {
	if os.Getenv("LOCKCHECK_FULL") != "1" && os.Getenv("LOCKCHECK_HOSTS_DC") == "" {
		t.Skip("full tier: set LOCKCHECK_FULL=1 or LOCKCHECK_HOSTS_DC=1")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	c := clustertest.Start(t, "hosts-2dc", cluster.WithNodes(4), cluster.WithDCs(2))
	hostsOf := map[string][]string{}
	for _, n := range c.Nodes() {
		hostsOf[n.DC] = append(hostsOf[n.DC], n.IP)
	}
	if len(hostsOf["dc1"]) != 2 || len(hostsOf["dc2"]) != 2 {
		t.Fatalf("hosts by data centre %v, want two in each of dc1 and dc2", hostsOf)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	// The user's own keyspace, in both data centres.
	s, err := c.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Query(`CREATE KEYSPACE IF NOT EXISTS lc_both WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 2, 'dc2': 2}`).ExecContext(ctx)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("refusals", func(t *testing.T) {
		for _, x := range []struct {
			x    External
			want string
		}{
			{External{Hosts: c.Hosts(), Keyspace: "lc_dc9", DC: "dc9"}, "--dc dc9: the cluster's data centres are dc1, dc2"},
			{External{Hosts: hostsOf["dc1"], Keyspace: "lc_dc9", DC: "datacenter1"}, "the cluster's data centres are dc1, dc2"},
		} {
			x.x.Log = log
			_, err := OpenExternal(ctx, x.x, nil)
			if err == nil || !strings.Contains(err.Error(), x.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("--dc %s: got %v, want one line containing %q", x.x.DC, err, x.want)
			}
		}
	})

	for _, row := range []struct {
		name     string
		x        External
		dcLocal  bool
		lock     string
		kinds    []string
		want     checker.Verdict
		wantRepl map[string]string // the keyspace's replication after the run
	}{
		{"created-in-dc1", External{Hosts: hostsOf["dc1"], Keyspace: "lc_dc1", DC: "dc1", RF: 2}, false,
			"lease-fenced", []string{nemesis.ClientPause}, checker.Valid,
			map[string]string{"class": "org.apache.cassandra.locator.NetworkTopologyStrategy", "dc1": "2"}},
		{"users-keyspace/local-serial-dc2", External{Hosts: hostsOf["dc2"], Keyspace: "lc_both", DC: "dc2"}, true,
			"lease-fenced", []string{nemesis.ClientPause}, checker.Valid,
			map[string]string{"class": "org.apache.cassandra.locator.NetworkTopologyStrategy", "dc1": "2", "dc2": "2"}},
		{"users-keyspace/local-serial-dc2/lease", External{Hosts: hostsOf["dc2"], Keyspace: "lc_both", DC: "dc2"}, true,
			"lease", []string{nemesis.ClientPause}, checker.Invalid, nil},
	} {
		t.Run(row.name, func(t *testing.T) {
			row.x.Log = log
			env, err := OpenExternal(ctx, row.x, row.kinds)
			if err != nil {
				t.Fatal(err)
			}
			defer env.Close()
			rt := Defaults()
			if rt.Recipe, err = LookupRecipe(row.lock); err != nil {
				t.Fatal(err)
			}
			rt.Nemesis, rt.Time, rt.Seed, rt.Store, rt.Log = row.kinds, 25*time.Second, 22700, t.TempDir(), log
			rt.Interval, rt.Quiet, rt.DCLocal = 3*time.Second, 3*time.Second, row.dcLocal
			out, err := Run(ctx, env, ReportStore{}, rt)
			if err != nil {
				t.Fatalf("run: %v (dir %s)", err, out.Dir)
			}
			t.Logf("%s: %s, %d ops, faults %v; %s", row.name, out.Verdict, out.Ops, out.Faults, out.Phases)
			if out.Verdict != row.want {
				t.Errorf("verdict %s, want %s; report %s", out.Verdict, row.want, out.Dir)
			}
			if row.wantRepl != nil {
				var repl map[string]string
				err := s.Query(`SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = ?`, row.x.Keyspace).Consistency(gocql.One).ScanContext(ctx, &repl)
				if err != nil || !maps.Equal(repl, row.wantRepl) {
					t.Errorf("keyspace %s replication %v (%v), want %v", row.x.Keyspace, repl, err, row.wantRepl)
				}
			}
		})
	}

	// The keyspace made in dc1 above keeps no replica in dc2.
	_, err = OpenExternal(ctx, External{Hosts: hostsOf["dc2"], Keyspace: "lc_dc1", DC: "dc2", Log: log}, nil)
	if want := "--dc dc2: keyspace lc_dc1 keeps no replica there"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a keyspace with no replica in --dc: got %v, want %q", err, want)
	}
	s.Close()
}
