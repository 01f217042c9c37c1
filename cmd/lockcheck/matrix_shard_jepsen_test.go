//go:build jepsen

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/scenario"
)

// shardRows are small rows caught in every measured run (rates.jsonl), so
// that one process and three shards give the same verdicts.
const shardRows = `^(bakery/client-clock|music/client-clock|election/none/leader|lease/client-pause/leader)/shrunk$`

// Three shards run as three processes at once on the shared cluster (they
// take turns on its lease) give, merged, the table and the rates of one
// process running every row; each ran its share only.
//
// The processes take the cluster's lease themselves, so this test runs only
// where the package's TestMain has not taken it for the package's tests
// (which would keep them waiting to its end):
//
//	LOCKCHECK_SHARED=none go test -tags=jepsen -run TestShardsAsProcesses ./cmd/lockcheck
//
// It is in neither stream of make jepsen: it repeats what the unit tests
// show (TestMergeEqualsOneProcess) at the cost of eight runs.
func TestShardsAsProcesses(t *testing.T) {
	if os.Getenv("LOCKCHECK_SHARED") != "none" {
		t.Skip("the package holds the shared cluster's lease: LOCKCHECK_SHARED=none runs it")
	}
	shared := os.Getenv("LOCKCHECK_CLUSTER")
	if shared == "" {
		shared = cluster.DefaultName
	}
	// The processes must find it running: one that found none would start
	// it, and two would both try.
	if _, err := cluster.Attach(context.Background(), cluster.WithName(shared)); err != nil {
		t.Fatalf("the shared cluster %s: %v (lockcheck cluster up)", shared, err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "lockcheck")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	ctx := context.Background()
	matrix := func(run string, extra ...string) *exec.Cmd {
		args := append([]string{"matrix", "--cluster", shared, "--rows", shardRows,
			"--store", filepath.Join(dir, "store-"+run), "--record", filepath.Join(dir, run+".jsonl")}, extra...)
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Stdout, cmd.Stderr = &bytes.Buffer{}, &bytes.Buffer{}
		return cmd
	}

	one := matrix("one")
	start := time.Now()
	if err := one.Run(); err != nil {
		t.Fatalf("one process: %v: %s", err, one.Stderr)
	}
	t.Logf("one process: %v\n%s%s", time.Since(start).Round(time.Second), one.Stdout, one.Stderr)
	start = time.Now()
	var shards []*exec.Cmd
	for k := 1; k <= 3; k++ {
		cmd := matrix(fmt.Sprintf("shard-%d", k), "--shard", fmt.Sprintf("%d/3", k))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		shards = append(shards, cmd)
	}
	rows, err := scenario.Select(scenario.Rows, "all", shardRows)
	if err != nil || len(rows) != 4 {
		t.Fatalf("%d rows, %v; want the 4 small rows", len(rows), err)
	}
	ran := regexp.MustCompile(`(?m)^lockcheck matrix: (\S+) run 1/1 `)
	started := regexp.MustCompile(`(?m)^lockcheck matrix: starting cluster .*`)
	if s := started.FindString(one.Stderr.(*bytes.Buffer).String()); s != "" {
		t.Errorf("one process: %q: the rows run on the running shared cluster %s", s, shared)
	}
	var files []string
	for k, cmd := range shards {
		if err := cmd.Wait(); err != nil {
			t.Errorf("shard %d/3: %v: %s", k+1, err, cmd.Stderr)
		}
		t.Logf("shard %d/3 done after %v:\n%s", k+1, time.Since(start).Round(time.Second), cmd.Stderr)
		if s := started.FindString(cmd.Stderr.(*bytes.Buffer).String()); s != "" {
			t.Errorf("shard %d/3: %q: the rows run on the running shared cluster %s", k+1, s, shared)
		}
		var got []string
		for _, m := range ran.FindAllStringSubmatch(cmd.Stderr.(*bytes.Buffer).String(), -1) {
			got = append(got, m[1])
		}
		if want := names((scenario.Shard{K: k + 1, N: 3}).Of(rows)); !slices.Equal(got, want) {
			t.Errorf("shard %d/3 ran %v, want its share %v", k+1, got, want)
		}
		files = append(files, filepath.Join(dir, fmt.Sprintf("shard-%d.jsonl", k+1)))
	}

	merged := filepath.Join(dir, "merged.jsonl")
	var stdout, stderr bytes.Buffer
	code := dispatch(ctx, append([]string{"matrix", "merge", "--rows", shardRows, "--record", merged}, files...), &stdout, &stderr)
	if code != exitValid {
		t.Fatalf("merge: exit %d: %s", code, stderr.String())
	}
	if want := one.Stdout.(*bytes.Buffer).String(); stdout.String() != want {
		t.Errorf("merged table:\n%s\none process's:\n%s", stdout.String(), want)
	}
	a, b := ratesOf(t, filepath.Join(dir, "one.jsonl")), ratesOf(t, merged)
	if len(a) != len(b) {
		t.Fatalf("%d merged lines, one process recorded %d", len(b), len(a))
	}
	for i := range a {
		if a[i].Row != b[i].Row || a[i].Runs != b[i].Runs || a[i].Invalid != b[i].Invalid || a[i].Unknown != b[i].Unknown ||
			a[i].NoFault != b[i].NoFault || a[i].Def != b[i].Def || b[i].Shard != "" {
			t.Errorf("merged line %+v, one process's %+v", b[i], a[i])
		}
	}
}

func names(rows []scenario.Row) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Name)
	}
	return out
}

func ratesOf(t *testing.T, path string) []scenario.Rate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rates, err := scenario.ReadRates(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return rates
}
