package scenario

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseShard(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Shard
		err  string
	}{
		{"1/1", Shard{1, 1}, ""},
		{"3/8", Shard{3, 8}, ""},
		{"08/10", Shard{8, 10}, ""},
		{"0/3", Shard{}, "K must be 1 to N"},
		{"4/3", Shard{}, "K must be 1 to N"},
		{"1/0", Shard{}, "K must be 1 to N"},
		{"3", Shard{}, "want K/N"},
		{"", Shard{}, "want K/N"},
		{"a/b", Shard{}, "want K/N"},
		{"-1/3", Shard{}, "want K/N"},
		{"+1/3", Shard{}, "want K/N"},
		{"1/3/4", Shard{}, "want K/N"},
		{" 1/3", Shard{}, "want K/N"},
		{"1/99999999999999999999", Shard{}, "want K/N"},
	} {
		got, err := ParseShard(tc.in)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ParseShard(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseShard(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
		}
	}
}

// Shares of any n cover any selection of rows exactly once, each share in
// the selection's order; the deal depends on the set of rows, not on their
// order; and greedy dealing keeps the busiest share within one row's
// estimate and a cluster start of the idlest.
func TestSharesCoverOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 1))
	for trial := range 300 {
		var sel []Row
		for _, r := range Rows {
			if rng.IntN(4) == 0 || trial%10 == 0 {
				sel = append(sel, r)
			}
		}
		n := 1 + rng.IntN(12)
		if trial%7 == 0 {
			n = len(sel) + 1 + rng.IntN(3) // more shares than rows: some are empty
		}
		shares := Shares(sel, n)
		if len(shares) != n {
			t.Fatalf("%d shares, want %d", len(shares), n)
		}
		seen := map[string]int{}
		var loads []time.Duration
		var longest time.Duration
		for k, share := range shares {
			pos := -1
			for _, r := range share {
				seen[r.Name]++
				longest = max(longest, r.Estimate())
				i := slices.IndexFunc(sel, func(s Row) bool { return s.Name == r.Name })
				if i <= pos {
					t.Fatalf("n=%d share %d: %s out of the selection's order", n, k+1, r.Name)
				}
				pos = i
			}
			loads = append(loads, Estimate(share))
			if got := (Shard{k + 1, n}).Of(sel); !slices.EqualFunc(got, share, sameName) {
				t.Fatalf("Shard{%d,%d}.Of differs from Shares", k+1, n)
			}
		}
		for _, r := range sel {
			if seen[r.Name] != 1 {
				t.Fatalf("n=%d: row %s in %d shares, want 1", n, r.Name, seen[r.Name])
			}
		}
		if len(seen) != len(sel) {
			t.Fatalf("n=%d: %d rows dealt, selection has %d", n, len(seen), len(sel))
		}
		if len(sel) > 0 && slices.Max(loads)-slices.Min(loads) > longest+clusterStart {
			t.Errorf("n=%d: shares' estimates %v differ by more than the longest row and a cluster start (%v)", n, loads, longest+clusterStart)
		}
		shuffled := slices.Clone(sel)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		for k, share := range Shares(shuffled, n) {
			if !sameSet(share, shares[k]) {
				t.Fatalf("n=%d share %d: another order of the same rows deals other rows", n, k+1)
			}
		}
	}
}

func sameName(a, b Row) bool { return a.Name == b.Name }

func sameSet(a, b []Row) bool {
	x, y := names(a), names(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// A row's estimate is its time and the overheads its kind adds.
func TestEstimate(t *testing.T) {
	r := good()
	if got := r.Estimate(); got != r.Time+runOverhead {
		t.Errorf("recipe row: %v, want %v", got, r.Time+runOverhead)
	}
	r.Command = "plugins/java-locks/run shedlock"
	if got := r.Estimate(); got != r.Time+runOverhead+pluginOverhead {
		t.Errorf("plug-in row: %v", got)
	}
	move, ok := Lookup("4n-1spare/lease-fenced/join+leave")
	if !ok {
		t.Fatal("no membership row")
	}
	if move.Estimate() <= move.Time+runOverhead {
		t.Errorf("a row that runs on until its movements are dealt: %v, want more than %v", move.Estimate(), move.Time+runOverhead)
	}
}

// The fingerprint follows what a run depends on and ignores the words.
func TestFingerprint(t *testing.T) {
	seen := map[string]string{}
	for _, r := range Rows {
		f := r.Fingerprint()
		if other, ok := seen[f]; ok {
			t.Errorf("rows %s and %s share fingerprint %s", r.Name, other, f)
		}
		seen[f] = r.Name
	}
	r := good()
	words := r
	words.Mechanism, words.Tier, words.Catch = "other words", Full, 5
	if words.Fingerprint() != r.Fingerprint() {
		t.Error("mechanism, tier or bar changed the fingerprint")
	}
	for name, change := range map[string]func(*Row){
		"time":   func(r *Row) { r.Time++ },
		"seed":   func(r *Row) { r.Seed++ },
		"faults": func(r *Row) { r.Faults = []string{"kill"} },
		"paxos":  func(r *Row) { r.Cluster.Paxos = "v2" },
	} {
		c := r
		change(&c)
		if c.Fingerprint() == r.Fingerprint() {
			t.Errorf("a change of %s kept the fingerprint", name)
		}
	}
}
