package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lockcheck/lockcheck/scenario"
)

// The fan-out of `lockcheck matrix` over an engine that runs jobs side by
// side (docs/fan-out.md): `matrix --shard K/N` runs one share of the
// selection (scenario.Shares), and `matrix merge` pools the shares' rates
// files into rates.jsonl's lines and the catch-rate table of the whole.

const matrixMergeUsage = `usage: lockcheck matrix merge [flags] FILE...
Pool the rates files of a fan-out's shards (lockcheck matrix --shard K/N
--record FILE, one file a share, in any order) into lines of
scenario/rates.jsonl's format, print the catch-rate table of the whole
selection, and say whether every row met its expectation. Give it the
selection the shards ran (--tier, --rows); a row no file measured (its
shard's file missing, or the shard interrupted) fails.
  --tier T         quick, full or all, as the shards ran (default quick; all
                   with --rows)
  --rows PATTERN   the shards' --rows
  --record FILE    append the pooled lines to FILE (scenario/rates.jsonl)
  --docs DIR       then rewrite DIR/findings.md and DIR/locks.md from all of
                   FILE's rates (for scenario/rates.jsonl, go test ./scenario
                   -update does the same)
Nothing is written when the files cannot be pooled: a file that is not
rates lines, a line of no shard or of shards of another N or selection, a
row defined otherwise than in this binary (another revision), one file
given twice, a row's runs recorded twice.
Exit status: 0 every row met its expectation, 1 a row missed it or was not
measured, 2 bad input or an error.`

// mergeFlags are `lockcheck matrix merge`'s flags.
type mergeFlags struct {
	pattern, tier, record, docs string
}

func newMergeFlags() (*flag.FlagSet, *mergeFlags) {
	fs := newFlags("matrix merge")
	f := &mergeFlags{}
	fs.StringVar(&f.tier, "tier", "", "quick, full or all: the shards' selection")
	fs.StringVar(&f.pattern, "rows", "", "row name pattern: the shards' selection")
	fs.StringVar(&f.record, "record", "", "append the pooled lines to this file")
	fs.StringVar(&f.docs, "docs", "", "rewrite findings.md and locks.md in this `directory` from --record's rates")
	return fs, f
}

// docs/cli.md lists merge beside matrix (clidoc.go's table).
func init() {
	i := slices.IndexFunc(flagSets, func(c struct {
		name, usage string
		flags       func() *flag.FlagSet
	}) bool {
		return c.name == "matrix"
	})
	flagSets = slices.Insert(flagSets, i+1, struct {
		name, usage string
		flags       func() *flag.FlagSet
	}{"matrix merge", matrixMergeUsage, func() *flag.FlagSet { fs, _ := newMergeFlags(); return fs }})
}

// shardDefaults gives a shard a store and a rates file of its own unless
// the flags name them, so that shards sharing a machine or a volume never
// write into each other's.
func shardDefaults(fs *flag.FlagSet, f *matrixFlags, sh scenario.Shard) {
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if !set["store"] {
		f.store = fmt.Sprintf("%s-%d-of-%d", f.store, sh.K, sh.N)
	}
	if !set["record"] {
		f.record = fmt.Sprintf("rates-%d-of-%d.jsonl", sh.K, sh.N)
	}
}

// runMatrixMerge is `lockcheck matrix merge`.
func runMatrixMerge(args []string, stdout, stderr io.Writer) int {
	fs, f := newMergeFlags()
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "lockcheck matrix merge: %s\n", oneLine(fmt.Sprintf(format, a...)))
		return exitError
	}
	files, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, matrixMergeUsage)
			return exitValid
		}
		return bad("%v", err)
	}
	if len(files) == 0 {
		return bad("no file given: lockcheck matrix merge [flags] FILE... (the shards' --record files)")
	}
	if f.docs != "" && f.record == "" {
		return bad("--docs needs --record: the pages are rendered from that file's rates")
	}
	if f.tier == "" {
		f.tier = string(scenario.Quick)
		if f.pattern != "" {
			f.tier = "all"
		}
	}
	rows, err := scenario.Select(scenario.Rows, f.tier, f.pattern)
	if err != nil {
		return bad("--%v", err)
	}
	if len(rows) == 0 {
		return bad("no row of tier %s matches --rows %q", f.tier, f.pattern)
	}
	sel := selection{rows: rows, tier: f.tier, pattern: f.pattern}
	lines, err := readShardFiles(files, sel)
	if err != nil {
		return bad("%v", err)
	}
	pooled, results := poolShards(rows, lines)

	// Everything is read, checked and rendered before anything is written.
	var out []byte
	for _, rt := range pooled {
		out, err = appendRate(out, rt)
		if err != nil {
			return bad("%v", err)
		}
	}
	if f.record != "" {
		if ri, err := os.Stat(f.record); err == nil {
			for _, file := range files {
				if fi, err := os.Stat(file); err == nil && os.SameFile(ri, fi) {
					return bad("--record %s is one of the shards' files: record into another (scenario/rates.jsonl)", f.record)
				}
			}
		}
	}
	var pages map[string][]byte
	if f.record != "" {
		old, err := os.ReadFile(f.record)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return bad("--record: %v", err)
		}
		if len(old) > 0 && old[len(old)-1] != '\n' {
			out = append([]byte{'\n'}, out...)
		}
		if f.docs != "" {
			if pages, err = renderPages(f.docs, slices.Concat(old, out)); err != nil {
				return bad("--docs: %s: %v", f.record, err)
			}
		}
	}
	if f.record != "" && len(out) > 0 {
		if err := appendFile(f.record, out); err != nil {
			return bad("--record: %v", err)
		}
	}
	for _, path := range slices.Sorted(maps.Keys(pages)) {
		if err := writeFileAtomic(path, pages[path]); err != nil {
			return bad("--docs: %v", err)
		}
	}
	switch {
	case f.record != "" && f.docs == "":
		fmt.Fprintf(stderr, "lockcheck matrix merge: %d lines appended to %s; regenerate the pages: go test ./scenario -update (for scenario/rates.jsonl) or merge --docs DIR\n", len(pooled), f.record)
	case f.record != "":
		fmt.Fprintf(stderr, "lockcheck matrix merge: %d lines appended to %s; %s rewritten\n", len(pooled), f.record, strings.Join(slices.Sorted(maps.Keys(pages)), " and "))
	}
	unmeasured(stderr, sel, lines)
	if err := scenario.WriteTable(stdout, results); err != nil {
		return exitError
	}
	if slices.ContainsFunc(results, func(r scenario.Result) bool { return !r.Tally.Met(r.Row) }) {
		return exitInvalid
	}
	return exitValid
}

// selection is the rows a fan-out's shards shared out, and how they were
// picked (for messages).
type selection struct {
	rows          []scenario.Row
	tier, pattern string
}

func (s selection) String() string {
	if s.pattern == "" {
		return "--tier " + s.tier
	}
	return fmt.Sprintf("--tier %s --rows %q", s.tier, s.pattern)
}

// shardLine is one line of a shard's rates file.
type shardLine struct {
	file  string
	line  int
	shard scenario.Shard
	rate  scenario.Rate
}

func (l shardLine) String() string { return fmt.Sprintf("%s line %d", l.file, l.line) }

// readShardFiles reads and checks the shards' rates files: every line a
// shard's, all of one fan-out (one N, one selection, each share from one
// file), each row as this binary defines it, no run counted twice.
func readShardFiles(files []string, sel selection) ([]shardLine, error) {
	var (
		lines  []shardLine
		infos  = map[string]os.FileInfo{}
		bodies = map[string][]byte{}
		owner  = map[int]string{} // shard K -> the file whose lines are its
		n      int
		nFrom  string
		shares [][]scenario.Row
	)
	for _, file := range files {
		info, err := os.Stat(file)
		if err != nil {
			return nil, err
		}
		if info.IsDir() {
			return nil, fmt.Errorf("%s is a directory, not a shard's rates file", file)
		}
		for other, oi := range infos {
			if os.SameFile(info, oi) {
				return nil, fmt.Errorf("%s and %s are one file given twice", other, file)
			}
		}
		infos[file] = info
		body, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		for other, ob := range bodies {
			if len(body) > 0 && bytes.Equal(body, ob) {
				return nil, fmt.Errorf("%s and %s hold the same lines: one shard's file given twice", other, file)
			}
		}
		bodies[file] = body
		rates, err := scenario.ReadRates(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("%s: not a shard's rates file: %w", file, err)
		}
		if err := scenario.CheckRates(scenario.Rows, rates); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		for i, rt := range rates {
			l := shardLine{file: file, line: lineOf(body, i), rate: rt}
			if rt.Shard == "" {
				return nil, fmt.Errorf("%s: no shard: not a line of lockcheck matrix --shard K/N --record", l)
			}
			if l.shard, err = scenario.ParseShard(rt.Shard); err != nil {
				return nil, fmt.Errorf("%s: shard %w", l, err)
			}
			if n == 0 {
				n, nFrom = l.shard.N, l.String()
				shares = scenario.Shares(sel.rows, n)
			}
			if l.shard.N != n {
				return nil, fmt.Errorf("%s: shard %s, but %s is of %d shards: not one fan-out", l, l.shard, nFrom, n)
			}
			row, _ := scenario.Lookup(rt.Row) // CheckRates found it
			if rt.Def != row.Fingerprint() {
				return nil, fmt.Errorf("%s: row %s ran as another revision defines it (fingerprint %q, this binary's %q): merge with the shards' revision", l, rt.Row, rt.Def, row.Fingerprint())
			}
			if !slices.ContainsFunc(sel.rows, func(r scenario.Row) bool { return r.Name == rt.Row }) {
				return nil, fmt.Errorf("%s: row %s is not in the selection (%s): give merge the shards' --tier and --rows", l, rt.Row, sel)
			}
			if !slices.ContainsFunc(shares[l.shard.K-1], func(r scenario.Row) bool { return r.Name == rt.Row }) {
				return nil, fmt.Errorf("%s: row %s is not in shard %s of the selection (%s): the shards ran another selection", l, rt.Row, l.shard, sel)
			}
			if o, ok := owner[l.shard.K]; ok && o != file {
				return nil, fmt.Errorf("%s: shard %s is also %s's: one shard's runs given twice", l, l.shard, o)
			}
			owner[l.shard.K] = file
			for _, e := range lines {
				if e.rate.Row == rt.Row && rt.First < e.rate.First+e.rate.Runs && e.rate.First < rt.First+rt.Runs {
					return nil, fmt.Errorf("%s: row %s's runs %d-%d were recorded before (%s)", l, rt.Row, rt.First, rt.First+rt.Runs-1, e)
				}
			}
			lines = append(lines, l)
		}
	}
	return lines, nil
}

// lineOf is the line number of the i-th rate of body (ReadRates skips
// blank lines).
func lineOf(body []byte, i int) int {
	for n, line := range bytes.Split(body, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if i == 0 {
			return n + 1
		}
		i--
	}
	return 0
}

// poolShards is the shards' lines as one process records them (in the
// order it runs the rows: scenario.Groups; a row's batches by their first
// run) without their shard, and each selected row's tally over its lines.
func poolShards(rows []scenario.Row, lines []shardLine) ([]scenario.Rate, []scenario.Result) {
	var pooled []scenario.Rate
	var results []scenario.Result
	for _, g := range scenario.Groups(rows) {
		for _, row := range g.Rows {
			var mine []scenario.Rate
			for _, l := range lines {
				if l.rate.Row == row.Name {
					rt := l.rate
					rt.Shard = ""
					mine = append(mine, rt)
				}
			}
			slices.SortStableFunc(mine, func(a, b scenario.Rate) int { return a.First - b.First })
			res := scenario.Result{Row: row}
			for _, rt := range mine {
				res.Tally.Runs += rt.Runs
				res.Tally.Invalid += rt.Invalid
				res.Tally.Unknown += rt.Unknown
				res.Tally.Valid += rt.Runs - rt.Invalid - rt.Unknown
				res.Tally.NoFault += rt.NoFault
			}
			pooled = append(pooled, mine...)
			results = append(results, res)
		}
	}
	return pooled, results
}

// unmeasured says, a line per share, which shares left rows without a
// line: the shard's file is missing, or it was interrupted.
func unmeasured(w io.Writer, sel selection, lines []shardLine) {
	measured := map[string]bool{}
	n := 0
	for _, l := range lines {
		measured[l.rate.Row] = true
		n = l.shard.N
	}
	if n == 0 {
		fmt.Fprintf(w, "lockcheck matrix merge: no file holds a line: none of the %d rows of the selection (%s) was measured\n", len(sel.rows), sel)
		return
	}
	for k, share := range scenario.Shares(sel.rows, n) {
		missing := 0
		for _, r := range share {
			if !measured[r.Name] {
				missing++
			}
		}
		if missing > 0 {
			fmt.Fprintf(w, "lockcheck matrix merge: shard %d/%d: %d of its %d rows have no line (its file is missing, or it was interrupted)\n", k+1, n, missing, len(share))
		}
	}
}

// renderPages renders findings.md and locks.md of dir from the rates file
// body (as go test ./scenario -update does from scenario/rates.jsonl).
func renderPages(dir string, body []byte) (map[string][]byte, error) {
	rates, err := scenario.ReadRates(bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if err := scenario.CheckRates(scenario.Rows, rates); err != nil {
		return nil, err
	}
	var findings, locks bytes.Buffer
	if err := scenario.WriteFindings(&findings, scenario.Rows, rates); err != nil {
		return nil, err
	}
	if err := scenario.WriteCatalogue(&locks, scenario.Catalogue, scenario.Rows, rates); err != nil {
		return nil, err
	}
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	return map[string][]byte{
		filepath.Join(dir, "findings.md"): findings.Bytes(),
		filepath.Join(dir, "locks.md"):    locks.Bytes(),
	}, nil
}

func appendFile(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeFileAtomic replaces path with b through a file beside it, so that
// a page is never left half written.
func writeFileAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// appendRate adds rt as a line of rates.jsonl, as writeRate writes it.
func appendRate(b []byte, rt scenario.Rate) ([]byte, error) {
	line, err := json.Marshal(rt)
	if err != nil {
		return b, err
	}
	return append(append(b, line...), '\n'), nil
}
