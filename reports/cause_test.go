package reports

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
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
			[]faultView{pause3}, "process 3 stalled 6.0 s in its critical section (client-pause), past its lease; its write landed after"},
		{"paused holder's lost add", checker.Anomaly{Kind: checker.KindLostAdd, Start: 20, End: 60, Processes: []int{3}},
			[]faultView{pause3}, "stale read-modify-write landed over it"},
		{"pause of another process explains nothing", checker.Anomaly{Kind: checker.KindStaleWrite, Start: 20, End: 60, Processes: []int{1, 2}},
			[]faultView{pause3}, ""},
		{"pause outside the span explains nothing", checker.Anomaly{Kind: checker.KindStaleWrite, Start: 60, End: 90, Processes: []int{3}},
			[]faultView{pause3}, ""},
		{"client clock behind", checker.Anomaly{Kind: checker.KindOverlap, Start: 20, End: checker.Never},
			[]faultView{window("client-clock", 0, 100, `{"client":2,"offset":"-12.3s"}`)}, "client 2's clock was -12.3s off (client-clock)"},
		{"node clock ahead", checker.Anomaly{Kind: checker.KindOverlap, Start: 20, End: 30},
			[]faultView{window("clock", 0, 100, `{"kind":"bump","offsets":{"n2":"+4s","n1":"-1.5s"}}`)}, "node clocks were moved (n1 -1.5s, n2 +4s): a coordinator whose clock runs ahead expires a TTL lease"},
		{"aimed node clock ahead", checker.Anomaly{Kind: checker.KindOverlap, Start: 20, End: 30},
			[]faultView{window("coord-clock", 0, 100, `{"node":"n2","clients":[1,4],"offset":"+5.432s","lease":"3s","holders":[0]}`)},
			"the lease expired on the server before the holder's deadline: node n2, the coordinator of clients 1, 4, ran 5.4 s ahead (coord-clock), more than a 3s lease has left"},
		{"aimed partition", checker.Anomaly{Kind: checker.KindOverlap, Start: 20, End: 30},
			[]faultView{window("coord-partition", 0, 100, `{"node":"n3","clients":[2],"others":{"n2":[1,4],"n1":[0,3]},"grudge":{}}`)},
			"node n3, the coordinator of client 2, could not reach n1 (clients 0, 3), n2 (clients 1, 4) (coord-partition): a write at a weak consistency level (ONE)"},
		{"aimed clock over before the anomaly explains nothing", checker.Anomaly{Kind: checker.KindOverlap, Start: 200, End: 300},
			[]faultView{window("coord-clock", 0, 100, `{"node":"n2","clients":[1],"offset":"+5s","lease":"3s"}`)}, ""},
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
			[]faultView{window("client-pause", 10, 50, `{"client":0,"lock":"l","ms":3000,"process":0}`)}, "process 0 stalled 3.0 s"},
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
			got := likelyCause(tc.a, tc.faults)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("likelyCause = %q, want it to contain %q", got, tc.want)
			}
		})
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
