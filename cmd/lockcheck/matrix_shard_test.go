package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/scenario"
)

// A --shard that is malformed or out of range is one line and exit 2,
// before anything touches Docker.
func TestMatrixShardRejectsBadInput(t *testing.T) {
	// (--shard "" is no shard, the flag's zero value: a dispatch of it
	// would run the quick matrix on whatever cluster is up.)
	for _, shard := range []string{"3", "0/3", "4/3", "1/0", "a/b", "-1/3", "1/3/4", "1 /3"} {
		for _, list := range []bool{false, true} {
			args := []string{"matrix", "--shard", shard}
			if list {
				args = append(args, "--list")
			}
			var stdout, stderr bytes.Buffer
			code := dispatch(context.Background(), args, &stdout, &stderr)
			if code != exitError || !strings.HasPrefix(stderr.String(), "lockcheck matrix: --shard ") || strings.Count(stderr.String(), "\n") != 1 || stdout.Len() > 0 {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line about --shard", args, code, stdout.String(), stderr.String())
			}
		}
	}
}

// matrix --list --shard K/N prints the K-th share; the shares of any N
// list the selection's rows once each.
func TestMatrixListShards(t *testing.T) {
	listed := func(args ...string) []string {
		var stdout, stderr bytes.Buffer
		if code := dispatch(context.Background(), append([]string{"matrix", "--list"}, args...), &stdout, &stderr); code != exitValid {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
		var rows []string
		for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n")[1:] {
			if strings.HasPrefix(line, "shard ") {
				continue
			}
			rows = append(rows, strings.Fields(line)[0])
		}
		return rows
	}
	for _, sel := range [][]string{nil, {"--tier", "all"}, {"--rows", "^lease"}} {
		all := listed(sel...)
		for n := 1; n <= len(all)+2; n += 1 + n/3 {
			var got []string
			for k := 1; k <= n; k++ {
				got = append(got, listed(append(slices.Clone(sel), "--shard", fmt.Sprintf("%d/%d", k, n))...)...)
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(all))
			if !slices.Equal(got, want) {
				t.Fatalf("%v, %d shards: listed %d rows %v, want the selection's %d once each", sel, n, len(got), got, len(want))
			}
		}
	}
}

// fakeRuns is a made-up outcome of a row's runs: verdicts, faults dealt,
// anomalies, loads, as runRow tallies them.
func fakeRuns(rng *rand.Rand, row scenario.Row, first, repeat int) rowRuns {
	res := rowRuns{Result: scenario.Result{Row: row}, first: first}
	for range repeat {
		v := []checker.Verdict{checker.Valid, checker.Invalid, checker.Invalid, checker.Unknown}[rng.IntN(4)]
		faults := map[string]int{}
		for _, k := range row.Faults {
			if rng.IntN(10) > 0 {
				faults[k] = 1 + rng.IntN(3)
			}
		}
		res.Tally.Add(row, v, faults, 0)
		var as []checker.Anomaly
		if v == checker.Invalid {
			as = slices.Repeat([]checker.Anomaly{{Kind: "lost-add"}}, 1+rng.IntN(5))
		}
		res.Tally.Saw(as)
		res.loads = append(res.loads, float64(rng.IntN(40)))
	}
	return res
}

// record is what runMatrix records and tabulates for the rows it runs:
// their groups in order, each row's line (with the shard's name when it is
// one).
func record(t *testing.T, rows []scenario.Row, runs map[string]rowRuns, shard string) ([]byte, []scenario.Result) {
	t.Helper()
	var buf bytes.Buffer
	var results []scenario.Result
	for _, g := range scenario.Groups(rows) {
		for _, row := range g.Rows {
			res := runs[row.Name]
			res.shard = shard
			if err := writeRate(&buf, row, res); err != nil {
				t.Fatal(err)
			}
			results = append(results, res.Result)
		}
	}
	return buf.Bytes(), results
}

// A merge of the shards' files records the lines, and prints the table,
// that one process running the whole selection does.
func TestMergeEqualsOneProcess(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 2))
	for _, sel := range [][]string{nil, {"--tier", "all"}, {"--rows", "^lease"}} {
		tier, pattern := "quick", ""
		if len(sel) > 0 && sel[0] == "--tier" {
			tier = sel[1]
		} else if len(sel) > 0 {
			tier, pattern = "all", sel[1]
		}
		rows, err := scenario.Select(scenario.Rows, tier, pattern)
		if err != nil {
			t.Fatal(err)
		}
		runs := map[string]rowRuns{}
		for _, r := range rows {
			runs[r.Name] = fakeRuns(rng, r, 0, 1+rng.IntN(10))
		}
		single, results := record(t, rows, runs, "")
		var table bytes.Buffer
		if err := scenario.WriteTable(&table, results); err != nil {
			t.Fatal(err)
		}
		wantCode := exitValid
		if slices.ContainsFunc(results, func(r scenario.Result) bool { return !r.Tally.Met(r.Row) }) {
			wantCode = exitInvalid
		}
		for _, n := range []int{1, 2, 3, 5, 8, len(rows) + 1} {
			dir := t.TempDir()
			var files []string
			for k := 1; k <= n; k++ {
				sh := scenario.Shard{K: k, N: n}
				lines, _ := record(t, sh.Of(rows), runs, sh.String())
				file := filepath.Join(dir, fmt.Sprintf("rates-%d-of-%d.jsonl", k, n))
				if err := os.WriteFile(file, lines, 0o644); err != nil {
					t.Fatal(err)
				}
				files = append(files, file)
			}
			rng.Shuffle(len(files), func(i, j int) { files[i], files[j] = files[j], files[i] })
			out := filepath.Join(dir, "rates.jsonl")
			var stdout, stderr bytes.Buffer
			args := append(append([]string{"matrix", "merge", "--record", out}, sel...), files...)
			code := dispatch(context.Background(), args, &stdout, &stderr)
			if code != wantCode {
				t.Fatalf("%v, %d shards: exit %d, want %d: %s", sel, n, code, wantCode, stderr.String())
			}
			got, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, single) {
				t.Errorf("%v, %d shards: merged lines\n%s\nwant one process's\n%s", sel, n, got, single)
			}
			if stdout.String() != table.String() {
				t.Errorf("%v, %d shards: table\n%s\nwant one process's\n%s", sel, n, stdout.String(), table.String())
			}
		}
	}
}

// writeShards runs a made-up 3-shard matrix of the quick tier into dir
// and returns the shards' files.
func writeShards(t *testing.T, dir string) []string {
	t.Helper()
	rng := rand.New(rand.NewPCG(51, 3))
	rows, err := scenario.Select(scenario.Rows, "quick", "")
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]rowRuns{}
	for _, r := range rows {
		runs[r.Name] = fakeRuns(rng, r, 0, 3)
	}
	var files []string
	for k := 1; k <= 3; k++ {
		sh := scenario.Shard{K: k, N: 3}
		lines, _ := record(t, sh.Of(rows), runs, sh.String())
		file := filepath.Join(dir, fmt.Sprintf("rates-%d-of-3.jsonl", k))
		if err := os.WriteFile(file, lines, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, file)
	}
	return files
}

// editLine rewrites the first line of a rates file through edit.
func editLine(t *testing.T, src, dst string, edit func(*scenario.Rate)) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	rates, err := scenario.ReadRates(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	edit(&rates[0])
	var out []byte
	for _, rt := range rates {
		if out, err = appendRate(out, rt); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(dst, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// Files that cannot be pooled are one line and exit 2, and nothing is
// written: neither the record nor the pages.
func TestMergeRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	files := writeShards(t, dir)
	one, two, three := files[0], files[1], files[2]
	path := func(name string) string { return filepath.Join(dir, name) }
	if err := os.WriteFile(path("history.jsonl"), []byte(`{"type":"invoke","f":"acquire","process":0}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path("copy.jsonl"), mustRead(t, one), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(one, path("link.jsonl")); err != nil {
		t.Fatal(err)
	}
	noShard := editLine(t, one, path("noshard.jsonl"), func(r *scenario.Rate) { r.Shard = "" })
	otherDef := editLine(t, one, path("otherdef.jsonl"), func(r *scenario.Rate) { r.Def = "0123456789ab" })
	noDef := editLine(t, one, path("nodef.jsonl"), func(r *scenario.Rate) { r.Def = "" })
	otherN := editLine(t, two, path("othern.jsonl"), func(r *scenario.Rate) { r.Shard = "2/4" })
	wrongShare := editLine(t, two, path("wrongshare.jsonl"), func(r *scenario.Rate) { r.Shard = "3/3" })
	badShard := editLine(t, two, path("badshard.jsonl"), func(r *scenario.Rate) { r.Shard = "4/3" })
	noRow := editLine(t, two, path("norow.jsonl"), func(r *scenario.Rate) { r.Row = "no/such/row" })
	// A shard's file with a row's runs recorded again.
	b := mustRead(t, one)
	again := path("again.jsonl")
	if err := os.WriteFile(again, append(slices.Clone(b), b[:bytes.IndexByte(b, '\n')+1]...), 0o644); err != nil {
		t.Fatal(err)
	}

	record := path("rates.jsonl")
	before := []byte(`{"row":"racy/none","time":"15s","interval":"4s","runs":10,"invalid":10,"date":"2026-11-22","cores":2}` + "\n")
	if err := os.WriteFile(record, before, 0o644); err != nil {
		t.Fatal(err)
	}
	docs := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{}, "no file given"},
		{[]string{path("none.jsonl")}, "no such file"},
		{[]string{dir}, "is a directory"},
		{[]string{one, path("history.jsonl")}, "not a shard's rates file"},
		{[]string{one, two, one}, "one file given twice"},
		{[]string{one, path("link.jsonl")}, "one file given twice"},
		{[]string{one, path("copy.jsonl"), two}, "same lines: one shard's file given twice"},
		{[]string{noShard, two, three}, "no shard"},
		{[]string{otherDef, two, three}, "another revision"},
		{[]string{noDef, two, three}, "another revision"},
		{[]string{one, otherN, three}, "not one fan-out"},
		{[]string{one, wrongShare}, "is not in shard 3/3"},
		{[]string{one, badShard}, "K must be 1 to N"},
		{[]string{one, noRow}, `no row "no/such/row"`},
		{[]string{one, again}, "one shard's runs given twice"},
		{[]string{again, two, three}, "were recorded before"},
		{[]string{"--rows", "^racy", one, two, three}, "is not in the selection"},
		{[]string{"--tier", "full", one, two, three}, "is not in the selection"},
		{[]string{"--tier", "slow", one}, `tier "slow"`},
		{[]string{"--docs", docs, one, two, three}, "--docs needs --record"},
		{[]string{"--docs", path("nodir"), "--record", record, one, two, three}, "not a directory"},
		{[]string{"--bogus", one}, "flag provided but not defined"},
		{[]string{"--record", one, one, two, three}, "is one of the shards' files"},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"matrix", "merge", "--record", record}, tc.args...)
		if slices.Contains(tc.args, "--docs") && !slices.Contains(tc.args, "--record") {
			args = append([]string{"matrix", "merge"}, tc.args...)
		}
		code := dispatch(context.Background(), args, &stdout, &stderr)
		if code != exitError || !strings.Contains(stderr.String(), tc.want) || strings.Count(stderr.String(), "\n") != 1 || stdout.Len() > 0 {
			t.Errorf("merge %v: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", tc.args, code, stdout.String(), stderr.String(), tc.want)
		}
		if got := mustRead(t, record); !bytes.Equal(got, before) {
			t.Fatalf("merge %v wrote the record:\n%s", tc.args, got)
		}
		if entries, _ := os.ReadDir(docs); len(entries) > 0 {
			t.Fatalf("merge %v wrote pages into %s", tc.args, docs)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A shard whose file is missing leaves its rows unmeasured: they fail the
// table, the merge says which shard, and exits 1; what the others measured
// is still recorded.
func TestMergeMissingShard(t *testing.T) {
	dir := t.TempDir()
	files := writeShards(t, dir)
	record := filepath.Join(dir, "rates.jsonl")
	var stdout, stderr bytes.Buffer
	code := dispatch(context.Background(), []string{"matrix", "merge", "--record", record, files[0], files[2]}, &stdout, &stderr)
	if code != exitInvalid || !strings.Contains(stderr.String(), "shard 2/3: ") {
		t.Fatalf("exit %d, stderr %q; want exit 1 naming shard 2/3", code, stderr.String())
	}
	rows, _ := scenario.Select(scenario.Rows, "quick", "")
	for _, r := range (scenario.Shard{K: 2, N: 3}).Of(rows) {
		if !lineHas(stdout.String(), r.Name, "FAIL") {
			t.Errorf("table:\n%s\nwant %s failed, unmeasured", stdout.String(), r.Name)
		}
	}
	got, err := scenario.ReadRates(bytes.NewReader(mustRead(t, record)))
	if err != nil {
		t.Fatal(err)
	}
	if want := len(rows) - len((scenario.Shard{K: 2, N: 3}).Of(rows)); len(got) != want {
		t.Errorf("%d lines recorded, want the other shards' %d", len(got), want)
	}
	for _, rt := range got {
		if rt.Shard != "" || rt.Def == "" {
			t.Errorf("recorded line %+v: want no shard and the row's fingerprint", rt)
		}
	}
}

// lineHas says whether the table's line of row has word.
func lineHas(table, row, word string) bool {
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, row+" ") {
			return strings.Contains(line, word)
		}
	}
	return false
}

// --docs rewrites findings.md and locks.md from all of --record's rates,
// as go test ./scenario -update renders them.
func TestMergeDocs(t *testing.T) {
	dir := t.TempDir()
	files := writeShards(t, dir)
	record := filepath.Join(dir, "rates.jsonl")
	old := mustRead(t, filepath.Join("..", "..", "scenario", "rates.jsonl"))
	if err := os.WriteFile(record, old, 0o644); err != nil {
		t.Fatal(err)
	}
	docs := filepath.Join(dir, "docs")
	if err := os.Mkdir(docs, 0o755); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := dispatch(context.Background(), append([]string{"matrix", "merge", "--record", record, "--docs", docs}, files...), &stdout, &stderr); code == exitError {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	rates, err := scenario.ReadRates(bytes.NewReader(mustRead(t, record)))
	if err != nil {
		t.Fatal(err)
	}
	var findings, locks bytes.Buffer
	if err := scenario.WriteFindings(&findings, scenario.Rows, rates); err != nil {
		t.Fatal(err)
	}
	if err := scenario.WriteCatalogue(&locks, scenario.Catalogue, scenario.Rows, rates); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mustRead(t, filepath.Join(docs, "findings.md")), findings.Bytes()) || !bytes.Equal(mustRead(t, filepath.Join(docs, "locks.md")), locks.Bytes()) {
		t.Error("the pages --docs wrote are not what the rows and the record's rates render")
	}
	if bytes.Equal(findings.Bytes(), mustRead(t, filepath.Join("..", "..", "docs", "findings.md"))) {
		t.Error("the merged rates changed nothing on the page: the test shows nothing")
	}
}
