package scenario

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/nemesis"
)

// Shard is the K-th of N shares of a selection of rows (`lockcheck matrix
// --shard K/N`): an engine that runs jobs side by side (a GitHub Actions
// matrix, a Kubernetes Indexed Job) runs one share per job, and `matrix
// merge` pools their rates. K counts from 1.
type Shard struct{ K, N int }

// ParseShard reads "K/N", 1 <= K <= N.
func ParseShard(s string) (Shard, error) {
	k, n, ok := strings.Cut(s, "/")
	sh := Shard{K: digits(k), N: digits(n)}
	if !ok || sh.K < 0 || sh.N < 0 {
		return Shard{}, fmt.Errorf("%q: want K/N, the K-th of N shares (1 <= K <= N)", s)
	}
	if sh.N < 1 || sh.K < 1 || sh.K > sh.N {
		return Shard{}, fmt.Errorf("%q: K must be 1 to N and N at least 1", s)
	}
	return sh, nil
}

// digits is s as a number when it is only decimal digits (no sign, no
// space), else -1.
func digits(s string) int {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return -1
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return v
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.K, s.N) }

// Of is the shard's share of rows, in the rows' order.
func (s Shard) Of(rows []Row) []Row { return Shares(rows, s.N)[s.K-1] }

// Shares deals rows into n shares balanced by their expected time
// (Row.Estimate): longest first, rows of equal estimate by name, each into
// the share that ends with the least time once it is added (the first such
// share on a tie). A row on a cluster of its own costs a share that has no
// row of its configuration yet a cluster start too, so that a
// configuration's rows tend to share one cluster. The
// deal depends on the set of rows only, never on their order, so every job
// of a fan-out computes the same shares; each share keeps the rows' order.
// Every row lands in exactly one share; a share may be empty (n above the
// rows).
func Shares(rows []Row, n int) [][]Row {
	// A row's estimate and cluster key, once each: the loop below asks for
	// them n times a row, and a key is built with fmt.
	order := make([]int, len(rows))
	est := make([]time.Duration, len(rows))
	keys := make([]string, len(rows))
	for i, r := range rows {
		order[i], est[i], keys[i] = i, r.Estimate(), r.Cluster.Key()
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(est[b], est[a]), cmp.Compare(rows[a].Name, rows[b].Name))
	})
	bin := make([]int, len(rows))
	load := make([]time.Duration, n)
	clusters := make([]map[string]bool, n)
	cost := func(i, b int) time.Duration {
		if k := keys[i]; k != "" && !clusters[b][k] {
			return est[i] + clusterStart
		}
		return est[i]
	}
	for _, i := range order {
		least := 0
		for b := range load {
			if load[b]+cost(i, b) < load[least]+cost(i, least) {
				least = b
			}
		}
		bin[i] = least
		load[least] += cost(i, least)
		if clusters[least] == nil {
			clusters[least] = map[string]bool{}
		}
		clusters[least][keys[i]] = true
	}
	out := make([][]Row, n)
	for i, r := range rows {
		out[bin[i]] = append(out[bin[i]], r)
	}
	return out
}

// What a run costs besides its own time, for balancing shares only (an
// estimate: a share's order of rows, not a measurement; the figures are
// docs/measurements.md's): keyspace and clients set up, heal, quiet, final
// reads, check and report; a plug-in's processes (a JVM each) started; and,
// for a row whose ring movements must each be dealt, the run's going on
// past its time until they are (up to nemesis.FollowWait, a quarter of it
// on average). A share that runs a row on a cluster of its own starts that
// cluster once.
const (
	runOverhead    = 20 * time.Second
	pluginOverhead = 10 * time.Second
	clusterStart   = 90 * time.Second
)

// Estimate is the time a run of the row is expected to take: its own time
// plus what every run adds around it and what its kind of row adds.
func (r Row) Estimate() time.Duration {
	d := r.Time + runOverhead
	if r.Command != "" {
		d += pluginOverhead
	}
	if (r.Schedule != nil && r.Schedule.DealtInFull()) || (r.Schedule == nil && nemesis.MovesRing(r.Faults)) {
		d += nemesis.FollowWait / 4
	}
	return d
}

// Estimate is the expected time of one run of each row, with a start of
// each cluster of its own they need (what Shares balances).
func Estimate(rows []Row) time.Duration {
	var d time.Duration
	started := map[string]bool{}
	for _, r := range rows {
		d += r.Estimate()
		if k := r.Cluster.Key(); k != "" && !started[k] {
			d += clusterStart
			started[k] = true
		}
	}
	return d
}

// Fingerprint names what a run of the row depends on (recipe or plug-in,
// workload, faults, schedule, cluster, time, interval, seed and the other
// settings; not its verdict, tier or mechanism): a rate recorded with one
// fingerprint was measured on that definition of the row, so that `matrix
// merge` refuses shards that ran another revision's rows.
func (r Row) Fingerprint() string {
	r.Want, r.Unsafe, r.Catch, r.Tier, r.Mechanism, r.Load = "", false, 0, "", "", nil
	b, err := json.Marshal(r)
	if err != nil {
		// A Row is plain data; a field JSON cannot encode is a programming
		// error the tests meet first.
		panic(fmt.Sprintf("row %s: %v", r.Name, err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}
