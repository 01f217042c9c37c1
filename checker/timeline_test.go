package checker

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker/synth"
	"github.com/lockcheck/lockcheck/history"
)

// The timeline says what the mutual-exclusion check derived: which ok
// acquires and renews began or extended which grant, each lease's
// deadline, and how each grant ended.
func TestTimeline(t *testing.T) {
	type grant struct {
		process  int
		ok       int64 // the ok line that began it
		leases   []int64
		deadline int64 // ms
		ended    string
		end      int64 // ms
		release  int64 // the release's invocation line, -1 for none
		lost     int64 // the unknown completion that ended its process, -1 for none
		token    string
	}
	for _, tc := range []struct {
		name     string
		ops      []history.Op
		grants   []grant
		releases int
	}{
		{"acquire, renew, release", []history.Op{
			tlInv(0, 0, 1, history.FAcquire), tlOK(1, 100, 1, history.FAcquire, 3000, "7"),
			tlInv(2, 1000, 1, history.FRenew), tlOK(3, 1100, 1, history.FRenew, 3000, ""),
			tlInv(4, 2000, 1, history.FRelease), tlOK(5, 2100, 1, history.FRelease, 0, ""),
		}, []grant{{process: 1, ok: 1, leases: []int64{1, 3}, deadline: 4000, ended: "release", end: 2000, release: 4, lost: -1, token: "7"}}, 1},
		{"a renew without lease_ms renews for its grant's lease", []history.Op{
			tlInv(0, 0, 1, history.FAcquire), tlOK(1, 100, 1, history.FAcquire, 2000, ""),
			tlInv(2, 1500, 1, history.FRenew), tlOK(3, 1600, 1, history.FRenew, 0, ""),
			tlInv(4, 5000, 2, history.FRead), tlOK(5, 5100, 2, history.FRead, 0, "[]"),
		}, []grant{{process: 1, ok: 1, leases: []int64{1, 3}, deadline: 3500, ended: "expired", end: 3500, release: -1, lost: -1}}, 0},
		{"a grant invoked after the lease ran out begins another", []history.Op{
			tlInv(0, 0, 1, history.FAcquire), tlOK(1, 100, 1, history.FAcquire, 1000, "1"),
			tlInv(2, 1500, 1, history.FAcquire), tlOK(3, 1600, 1, history.FAcquire, 1000, "2"),
		}, []grant{
			{process: 1, ok: 1, leases: []int64{1}, deadline: 1000, ended: "expired", end: 1000, release: -1, lost: -1, token: "1"},
			{process: 1, ok: 3, leases: []int64{3}, deadline: 2500, ended: "end", end: 1600, release: -1, lost: -1, token: "2"},
		}, 0},
		{"the holder's own acquire with a new token extends its grant", []history.Op{
			tlInv(0, 0, 1, history.FAcquire), tlOK(1, 100, 1, history.FAcquire, 1000, "1"),
			tlInv(2, 500, 1, history.FAcquire), tlOK(3, 600, 1, history.FAcquire, 1000, "2"),
		}, []grant{{process: 1, ok: 1, leases: []int64{1, 3}, deadline: 1500, ended: "end", end: 600, release: -1, lost: -1, token: "2"}}, 0},
		{"a renew after the release counts for nothing", []history.Op{
			tlInv(0, 0, 1, history.FAcquire), tlOK(1, 100, 1, history.FAcquire, 1000, ""),
			tlInv(2, 200, 1, history.FRelease), tlOK(3, 300, 1, history.FRelease, 0, ""),
			tlInv(4, 400, 1, history.FRenew), tlOK(5, 500, 1, history.FRenew, 1000, ""),
		}, []grant{{process: 1, ok: 1, leases: []int64{1}, deadline: 1000, ended: "release", end: 200, release: 2, lost: -1}}, 1},
		{"a process that ended with an unknown outcome lost its grant", []history.Op{
			tlInv(0, 0, 1, history.FAcquire), tlOK(1, 100, 1, history.FAcquire, 0, ""),
			tlInv(2, 200, 1, history.FAdd), tlInfo(3, 900, 1, history.FAdd),
			tlInv(4, 1000, 2, history.FAcquire), tlOK(5, 1100, 2, history.FAcquire, 1000, ""),
		}, []grant{
			{process: 1, ok: 1, leases: []int64{1}, deadline: Never, ended: "end", end: 1100, release: -1, lost: 3},
			{process: 2, ok: 5, leases: []int64{5}, deadline: 2000, ended: "end", end: 1100, release: -1, lost: -1},
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := TimelineOf(tc.ops)
			lt := tl.Lock("l")
			if lt == nil {
				t.Fatal("no timeline of lock l")
			}
			if len(lt.Releases) != tc.releases {
				t.Errorf("releases %d, want %d", len(lt.Releases), tc.releases)
			}
			if len(lt.Grants) != len(tc.grants) {
				t.Fatalf("grants %+v, want %d", lt.Grants, len(tc.grants))
			}
			for i, w := range tc.grants {
				g := lt.Grants[i]
				var leases []int64
				for _, j := range g.Leases {
					ls := lt.Leases[j]
					if ls.Grant != i || ls.Renewal != (ls.OK.Index != lt.Began(i).OK.Index) {
						t.Errorf("grant %d: lease %+v", i, ls)
					}
					leases = append(leases, ls.OK.Index)
				}
				deadline := w.deadline
				if deadline != Never {
					deadline *= 1e6
				}
				if g.Process != w.process || lt.Began(i).OK.Index != w.ok || g.Start != lt.Began(i).OK.Time || !slices.Equal(leases, w.leases) || g.Deadline != deadline ||
					g.Ended != w.ended || g.End != w.end*1e6 || string(g.Token) != w.token {
					t.Errorf("grant %d: %+v, want %+v", i, g, w)
				}
				if (g.Release < 0) != (w.release < 0) || (g.Release >= 0 && lt.Releases[g.Release].Invoke.Index != w.release) {
					t.Errorf("grant %d: release %d, want line %d", i, g.Release, w.release)
				}
				if (g.Lost == nil) != (w.lost < 0) || (g.Lost != nil && g.Lost.Index != w.lost) {
					t.Errorf("grant %d: lost %+v, want line %d", i, g.Lost, w.lost)
				}
			}
			if len(lt.Leases) > 0 {
				if g, ok := lt.LeaseAt(lt.Leases[0].OK.Index); !ok || g.OK.Index != lt.Leases[0].OK.Index {
					t.Errorf("LeaseAt(%d) = %+v, %t", lt.Leases[0].OK.Index, g, ok)
				}
				if n := len(lt.Before(lt.Leases[0].OK.Index)); n != 0 {
					t.Errorf("Before the first lease: %d leases", n)
				}
			}
		})
	}
}

// The timeline's grants are the holds the check judged, one for one, on
// histories with failed and unknown acquires, many locks and an overlap.
func TestTimelineGrantsAreTheHolds(t *testing.T) {
	for _, cfg := range []synth.Config{
		{Events: 20000, Clients: 20, Locks: 50, FailRate: 0.05, InfoRate: 0.05, Seed: 3, Anomaly: synth.AnomalyOverlap},
		{Events: 20000, Clients: 30, Locks: 1, FailRate: 0.05, InfoRate: 0.05, Lease: 200 * time.Millisecond, Seed: 4, Nemesis: time.Second},
	} {
		ops := synth.Ops(cfg)
		res, err := CheckValidated(context.Background(), ops, WithTimeline())
		if err != nil {
			t.Fatal(err)
		}
		var grants []Hold
		for _, lt := range res.Timeline.Locks {
			for i, g := range lt.Grants {
				grants = append(grants, Hold{Lock: g.Lock, Process: g.Process, Start: g.Start, End: g.End, Ended: g.Ended, AcquireIdx: int(lt.Began(i).OK.Index)})
			}
		}
		sortHolds(grants)
		if len(res.Holds) == 0 || !slices.Equal(grants, res.Holds) {
			t.Errorf("seed %d: %d grants, %d holds; they differ", cfg.Seed, len(grants), len(res.Holds))
		}
		// Checked without it, the result is the same and has none.
		plain, _ := CheckValidated(context.Background(), ops)
		if plain.Timeline != nil || plain.Verdict != res.Verdict || len(plain.Anomalies) != len(res.Anomalies) {
			t.Errorf("seed %d: without the timeline: %s, %d anomalies, timeline %v", cfg.Seed, plain.Verdict, len(plain.Anomalies), plain.Timeline != nil)
		}
	}
}

func tlInv(idx int64, ms float64, p int, f string) history.Op {
	return history.Op{Index: idx, Time: int64(ms * 1e6), Process: p, Type: history.Invoke, F: f, Lock: "l"}
}

func tlOK(idx int64, ms float64, p int, f string, lease int64, value string) history.Op {
	op := history.Op{Index: idx, Time: int64(ms * 1e6), Process: p, Type: history.OK, F: f, Lock: "l", LeaseMS: lease}
	if value != "" {
		op.Value = json.RawMessage(value)
	}
	return op
}

func tlInfo(idx int64, ms float64, p int, f string) history.Op {
	return history.Op{Index: idx, Time: int64(ms * 1e6), Process: p, Type: history.Info, F: f, Lock: "l"}
}

// BenchmarkTimeline is what a report pays for the timeline: a history in
// memory checked with it and without it (bench/check.sh measures the
// report end to end).
func BenchmarkTimeline(b *testing.B) {
	for _, bc := range benchCases[:3] {
		cfg := bc.cfg
		cfg.Events = 100_000
		ops := synth.Ops(cfg)
		for _, with := range []bool{false, true} {
			name := bc.name + "/without"
			var opts []Option
			if with {
				name, opts = bc.name+"/with", []Option{WithTimeline()}
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					res, err := CheckValidated(context.Background(), ops, opts...)
					if err != nil || res.Verdict != bc.want || (res.Timeline != nil) != with {
						b.Fatalf("verdict %s, timeline %t, err %v", res.Verdict, res.Timeline != nil, err)
					}
				}
			})
		}
	}
}
