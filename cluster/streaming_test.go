package cluster

import (
	"slices"
	"testing"
)

// netstats' output as Cassandra's NetStats prints it: a bootstrap receiving
// from two peers (one done), a decommission sending, per-file lines that
// name their peer too, and the pool table after.
func TestParseNetstats(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      Netstats
	}{
		{"joining", `Mode: JOINING
Bootstrap 5b1c1e60-c9a3-11f0-9e5c-4f1b5a2d9c11
    /10.99.0.3
        Receiving 2 files, 5242880 bytes total. Already received 0 files (0.00%), 1310720 bytes total (25.00%)
            /var/lib/cassandra/data/heal/blobs-1/nb-1-big-Data.db 1310720/5242880 bytes (25%) received from idx:0/10.99.0.3
    /10.99.0.4
        Receiving 1 files, 2621440 bytes total. Already received 1 files (100.00%), 2621440 bytes total (100.00%)
Read Repair Statistics:
Attempted: 0
Mismatch (Blocking): 0
Pool Name                    Active   Pending      Completed   Dropped
Large messages                  n/a         0              0         0
`, Netstats{Mode: "JOINING", Streams: []Stream{
			{Peer: "10.99.0.3", Total: 5242880, Done: 1310720},
			{Peer: "10.99.0.4", Total: 2621440, Done: 2621440},
		}}},
		{"leaving", `Mode: LEAVING
Unbootstrap 7d0e
    n3/10.99.0.4
        Sending 3 files, 4000000 bytes total. Already sent 1 files (33.33%), 1000000 bytes total (25.00%)
            /var/lib/cassandra/data/heal/blobs-1/nb-2-big-Data.db 1000000/2000000 bytes (50%) sent to idx:0/10.99.0.4
`, Netstats{Mode: "LEAVING", Streams: []Stream{{Peer: "10.99.0.4", Sending: true, Total: 4000000, Done: 1000000}}}},
		{"idle", "Mode: DECOMMISSION_FAILED\nNot sending any streams.\n", Netstats{Mode: "DECOMMISSION_FAILED"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parseNetstats(tc.out)
			if got.Mode != tc.want.Mode || !slices.Equal(got.Streams, tc.want.Streams) {
				t.Errorf("parseNetstats = %+v, want %+v", got, tc.want)
			}
			// The first stream of each has bytes left; the rest are done.
			for i, s := range got.Streams {
				if s.Active() != (i == 0) {
					t.Errorf("stream %d %+v: Active() = %v", i, s, s.Active())
				}
			}
		})
	}
}
