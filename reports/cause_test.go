package reports

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

func TestLikelyCause(t *testing.T) {
	window := func(kind string, start, end int64, value string) faultView {
		return faultView{FaultWindow: history.FaultWindow{Kind: kind, Start: start, End: end, Value: json.RawMessage(value)}}
	}
	pause3 := window("client-pause", 10, 50, `{"client":3,"process":3,"lock":"l","ms":6000}`)
	for _, tc := range []struct {
		name   string
		a      checker.Anomaly
		faults []faultView
		want   string // a part of the sentence; "" = no cause
	}{
		{"paused holder's stale write", checker.Anomaly{Kind: checker.KindStaleWrite, Start: 20, End: 60, Processes: []int{3, 0}},
			[]faultView{pause3}, "stalled holder: process 3 stood still 6.0 s in its critical section (client-pause, 0.000s – 0.000s), past its lease; its write landed after"},
		{"a lost add's own process paused: the overwriter is not known here", checker.Anomaly{Kind: checker.KindLostAdd, Start: 20, End: 60, Processes: []int{3}},
			[]faultView{pause3}, noFault},
		{"paused holder's late write breaks linearizability", checker.Anomaly{Kind: checker.KindNonLinearizable, Start: 20, End: 60, Processes: []int{3}},
			[]faultView{pause3}, "past its lease; another client acquired the expired lease, and the stalled holder's late write leaves the lock's operations no legal order"},
		{"pause of another process explains nothing", checker.Anomaly{Kind: checker.KindStaleWrite, Start: 20, End: 60, Processes: []int{1, 2}},
			[]faultView{pause3}, ""},
		{"pause outside the span explains nothing", checker.Anomaly{Kind: checker.KindStaleWrite, Start: 60, End: 90, Processes: []int{3}},
			[]faultView{pause3}, ""},
		{"a killed holder's lock held for good", checker.Anomaly{Kind: checker.KindStuckLock, Start: 200, End: 900, Processes: []int{7}},
			[]faultView{window("client-kill", 100, 150, `{"client":2,"in_flight":"hold","lock":"l","process":7,"restart_ms":2000}`)},
			"client 2's process 7 was killed holding the lock at 0.000s (client-kill) and never released l; a fresh process of the client started 2.0 s later as a new owner: a lock with no TTL stays held"},
		{"a killed release's late request", checker.Anomaly{Kind: checker.KindOverlap, Start: 200, End: 300, Processes: []int{7, 3}},
			[]faultView{window("client-kill", 100, 150, `{"client":2,"in_flight":"release","lock":"l","process":7,"restart_ms":500}`)},
			"killed with its release in flight"},
		{"a kill of another process explains no stuck lock", checker.Anomaly{Kind: checker.KindStuckLock, Start: 200, End: 900, Processes: []int{8}},
			[]faultView{window("client-kill", 100, 150, `{"client":2,"in_flight":"hold","lock":"l","process":7,"restart_ms":2000}`)}, ""},
		{"client clock behind", checker.Anomaly{Kind: checker.KindOverlap, Start: 20, End: checker.Never},
			[]faultView{window("client-clock", 0, 100, `{"client":2,"offset":"-12.3s"}`)}, "client 2's clock was -12.3s off (client-clock)"},
		{"client clock ahead", checker.Anomaly{Kind: checker.KindOverlap, Start: 20, End: checker.Never},
			[]faultView{window("client-clock", 0, 100, `{"client":2,"offset":"+12.3s"}`)}, "client 2's clock ran 12.3s ahead (client-clock, --skew-ahead)"},
		{"node clock ahead", checker.Anomaly{Kind: checker.KindOverlap, Start: 20, End: 30},
			[]faultView{window("clock", 0, 100, `{"kind":"bump","offsets":{"n2":"+4s","n1":"-1.5s"}}`)}, "node clocks were moved (n1 -1.5s, n2 +4s): a coordinator whose clock runs ahead expires a TTL lease"},
		{"aimed node clock ahead", checker.Anomaly{Kind: checker.KindOverlap, Start: 20, End: 30},
			[]faultView{window("coord-clock", 0, 100, `{"node":"n2","clients":[1,4],"offset":"+5.432s","lease":"3s","holders":[0]}`)},
			"the lease expired on the server before the holder's deadline: node n2, the coordinator of clients 1, 4, ran 5.4 s ahead (coord-clock), more than a 3s lease has left"},
		{"aimed partition", checker.Anomaly{Kind: checker.KindOverlap, Start: 20, End: 30},
			[]faultView{window("coord-partition", 0, 100, `{"node":"n3","clients":[2],"others":{"n2":[1,4],"n1":[0,3]},"grudge":{}}`)},
			"node n3, the coordinator of client 2, could not reach n1 (clients 0, 3), n2 (clients 1, 4) (coord-partition): a lock that writes or reads at a weak consistency level (ONE)"},
		{"aimed clock over, and its offset, before the anomaly explains nothing", checker.Anomaly{Kind: checker.KindOverlap, Start: 6e9, End: 6e9 + 100},
			[]faultView{window("coord-clock", 0, 100, `{"node":"n2","clients":[1],"offset":"+5s","lease":"3s"}`)}, ""},
		{"aimed clock over, within its offset: still ahead", checker.Anomaly{Kind: checker.KindOverlap, Start: 200, End: 300},
			[]faultView{window("coord-clock", 0, 100, `{"node":"n2","clients":[1],"offset":"+5s","lease":"3s"}`)}, "node n2, the coordinator of client 1, ran 5.0 s ahead"},
		{"a partition: mechanism not known, nothing said", checker.Anomaly{Kind: checker.KindOverlap, Start: 20, End: 30},
			[]faultView{window("partition", 0, 100, `{"grudge":{}}`)}, ""},
		{"a power loss explains a stale token accepted after the nodes came back", checker.Anomaly{Kind: checker.KindStaleWrite, Start: 200, End: 210, Processes: []int{7, 1}},
			[]faultView{window("rack-power-loss", 100, 150, `{"how":"power off","unsynced_bytes":{"n3":100,"n1":4096},"unsynced_files":{"n1":2,"n3":1}}`)},
			"n1, n3 lost power at 0.0 s (rack-power-loss) holding 4196 bytes written and not yet fsynced"},
		{"a power loss explains a token issued again after the nodes came back", checker.Anomaly{Kind: checker.KindTokenOrder, Start: 200, End: 210, Processes: []int{3}},
			[]faultView{window("power-loss", 100, 150, `{"how":"power off","unsynced_bytes":{"n2":8192},"unsynced_files":{"n2":1}}`)},
			"n2 lost power at 0.0 s (power-loss) holding 8192 bytes written and not yet fsynced"},
		{"a token issued again before any power loss: no cause", checker.Anomaly{Kind: checker.KindTokenOrder, Start: 20, End: 30},
			[]faultView{window("power-loss", 100, 150, `{"unsynced_bytes":{"n2":1}}`)}, ""},
		{"a power loss after the anomaly explains nothing", checker.Anomaly{Kind: checker.KindLostAdd, Start: 20, End: 30},
			[]faultView{window("power-loss", 100, 150, `{"unsynced_bytes":{"n1":1}}`)}, ""},
		{"a pause line without its process names nobody", checker.Anomaly{Kind: checker.KindStaleWrite, Start: 20, End: 60},
			[]faultView{window("client-pause", 10, 50, `{"client":3,"lock":"l","ms":6000}`)}, ""},
		{"a client clock line without its client names nobody", checker.Anomaly{Kind: checker.KindOverlap, Start: 20, End: 30},
			[]faultView{window("client-clock", 0, 100, `{"offset":"-12.3s"}`)}, ""},
		{"client 0 and process 0 are named", checker.Anomaly{Kind: checker.KindStaleWrite, Start: 20, End: 60, Processes: []int{0}},
			[]faultView{window("client-pause", 10, 50, `{"client":0,"lock":"l","ms":3000,"process":0}`)}, "process 0 stood still 3.0 s"},
		{"two grants across a dc-partition name the data centres", checker.Anomaly{Kind: checker.KindDuplicate, Start: 20, End: 30},
			[]faultView{window("dc-partition", 10, 50, `{"dcs":{"dc2":["n3","n4"],"dc1":["n1","n2"]},"grudge":{"n3":["n1","n2"],"n4":["n1","n2"]},"mode":"one-way"}`)},
			"data centres dc1 (n1, n2) and dc2 (n3, n4) were cut apart (dc-partition, one way): an LWT at LOCAL_SERIAL"},
		{"a slow add under a dc-partition is not blamed on LOCAL_SERIAL", checker.Anomaly{Kind: checker.KindStaleWrite, Start: 20, End: 30},
			[]faultView{window("dc-partition", 10, 50, `{"dcs":{"dc2":["n3","n4"],"dc1":["n1","n2"]},"grudge":{},"mode":"both"}`)}, ""},
		{"two grants during a join name the range movement", checker.Anomaly{Kind: checker.KindOverlap, Start: 20, End: 30},
			[]faultView{window("join", 10, 50, `{"how":"bootstrap, then decommission","node":"n5","ring":{"n1":"UN"}}`)},
			"ranges moved while the lock was taken: n5 (join, bootstrap, then decommission)"},
		{"a duplicate is not explained by a pause", checker.Anomaly{Kind: checker.KindDuplicate, Start: 20, End: 30, Processes: []int{3}},
			[]faultView{pause3}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := likelyCause(tc.a, tc.faults, nil)
			if tc.want == "" {
				tc.want = noFault
			}
			if tc.want == noFault && got != noFault || !strings.Contains(got, tc.want) {
				t.Errorf("likelyCause = %q, want it to contain %q", got, tc.want)
			}
		})
	}
}

// numbered is a meta line of a run of clients whose processes are numbered
// as processes says (history.ConfigProcesses; "": in the order needed).
func numbered(clients int, processes string) *history.Meta {
	m := &history.Meta{Config: map[string]string{"clients": strconv.Itoa(clients)}}
	if processes != "" {
		m.Config[history.ConfigProcesses] = processes
	}
	return m
}

// A coordinator cut is named for an anomaly only when it served one of its
// processes, or when one of them is a replacement whose client the history
// does not record.
func TestAimedWindowNamedForItsClients(t *testing.T) {
	cut := []faultView{{FaultWindow: history.FaultWindow{Kind: history.KindCoordPartition, Start: 0, End: 100,
		Value: json.RawMessage(`{"node":"n3","clients":[2],"others":{"n2":[1,4],"n1":[0,3]},"grudge":{}}`)}}}
	five := &causeTimeline{meta: numbered(5, "")}
	perClient := &causeTimeline{meta: numbered(5, history.ProcessesPerClient)}
	for _, tc := range []struct {
		name      string
		processes []int
		named     bool
		tl        *causeTimeline
	}{
		{"client 2 is pinned to the cut node", []int{2, 0}, true, five},
		{"clients 0 and 1 are pinned elsewhere", []int{0, 1}, false, five},
		{"process 7 is a replacement of a client not said: possible", []int{0, 7}, true, five},
		{"process 7 is client 2's replacement", []int{0, 7}, true, perClient},
		{"process 6 is client 1's replacement, pinned elsewhere", []int{0, 6}, false, perClient},
	} {
		a := checker.Anomaly{Kind: checker.KindOverlap, Start: 20, End: 30, Processes: tc.processes}
		got := likelyCause(a, cut, tc.tl)
		if named := strings.Contains(got, "node n3, the coordinator of client 2"); named != tc.named {
			t.Errorf("%s: likelyCause = %q, named %t, want %t", tc.name, got, named, tc.named)
		}
	}
}

// The cause reaches the page: an overlap under a client clock skew.
func TestReportShowsLikelyCause(t *testing.T) {
	ops := overlapping()
	// Replace the partition window by a client clock skew.
	ops[1] = history.Op{Process: -1, Type: history.Info, F: "start-client-clock", Value: json.RawMessage(`{"client":1,"offset":"-7s"}`)}
	ops[8] = history.Op{Process: -1, Type: history.Info, F: "stop-client-clock", Value: json.RawMessage(`{"client":1}`)}
	for i := range ops {
		ops[i].Time = int64(i) * 10e6
	}
	dir := filepath.Join(t.TempDir(), "store", "t", "20260101T000000")
	writeHistory(t, dir, ops)
	if _, err := Build(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "likely cause: client 1&#39;s clock was -7s off (client-clock)") {
		t.Error("report lacks the likely cause of the overlap")
	}
}

// ms is a history time in milliseconds.
func ms(v float64) int64 { return int64(v * 1e6) }

// Causes derived from the timeline: an overlap that began before the
// first holder's own deadline is the server letting the lease go early,
// with the server-side fault in effect as its mechanism or none; a lost add
// names the write that overwrote it.
func TestCauseFromTimeline(t *testing.T) {
	op := func(idx int64, at float64, p int, typ history.Type, f string, mods ...func(*history.Op)) history.Op {
		o := history.Op{Index: idx, Time: ms(at), Process: p, Type: typ, F: f, Lock: "l"}
		for _, m := range mods {
			m(&o)
		}
		return o
	}
	lease := func(v int64) func(*history.Op) { return func(o *history.Op) { o.LeaseMS = v } }
	value := func(v string) func(*history.Op) { return func(o *history.Op) { o.Value = json.RawMessage(v) } }
	// Process 1 holds from 0 with a 3 s lease counted from its invocation
	// (deadline 3.0 s); process 2 is granted at 2.2 s, 0.8 s before it.
	overlap := checker.Anomaly{Kind: checker.KindOverlap, Lock: "l", Processes: []int{1, 2}, Start: ms(2200), End: ms(3000),
		Ops: []history.Op{
			op(1, 0, 1, history.Invoke, history.FAcquire), op(2, 400, 1, history.OK, history.FAcquire, lease(3000)),
			op(5, 2100, 2, history.Invoke, history.FAcquire), op(6, 2200, 2, history.OK, history.FAcquire, lease(3000)),
		}}
	// A leader whose heartbeat at 1 s reset its lease to 4 s: process 2's
	// grant at 3.5 s is still early, and the table's end is the renew.
	renewed := checker.Anomaly{Kind: checker.KindOverlap, Lock: "l", Processes: []int{1, 2}, Start: ms(3500), End: ms(4000),
		Ops: []history.Op{
			op(1, 0, 1, history.Invoke, history.FAcquire), op(2, 400, 1, history.OK, history.FAcquire, lease(3000)),
			op(3, 1000, 1, history.Invoke, history.FRenew), op(4, 1200, 1, history.OK, history.FRenew, lease(3000)),
			op(5, 3400, 2, history.Invoke, history.FAcquire), op(6, 3500, 2, history.OK, history.FAcquire, lease(3000)),
		}}
	// The same heartbeat answered without lease_ms: the checker renews it
	// for the acquire's lease.
	renewedNoLease := renewed
	renewedNoLease.Ops = slices.Clone(renewed.Ops)
	renewedNoLease.Ops[3].LeaseMS = 0
	coordClock := faultView{FaultWindow: history.FaultWindow{Kind: history.KindCoordClock, Start: ms(1000), End: ms(5000),
		Value: json.RawMessage(`{"node":"n2","clients":[2],"offset":"+4s","lease":"3s"}`)}}
	// Process 1's renew at 1 s has an unknown outcome; its client goes on
	// as process 6 (of 5 clients, numbered per client) and is granted at
	// 2.2 s, inside process 1's lease.
	replaced := checker.Anomaly{Kind: checker.KindOverlap, Lock: "l", Processes: []int{1, 6}, Start: ms(2200), End: ms(3000),
		Ops: []history.Op{
			op(1, 0, 1, history.Invoke, history.FAcquire), op(2, 400, 1, history.OK, history.FAcquire, lease(3000)),
			op(3, 1000, 1, history.Invoke, history.FRenew), op(4, 1500, 1, history.Info, history.FRenew),
			op(5, 2100, 6, history.Invoke, history.FAcquire), op(6, 2200, 6, history.OK, history.FAcquire, lease(3000)),
		}}
	// The same, the client's third process granted (6 came and went).
	replacedLater := replaced
	replacedLater.Processes = []int{1, 11}
	replacedLater.Ops = slices.Clone(replaced.Ops)
	replacedLater.Ops[4].Process, replacedLater.Ops[5].Process = 11, 11
	// The same with a lock that grants no lease: the hold lasts.
	leaseless := replaced
	leaseless.Ops = slices.Clone(replaced.Ops)
	leaseless.Ops[1].LeaseMS, leaseless.Ops[5].LeaseMS = 0, 0
	leaselessOther := leaseless
	leaselessOther.Processes = []int{1, 2}
	leaselessOther.Ops = slices.Clone(leaseless.Ops)
	leaselessOther.Ops[4].Process, leaselessOther.Ops[5].Process = 2, 2
	// Process 1 is granted at 3 s (deadline 6 s), process 2 at 4 s: after a
	// coord-clock window that ended at 2.5 s, within its 4 s offset.
	late := checker.Anomaly{Kind: checker.KindOverlap, Lock: "l", Processes: []int{1, 2}, Start: ms(4000), End: ms(4100),
		Ops: []history.Op{
			op(1, 3000, 1, history.Invoke, history.FAcquire), op(2, 3100, 1, history.OK, history.FAcquire, lease(3000)),
			op(5, 3900, 2, history.Invoke, history.FAcquire), op(6, 4000, 2, history.OK, history.FAcquire, lease(3000)),
		}}
	clockWindow := func(offset string) faultView {
		return faultView{FaultWindow: history.FaultWindow{Kind: history.KindCoordClock, Start: ms(500), End: ms(2500),
			Value: json.RawMessage(`{"node":"n2","clients":[2],"offset":"` + offset + `","lease":"3s"}`)}}
	}
	// n1 serves clients 0 and 3: not processes 1 and 2 of overlap, when
	// they are their clients' first processes (5 clients).
	cutN1 := faultView{FaultWindow: history.FaultWindow{Kind: history.KindCoordPartition, Start: ms(500), End: ms(3000),
		Value: json.RawMessage(`{"node":"n1","clients":[0,3],"others":{"n2":[1,4],"n3":[2]},"grudge":{}}`)}}
	cutN2 := faultView{FaultWindow: history.FaultWindow{Kind: history.KindCoordPartition, Start: ms(500), End: ms(3000),
		Value: json.RawMessage(`{"node":"n2","clients":[1,4],"others":{"n1":[0,3],"n3":[2]},"grudge":{}}`)}}
	// Everything n2 (clients 1, 4) sends is 2.8 s late; n3 (client 2) in
	// the other.
	lateN2 := faultView{FaultWindow: history.FaultWindow{Kind: history.KindCoordNetDelay, Start: ms(500), End: ms(4000),
		Value: json.RawMessage(`{"clients":[1,4],"links":{"n2":["clients","n1","n3"]},"mode":"coord","node":"n2","shape":{"delay_ms":2800,"jitter_ms":40}}`)}}
	lateN3 := faultView{FaultWindow: history.FaultWindow{Kind: history.KindCoordNetDelay, Start: ms(500), End: ms(4000),
		Value: json.RawMessage(`{"clients":[2],"links":{"n3":["clients","n1","n2"]},"mode":"coord","node":"n3","shape":{"delay_ms":2800}}`)}}
	clockN1 := faultView{FaultWindow: history.FaultWindow{Kind: history.KindCoordClock, Start: ms(500), End: ms(3000),
		Value: json.RawMessage(`{"node":"n1","clients":[0,3],"offset":"+4s","lease":"3s"}`)}}
	pause1 := faultView{FaultWindow: history.FaultWindow{Kind: history.KindClientPause, Start: ms(500), End: ms(6000), Starts: 1,
		Value: json.RawMessage(`{"client":1,"process":1,"lock":"l","ms":5500}`)}}
	heartbeatFail := newCauseTimeline(append(slices.Clone(renewed.Ops),
		op(7, 3600, 1, history.Invoke, history.FRenew), op(8, 3700, 1, history.Fail, history.FRenew, func(o *history.Op) { o.Error = "not held" })), nil, nil)
	// Process 4's add of 7 is acknowledged at 2 s; process 5 read before
	// (its add invoked at 1 s) and wrote after (ok at 3 s): 7 is lost, 9 kept.
	lostOps := []history.Op{
		op(10, 1000, 5, history.Invoke, history.FAdd, value("9")),
		op(11, 1500, 4, history.Invoke, history.FAdd, value("7")), op(12, 2000, 4, history.OK, history.FAdd, value("7")),
		op(13, 2500, 6, history.Invoke, history.FAdd, value("8")), op(14, 2600, 6, history.OK, history.FAdd, value("8")),
		op(15, 3000, 5, history.OK, history.FAdd, value("9")),
		op(16, 4000, 9, history.Invoke, history.FRead), op(17, 4100, 9, history.OK, history.FRead, value("[8,9]")),
	}
	lost := checker.Anomaly{Kind: checker.KindLostAdd, Lock: "l", Processes: []int{4, 9}, Start: ms(1500), End: ms(4100),
		Ops: []history.Op{lostOps[1], lostOps[2], lostOps[6], lostOps[7]}}
	// The same adds, and every node loses power at 3.5 s: the read lacks 9
	// as well as 7.
	lostBothOps := append(slices.Clone(lostOps[:6]),
		op(16, 4000, 9, history.Invoke, history.FRead), op(17, 4100, 9, history.OK, history.FRead, value("[8]")))
	lostBoth := checker.Anomaly{Kind: checker.KindLostAdd, Lock: "l", Processes: []int{4, 9}, Start: ms(1500), End: ms(4100),
		Ops: []history.Op{lostBothOps[1], lostBothOps[2], lostBothOps[6], lostBothOps[7]}}
	power := faultView{FaultWindow: history.FaultWindow{Kind: history.KindRackPowerLoss, Start: ms(3500), End: ms(3900),
		Value: json.RawMessage(`{"how":"power off","unsynced_bytes":{"n1":4096,"n2":0,"n3":0}}`)}}
	// Process 1 holds to 3 s and sends an add at 2.5 s that returns at
	// 4.2 s; process 2 is granted at 3.5 s.
	staleOps := func(addAt float64) []history.Op {
		return []history.Op{
			op(1, 0, 1, history.Invoke, history.FAcquire), op(2, 100, 1, history.OK, history.FAcquire, lease(3000)),
			op(3, 2000, 2, history.Invoke, history.FAcquire),
			op(4, addAt, 1, history.Invoke, history.FAdd, value("5")),
			op(5, 3500, 2, history.OK, history.FAcquire, lease(3000)),
			op(6, 4200, 1, history.OK, history.FAdd, value("5")),
		}
	}
	stale := func(addAt float64) checker.Anomaly {
		return checker.Anomaly{Kind: checker.KindStaleWrite, Lock: "l", Processes: []int{1, 2}, Start: ms(3000), End: ms(4200), Ops: staleOps(addAt)}
	}
	cut := faultView{FaultWindow: history.FaultWindow{Kind: "partition", Start: ms(2000), End: ms(5000)}}
	slowN2 := faultView{FaultWindow: history.FaultWindow{Kind: history.KindNetDelay, Start: ms(2000), End: ms(5000),
		Value: json.RawMessage(`{"links":{"n2":["n1","n3"]},"mode":"nodes","shape":{"delay_ms":1500,"jitter_ms":40}}`)}}
	// Aimed at n1's clients (0 and 3): not client 1's nor client 2's.
	slowCoordN1 := faultView{FaultWindow: history.FaultWindow{Kind: history.KindCoordNetDelay, Start: ms(2000), End: ms(5000),
		Value: json.RawMessage(`{"clients":[0,3],"links":{"n1":["clients","n2","n3"]},"mode":"coord","node":"n1","shape":{"delay_ms":1500}}`)}}
	// A stall of n2's JVM, which coordinates clients 1 and 4, from 2.6 s
	// to 6.4 s; and one of n3's, which coordinates neither writer.
	stallN2 := faultView{FaultWindow: history.FaultWindow{Kind: history.KindCoordGCStall, Start: ms(2600), End: ms(6400), Nodes: []string{"n2"},
		Value: json.RawMessage(`{"clients":[1,4],"ms":3800}`)}}
	stallN2Early := stallN2
	stallN2Early.Start, stallN2Early.End = ms(1000), ms(4800)
	stallN3 := faultView{FaultWindow: history.FaultWindow{Kind: history.KindCoordGCStall, Start: ms(2600), End: ms(6400), Nodes: []string{"n3"},
		Value: json.RawMessage(`{"clients":[2],"ms":3800}`)}}
	starvedN2 := faultView{FaultWindow: history.FaultWindow{Kind: history.KindCoordSlowNode, Start: ms(2000), End: ms(6000), Nodes: []string{"n2"},
		Value: json.RawMessage(`{"clients":[1,4],"cpu":0.02,"node":"n2"}`)}}
	skew := func(client int, offset string, from float64) faultView {
		return faultView{FaultWindow: history.FaultWindow{Kind: history.KindClientClock, Start: ms(from), End: ms(9000),
			Value: json.RawMessage(fmt.Sprintf(`{"client":%d,"offset":%q}`, client, offset))}}
	}
	// Process 1 holds to 3 s, process 2 is granted at 3.5 s, process 1
	// releases from relAt, answered ok 100 ms later.
	lapsedOps := func(relAt float64) []history.Op {
		return []history.Op{
			op(1, 0, 1, history.Invoke, history.FAcquire), op(2, 100, 1, history.OK, history.FAcquire, lease(3000)),
			op(3, 2000, 2, history.Invoke, history.FAcquire), op(4, 3500, 2, history.OK, history.FAcquire, lease(3000)),
			op(5, relAt, 1, history.Invoke, history.FRelease), op(6, relAt+100, 1, history.OK, history.FRelease),
		}
	}
	lapsed := func(relAt float64) checker.Anomaly {
		ops := lapsedOps(relAt)
		return checker.Anomaly{Kind: checker.KindNonLinearizable, Lock: "l", Processes: []int{1, 2}, Start: ms(3300), End: ms(relAt + 100),
			Ops: ops[2:]}
	}
	// An overlap's operations as the linearizability check reports them.
	inPiece := func(a checker.Anomaly) checker.Anomaly {
		a.Kind, a.Check, a.Start, a.End = checker.KindNonLinearizable, checker.CheckLinear, a.Ops[0].Time, a.Ops[len(a.Ops)-1].Time
		return a
	}
	pause5 := faultView{FaultWindow: history.FaultWindow{Kind: history.KindClientPause, Start: ms(1100), End: ms(2900), Starts: 1,
		Value: json.RawMessage(`{"client":0,"process":5,"lock":"l","ms":1800}`)}}
	// Process 1, holding l with no lease, ends with an add unknown at 4.2 s.
	stuck := checker.Anomaly{Kind: checker.KindStuckLock, Lock: "l", Processes: []int{1}, Start: ms(4200), End: ms(9000),
		Ops: []history.Op{op(1, 0, 1, history.Invoke, history.FAcquire), op(2, 400, 1, history.OK, history.FAcquire),
			op(3, 2500, 1, history.Invoke, history.FAdd), op(4, 4200, 1, history.Info, history.FAdd)}}
	stuckErr := stuck
	stuckErr.Ops = slices.Clone(stuck.Ops)
	stuckErr.Ops[3].Error = "server replied 503"
	stuckBare := stuck
	stuckBare.Ops = []history.Op{stuck.Ops[0], stuck.Ops[1], stuck.Ops[3]}
	for _, tc := range []struct {
		name   string
		a      checker.Anomaly
		faults []faultView
		tl     *causeTimeline
		want   []string
		not    []string
	}{
		{"one client's replacement granted in its predecessor's lease", replaced, nil,
			newCauseTimeline(replaced.Ops, numbered(5, history.ProcessesPerClient), nil),
			[]string{"process 6 is client 1's replacement for process 1, whose renew had an unknown outcome at 1.500s",
				"If the lock tells the two processes apart: the lock let process 1's lease go before its own deadline"}, nil},
		{"a client's later process, not its next", replacedLater, nil,
			newCauseTimeline(replacedLater.Ops, numbered(5, history.ProcessesPerClient), nil),
			[]string{"process 11 is a later process of client 1 than process 1, whose renew", "counts until its lease ends"}, []string{"replacement"}},
		{"a grant with no lease left by an unknown outcome holds to the end", leaseless, nil,
			newCauseTimeline(leaseless.Ops, numbered(5, history.ProcessesPerClient), nil),
			[]string{"an abandoned hold: process 1's renew had an unknown outcome at 1.500s while it held a grant with no lease",
				"every later grant overlaps it (process 6's here)"}, []string{"one client", noFault}},
		{"an abandoned hold whoever is granted next", leaselessOther, nil, newCauseTimeline(leaselessOther.Ops, nil, nil),
			[]string{"an abandoned hold: process 1's renew", "(process 2's here)"}, []string{"one client", noFault}},
		{"a replacement whose client the history does not say is another client", replaced, nil,
			newCauseTimeline(replaced.Ops, numbered(5, ""), nil),
			[]string{"the lock let process 1's lease go before its own deadline"}, []string{"replacement", "one client"}},
		{"two clients are not one", overlap, nil, newCauseTimeline(overlap.Ops, numbered(5, history.ProcessesPerClient), nil),
			[]string{"the lock let process 1's lease go"}, []string{"one client"}},
		{"early expiry with no fault", overlap, nil, nil,
			[]string{"the lock let process 1's lease go before its own deadline", "0.8 s before process 1's deadline (3.000s", noFault}, nil},
		{"early expiry is not a stalled holder", overlap, []faultView{pause1}, nil,
			[]string{"before its own deadline", noFault}, []string{"stalled", "stood still"}},
		{"early expiry under a skewed coordinator", overlap, []faultView{coordClock}, nil,
			[]string{"skewed coordinator: node n2, the coordinator of client 2, ran 4.0 s ahead"}, []string{noFault}},
		{"a coordinator cut elsewhere is not named", overlap, []faultView{cutN1}, newCauseTimeline(overlap.Ops, numbered(5, ""), nil),
			[]string{"before its own deadline", noFault}, []string{"cut coordinator"}},
		{"a coordinator cut elsewhere, a replacement process: possible", overlap, []faultView{cutN1}, newCauseTimeline(overlap.Ops, numbered(2, ""), nil),
			[]string{"cut coordinator: node n1"}, []string{noFault}},
		{"the holder's coordinator slowed past its renewals", overlap, []faultView{lateN2}, newCauseTimeline(overlap.Ops, numbered(5, ""), nil),
			[]string{"slowed coordinator: everything n2, the coordinator of clients 1, 4, sent was 2800 ms ±40 ms late (coord-net-delay, 0.500s – 4.000s)",
				"its own reckoning"}, []string{noFault}},
		{"a coordinator slowed for others is not the holder's", overlap, []faultView{lateN3}, newCauseTimeline(overlap.Ops, numbered(5, ""), nil),
			[]string{noFault}, []string{"slowed coordinator"}},
		{"the holder's coordinator stalled", overlap, []faultView{stallN2Early}, newCauseTimeline(overlap.Ops, numbered(5, ""), nil),
			[]string{"slowed coordinator: node n2, the coordinator of clients 1, 4, stood still 3800 ms"}, []string{noFault}},
		{"the cut coordinator of one of them", overlap, []faultView{cutN2}, newCauseTimeline(overlap.Ops, numbered(5, ""), nil),
			[]string{"cut coordinator: node n2"}, []string{noFault}},
		{"the skewed coordinator of one of them", overlap, []faultView{coordClock}, newCauseTimeline(overlap.Ops, numbered(5, ""), nil),
			[]string{"skewed coordinator: node n2"}, []string{noFault}},
		{"a skewed coordinator elsewhere is not named", overlap, []faultView{clockN1}, newCauseTimeline(overlap.Ops, numbered(5, ""), nil),
			[]string{noFault}, []string{"skewed coordinator"}},
		{"a skewed coordinator acts ahead after its reset", late, []faultView{clockWindow("+4s")}, nil,
			[]string{"skewed coordinator: node n2", "1.5 s before this grant", "monotonic"}, []string{noFault}},
		{"a skew reset longer ago than its offset", late, []faultView{clockWindow("+400ms")}, nil,
			[]string{noFault}, []string{"skewed coordinator"}},
		{"a renewed lease sets the deadline", renewed, nil, nil,
			[]string{"0.5 s before process 1's deadline (4.000s: its renew invoked at 1.000s plus its 3000 ms lease)"}, nil},
		{"a renew without lease_ms renews for its grant's lease", renewedNoLease, nil, nil,
			[]string{"0.5 s before process 1's deadline (4.000s: its renew invoked at 1.000s plus its 3000 ms lease)"}, nil},
		{"a failed heartbeat", renewed, nil, heartbeatFail,
			[]string{"failed heartbeat: process 1's renew at 3.700s came back fail (not held)"}, []string{noFault}},
		{"an acquire after the release is no heartbeat", renewed, nil, newCauseTimeline(append(slices.Clone(renewed.Ops),
			op(7, 3600, 1, history.Invoke, history.FRelease), op(8, 3650, 1, history.OK, history.FRelease),
			op(9, 3700, 1, history.Invoke, history.FAcquire), op(10, 3800, 1, history.Fail, history.FAcquire)), nil, nil),
			[]string{noFault}, []string{"heartbeat"}},
		{"a lost add names its overwriter", lost, nil, newCauseTimeline(lostOps, nil, nil),
			[]string{"overwritten by process 5's add of 9 (invoked at 1.000s, before this add was acknowledged, and ok at 3.000s, after it)"}, []string{"process 6"}},
		{"its overwriter stalled", lost, []faultView{pause5}, newCauseTimeline(lostOps, nil, nil),
			[]string{"stalled holder: process 5 stood still 1.8 s (client-pause, 1.100s – 2.900s)"}, nil},
		{"a write outlived its lease under a partition", stale(2500), []faultView{cut}, nil,
			[]string{"a write outlived its lease: process 1's add was invoked at 2.500s, inside its lease (to 3.000s), and acknowledged at 4.200s, " +
				"1.2 s past it and after process 2 was granted the lock at 3.500s", "it took 1.7 s, with these windows open during it: partition (2.000s – 5.000s)"}, []string{noFault}},
		{"a write delayed on a node's link", stale(2500), []faultView{slowN2}, nil,
			[]string{"a write outlived its lease: the add sent at 2.500s was delayed 1500 ms (±40 ms) on n2's links to n1, n3 (net-delay, 2.000s – 5.000s), " +
				"inside process 1's lease (to 3.000s), and was acknowledged after the next grant (process 2's, at 3.500s), at 4.200s",
				"the write may have reached a quorum before that grant",
				"net-delay (2.000s – 5.000s: +1500 ms ±40 ms on n2's links to n1, n3)"}, []string{noFault, "applied after"}},
		// The slowed coordinator is a replica too: its answers to the
		// others' coordinators wait as well.
		{"a coordinator slowed for other clients slows their quorums too", stale(2500), []faultView{slowCoordN1}, newCauseTimeline(stale(2500).Ops, numbered(5, ""), nil),
			[]string{"the add sent at 2.500s was delayed 1500 ms on n1's links to the clients, n2, n3 (coord-net-delay"}, []string{noFault}},
		{"a write held in its coordinator's stalled JVM", stale(2500), []faultView{stallN2}, newCauseTimeline(stale(2500).Ops, numbered(5, ""), nil),
			[]string{"a write outlived its lease: the add sent at 2.500s was held 3800 ms in n2's stalled JVM (n2 coordinates clients 1, 4; " +
				"coord-gc-stall, 2.600s – 6.400s), inside process 1's lease (to 3.000s), and applied after the next grant (process 2's, at 3.500s)"},
			[]string{noFault}},
		{"a write through its starved coordinator", stale(2500), []faultView{starvedN2}, newCauseTimeline(stale(2500).Ops, numbered(5, ""), nil),
			[]string{"the add sent at 2.500s went through n2, starved to 2 % of a core (n2 coordinates clients 1, 4; coord-slow-node"}, []string{noFault}},
		{"a stall of another client's coordinator does not lead", stale(2500), []faultView{stallN3}, newCauseTimeline(stale(2500).Ops, numbered(5, ""), nil),
			[]string{"process 1's add was invoked at 2.500s"}, []string{"held 3800 ms"}},
		{"a stall whose writer's client is unknown does not lead", stale(2500), []faultView{stallN2}, nil,
			[]string{"process 1's add was invoked at 2.500s"}, []string{"held 3800 ms"}},
		{"a write outlived its lease, no window", stale(2500), nil, nil,
			[]string{"a write outlived its lease", "no fault window open (a slow request)"}, []string{noFault}},
		{"a write sent after the lease did not outlive it", stale(3100), []faultView{cut}, nil,
			[]string{noFault}, []string{"outlived"}},
		// Process 2 holds to 3 s; process 1 is granted at 2.2 s and writes
		// from 2.5 s to 4.2 s, past its own lease (to 4.2 s less a bit).
		{"a write by a holder granted inside the other's lease", checker.Anomaly{Kind: checker.KindStaleWrite, Lock: "l", Processes: []int{1, 2}, Start: ms(2500), End: ms(4200),
			Ops: []history.Op{
				op(1, 0, 2, history.Invoke, history.FAcquire), op(2, 50, 2, history.OK, history.FAcquire, lease(3000)),
				op(3, 1000, 1, history.Invoke, history.FAcquire), op(4, 2200, 1, history.OK, history.FAcquire, lease(3000)),
				op(5, 2500, 1, history.Invoke, history.FAdd, value("5")), op(6, 4200, 1, history.OK, history.FAdd, value("5")),
			}}, nil, nil,
			[]string{"the lock let process 2's lease go before its own deadline: process 1 was granted the lock at 2.200s, 0.8 s before"}, []string{"outlived"}},
		{"a write landing in no later term did not outlive it", checker.Anomaly{Kind: checker.KindStaleWrite, Lock: "l", Processes: []int{1, 2}, Start: ms(3000), End: ms(4200),
			Ops: []history.Op{
				op(1, 0, 2, history.Invoke, history.FAcquire), op(2, 50, 2, history.OK, history.FAcquire, lease(3000)),
				op(3, 60, 1, history.Invoke, history.FAcquire), op(4, 100, 1, history.OK, history.FAcquire, lease(3000)),
				op(5, 2500, 1, history.Invoke, history.FAdd, value("5")), op(6, 4200, 1, history.OK, history.FAdd, value("5")),
			}}, []faultView{cut}, nil,
			[]string{noFault}, []string{"outlived"}},
		{"early expiry under a client clock behind", overlap, []faultView{skew(2, "-7s", 1000)}, newCauseTimeline(overlap.Ops, numbered(5, ""), nil),
			[]string{"before its own deadline", "skewed client: client 2's clock ran 7s behind (client-clock, 1.000s – 9.000s)"}, []string{noFault}},
		{"a client clock skewed elsewhere is not named", overlap, []faultView{skew(0, "-7s", 1000)}, newCauseTimeline(overlap.Ops, numbered(5, ""), nil),
			[]string{"before its own deadline", noFault}, []string{"skewed client", "client 0"}},
		{"a client clock skewed after the overlap began is not named", overlap, []faultView{skew(2, "-7s", 2500)}, newCauseTimeline(overlap.Ops, numbered(5, ""), nil),
			[]string{noFault}, []string{"skewed client", "client-clock"}},
		{"a client clock skewed after a lost add was acknowledged is not named", lost, []faultView{skew(4, "-7s", 2500)}, newCauseTimeline(lostOps, numbered(5, ""), nil),
			[]string{"overwritten by process 5's add of 9"}, []string{"client-clock"}},
		{"a lost add with no overwriter", lost, nil, newCauseTimeline(lostOps[1:3], nil, nil), []string{noFault}, nil},
		// Every replica lost power after both adds: the later read lacks the
		// overwriter's element too, so the power loss is the cause, not it.
		{"an overwriter lost as well yields to a power loss", lostBoth, []faultView{power}, newCauseTimeline(lostBothOps, nil, nil),
			[]string{"lost power at 3.5 s"}, []string{"overwritten by", noFault}},
		{"an overwriter lost as well, nothing else", lostBoth, nil, newCauseTimeline(lostBothOps, nil, nil),
			[]string{"overwritten by process 5's add of 9"}, []string{noFault}},
		// Process 1's lease ran out at 3 s, process 2 was granted at 3.5 s,
		// and process 1's release from 4 s is answered ok: the piece (from
		// 3.6 s) holds no grant of process 1's, the timeline does.
		{"a release answered ok for a lapsed hold", lapsed(4000), []faultView{cut}, newCauseTimeline(lapsedOps(4000), nil, nil),
			[]string{"a release answered ok for a hold that had run out: process 1's lease ran out at 3.000s (granted at 0.100s), process 2 " +
				"was granted the lock at 3.500s, and process 1's release, invoked at 4.000s, was answered ok at 4.100s",
				"windows open while process 1 held it: partition (2.000s – 5.000s)"}, []string{noFault}},
		{"a release sent before the other's grant may precede it", lapsed(3400), nil, newCauseTimeline(lapsedOps(3400), nil, nil),
			[]string{noFault}, []string{"release answered ok"}},
		// Process 2's acquire (2.0-3.5 s, a 1 s lease) can take effect
		// before process 1's slow grant (0-5.0 s) and end before it: its
		// grant came after process 1's lease ran out (3 s from 0) only in
		// time, not in order, so process 1's release at 6 s may be legal.
		{"a release after a grant that may have come first", checker.Anomaly{Kind: checker.KindNonLinearizable, Lock: "l", Processes: []int{1, 2},
			Start: ms(5500), End: ms(6100)}, nil, newCauseTimeline([]history.Op{
			op(1, 0, 1, history.Invoke, history.FAcquire), op(2, 2000, 2, history.Invoke, history.FAcquire),
			op(3, 3500, 2, history.OK, history.FAcquire, lease(1000)), op(4, 5000, 1, history.OK, history.FAcquire, lease(3000)),
			op(5, 6000, 1, history.Invoke, history.FRelease), op(6, 6100, 1, history.OK, history.FRelease)}, nil, nil),
			[]string{noFault}, []string{"release answered ok"}},
		// Process 2's acquire (0.1-2.0 s, 500 ms) can go first and end
		// before process 1's (0-1.0 s, 10 s) takes effect: no two owners.
		{"a grant that may precede the other's is no second owner", checker.Anomaly{Kind: checker.KindNonLinearizable, Lock: "l", Processes: []int{1, 2},
			Start: 0, End: ms(2000)}, nil, newCauseTimeline([]history.Op{
			op(1, 0, 1, history.Invoke, history.FAcquire), op(2, 100, 2, history.Invoke, history.FAcquire),
			op(3, 1000, 1, history.OK, history.FAcquire, lease(10000)), op(4, 2000, 2, history.OK, history.FAcquire, lease(500))}, nil, nil),
			[]string{noFault}, []string{"two owners"}},
		{"a piece with two owners reads as their overlap", inPiece(overlap), nil, newCauseTimeline(overlap.Ops, nil, nil),
			[]string{"two owners at once: process 2 was granted the lock at 2.200s, inside process 1's lease (granted at 0.400s, to 3.000s), " +
				"which process 1 had not released; of that overlap: the lock let process 1's lease go before its own deadline"}, nil},
		{"a piece whose first owner had asked to release", inPiece(overlap), nil, newCauseTimeline(append(slices.Clone(overlap.Ops[:2]),
			op(3, 2000, 1, history.Invoke, history.FRelease), overlap.Ops[2], overlap.Ops[3]), nil, nil),
			[]string{noFault}, []string{"two owners"}},
		{"a late write nobody else's term received", checker.Anomaly{Kind: checker.KindLateWrite, Lock: "l", Processes: []int{1}, Start: ms(3000), End: ms(4200),
			Ops: []history.Op{staleOps(2500)[3], staleOps(2500)[5]}}, []faultView{cut}, newCauseTimeline(staleOps(2500), nil, nil),
			[]string{"a write outlived its lease: process 1's add was invoked at 2.500s, inside its lease (to 3.000s), and acknowledged at 4.200s, " +
				"1.2 s past it; nobody else held the lock meanwhile", "with these windows open during it: partition (2.000s – 5.000s)"}, []string{noFault}},
		{"a stuck lock's holder ended by an add cut off", stuck, []faultView{cut}, nil,
			[]string{"an abandoned holder: process 1's add, invoked at 2.500s while it held the lock with no lease, came back unknown at 4.200s",
				"with these windows open during it: partition (2.000s – 5.000s)"}, []string{noFault}},
		{"a stuck lock with no window open", stuck, nil, nil, []string{"came back unknown at 4.200s", "it took 1.7 s, with no fault window open"}, []string{noFault, "slow"}},
		{"a stuck lock's holder ended by an error", stuckErr, nil, nil, []string{"it took 1.7 s (error: server replied 503), with no fault window open"}, []string{noFault}},
		{"a stuck lock whose ops lack the invocation (another shard's)", stuckBare, []faultView{cut}, newCauseTimeline(stuck.Ops, nil, nil),
			[]string{"process 1's add, invoked at 2.500s", "partition (2.000s – 5.000s)"}, []string{noFault}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.tl == nil {
				// No history at hand but the anomaly's own operations:
				// the checker's grants of those.
				tc.tl = newCauseTimeline(tc.a.Ops, nil, nil)
			}
			got := likelyCause(tc.a, tc.faults, tc.tl)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("likelyCause = %q, want it to contain %q", got, w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(got, w) {
					t.Errorf("likelyCause = %q, want it without %q", got, w)
				}
			}
		})
	}
	// A release the anomaly's ops leave out is found in the timeline.
	withRelease := newCauseTimeline(append(slices.Clone(overlap.Ops), op(7, 2500, 2, history.Invoke, history.FRelease)), nil, nil)
	if r := holdRoles(overlap, withRelease)[6]; r != "starts 2's hold; 2's hold ended by its release at 2.500s (line 7)" {
		t.Errorf("role of 2's grant %q", r)
	}
	roles := holdRoles(renewed, newCauseTimeline(renewed.Ops, nil, nil))
	if roles[2] != "starts 1's hold" || roles[4] != "ends 1's hold: lease to 4.000s" || roles[6] != "starts 2's hold; ends 2's hold: lease to 6.400s" {
		t.Errorf("roles %v", roles)
	}
}

// Causes read the checker's own grants (checker.Timeline): the anomaly
// the checker reports on a history, explained from the timeline it
// derived while judging it. Each case is one where the grants the
// anomaly's operations show, read alone, would say otherwise.
func TestCauseReadsTheCheckersGrants(t *testing.T) {
	op := func(idx int64, at float64, p int, typ history.Type, f, lock string, lease int64) history.Op {
		return history.Op{Index: idx, Time: ms(at), Process: p, Type: typ, F: f, Lock: lock, LeaseMS: lease}
	}
	acq := func(idx int64, from, to float64, p int, lease int64) []history.Op {
		return []history.Op{op(idx, from, p, history.Invoke, history.FAcquire, "l", 0), op(idx+1, to, p, history.OK, history.FAcquire, "l", lease)}
	}
	hist := func(parts ...[]history.Op) []history.Op { return slices.Concat(parts...) }
	add := func(o history.Op) history.Op { o.Value = json.RawMessage("1"); return o }
	for _, tc := range []struct {
		name      string
		ops       []history.Op
		want, not []string
		role      string // the role of process 0's first grant, if said
	}{
		{"a heartbeat the overlap's operations leave out sets the deadline", hist(
			acq(0, 0, 100, 0, 1000), acq(2, 800, 900, 0, 1000), acq(4, 1000, 1200, 1, 1000),
			[]history.Op{op(6, 1500, 0, history.Invoke, history.FRelease, "l", 0), op(7, 1550, 0, history.OK, history.FRelease, "l", 0)}),
			[]string{"the lock let process 0's lease go before its own deadline: process 1 was granted the lock at 1.200s, 0.6 s before " +
				"process 0's deadline (1.800s: its acquire invoked at 0.800s plus its 1000 ms lease)"}, nil, ""},
		{"a heartbeat answered after the second grant sets no deadline then", hist(
			acq(0, 0, 100, 0, 0), acq(2, 400, 500, 1, 1000), acq(4, 600, 700, 0, 1000),
			[]history.Op{op(6, 3000, 1, history.Invoke, history.FRead, "l", 0), op(7, 3100, 1, history.OK, history.FRead, "l", 0)}),
			[]string{noFault}, []string{"before its own deadline"}, ""},
		{"a grant lost with no lease is abandoned, whatever the process held before", hist(
			acq(0, 0, 100, 0, 1000),
			[]history.Op{op(2, 200, 0, history.Invoke, history.FRelease, "l", 0), op(3, 300, 0, history.OK, history.FRelease, "l", 0)},
			acq(4, 400, 500, 0, 0),
			[]history.Op{add(op(6, 600, 0, history.Invoke, history.FAdd, "l", 0)), add(op(7, 700, 0, history.Info, history.FAdd, "l", 0))},
			acq(8, 800, 900, 1, 1000),
			[]history.Op{op(10, 1000, 1, history.Invoke, history.FRead, "l", 0), op(11, 1100, 1, history.OK, history.FRead, "l", 0)}),
			[]string{"an abandoned hold: process 0's add had an unknown outcome at 0.700s while it held a grant with no lease"}, nil, ""},
		{"a failed acquire after the hold ran out is no heartbeat", hist(
			acq(0, 0, 100, 0, 1000), acq(2, 500, 600, 1, 1000),
			[]history.Op{op(4, 1500, 0, history.Invoke, history.FAcquire, "l", 0), op(5, 1600, 0, history.Fail, history.FAcquire, "l", 0)}),
			[]string{"before its own deadline", noFault}, []string{"heartbeat"}, ""},
		{"a release of another lock ends no hold of this one", hist(
			acq(0, 0, 100, 0, 1000), acq(2, 500, 600, 1, 1000),
			[]history.Op{op(4, 700, 0, history.Invoke, history.FRelease, "m", 0), op(5, 750, 0, history.OK, history.FRelease, "m", 0)}),
			[]string{"before its own deadline"}, nil, "starts 0's hold; ends 0's hold: lease to 1.000s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := checker.Check(context.Background(), tc.ops, checker.WithTimeline())
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(res.Anomalies, func(a checker.Anomaly) bool { return a.Kind == checker.KindOverlap })
			if i < 0 {
				t.Fatalf("no overlap in %+v", res.Anomalies)
			}
			v := viewAnomaly(1, res.Anomalies[i], nil, newCauseTimeline(tc.ops, res.Meta, res.Timeline))
			for _, w := range tc.want {
				if !strings.Contains(v.Cause, w) {
					t.Errorf("cause %q, want it to contain %q", v.Cause, w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(v.Cause, w) {
					t.Errorf("cause %q, want it without %q", v.Cause, w)
				}
			}
			if tc.role != "" {
				if r := v.Ops[1].Role; r != tc.role {
					t.Errorf("role of process 0's grant %q, want %q", r, tc.role)
				}
			}
		})
	}
}

// A restore explains a fencing token issued again or an acknowledged value
// gone back only after the restored node came back (the stop line less
// its down time), never before, nor for a window never stopped.
func TestLikelyCauseRestore(t *testing.T) {
	restore := func(closed bool) faultView {
		w := history.FaultWindow{Kind: "restore", Start: 5e9, End: 60e9, Nodes: []string{"n2"},
			Value: json.RawMessage(`{"replicates_all":true,"snapshot":"lockcheck-restore-0a"}`)}
		if closed {
			w.Closed, w.Stop = true, json.RawMessage(`{"commitlog":2,"down_ms":40000,"removed":90,"snapshot":"lockcheck-restore-0a","tables":24}`)
		}
		return faultView{FaultWindow: w}
	}
	const named = "n2 was restored from its snapshot lockcheck-restore-0a taken at 5.000s (Paxos state included; down from 20.000s"
	for _, tc := range []struct {
		name string
		a    checker.Anomaly
		w    faultView
		want string
	}{
		{"a token issued again after the restore", checker.Anomaly{Kind: checker.KindTokenOrder, Start: 58e9, End: 70e9, Processes: []int{2}}, restore(true), named},
		{"a register value gone back after it", checker.Anomaly{Kind: checker.KindNonLinearizable, Start: 1e9, End: 80e9}, restore(true), named},
		{"an anomaly over before the node went down", checker.Anomaly{Kind: checker.KindTokenOrder, Start: 10e9, End: 15e9}, restore(true), noFault},
		{"a window never stopped restored nothing", checker.Anomaly{Kind: checker.KindTokenOrder, Start: 58e9, End: 70e9}, restore(false), noFault},
		{"a stuck lock is not its doing", checker.Anomaly{Kind: checker.KindStuckLock, Start: 58e9, End: 70e9}, restore(true), noFault},
	} {
		got := likelyCause(tc.a, []faultView{tc.w}, nil)
		if !strings.Contains(got, tc.want) || (tc.want == noFault && got != noFault) {
			t.Errorf("%s: likelyCause = %q, want %q", tc.name, got, tc.want)
		}
	}
}
