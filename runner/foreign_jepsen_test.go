//go:build jepsen

package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/cluster/clustertest"
)

// TestForeignRulePartlyPartitions: a rule lockcheck did not make, n2
// dropping n3's packets, is named before the run waits, the start's health
// check notices the partial partition, and the `--nemesis none` run ends as
// a failed set-up with no verdict, stored as such; `cluster heal --force`'s
// flush makes the cluster healthy again.
func TestForeignRulePartlyPartitions(t *testing.T) {
	c := clustertest.Get(t)
	nodes := c.Nodes()
	if len(nodes) < 3 {
		t.Skipf("needs 3 nodes, the cluster has %d", len(nodes))
	}
	n2, n3 := nodes[1], nodes[2]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rule := []string{"INPUT", "-s", n3.IP + "/32", "-j", "DROP"}
	if _, err := n2.Exec(ctx, append([]string{"iptables", "-w", "-A"}, rule...)...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = n2.Exec(context.Background(), append([]string{"iptables", "-w", "-D"}, rule...)...)
		_ = clustertest.HealLeftovers(context.Background(), c, nil)
	})
	r, err := LookupRecipe("lease-fenced")
	if err != nil {
		t.Fatal(err)
	}
	var prog bytes.Buffer
	tc := Defaults()
	// The rule never goes by itself: a budget of a few health checks' reads
	// shows it as well as a longer one.
	tc.Recipe, tc.Time, tc.Quiet, tc.HealTimeout, tc.Store, tc.Progress = r, 5*time.Second, 0, 10*time.Second, t.TempDir(), &prog
	out, err := Run(ctx, ClusterEnv{Cluster: c}, ReportStore{}, tc)
	var se *SetupError
	if !errors.As(err, &se) {
		t.Fatalf("run over n2 dropping n3's packets: err %v, verdict %q; want a failed set-up", err, out.Verdict)
	}
	if out.Verdict != "" {
		t.Errorf("failed set-up has verdict %q", out.Verdict)
	}
	want := "n2: iptables rule -A INPUT -s " + n3.IP + "/32 -j DROP (not lockcheck's"
	if !strings.Contains(prog.String(), want) {
		t.Errorf("progress does not name the rule (%q):\n%s", want, prog.String())
	}
	b, err := os.ReadFile(filepath.Join(out.Dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res checker.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Verdict == checker.Valid || res.SetupFailed == "" || res.Meta == nil || len(res.Meta.Foreign) != 1 {
		t.Errorf("stored verdict %q, setup_failed %q, meta %+v: want a failed set-up with the rule in the meta", res.Verdict, res.SetupFailed, res.Meta)
	}
	t.Logf("refused with: %v", se)
	if err := n2.RemoveForeign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := HealLeftovers(ctx, ClusterEnv{Cluster: c}, nil, nil); err != nil {
		t.Fatalf("after the flush: %v", err)
	}
}
