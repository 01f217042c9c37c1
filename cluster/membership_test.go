package cluster

import "testing"

// A bootstrap's failure is read off the node's log: the stream that failed,
// a resume that failed again, and not a failure a later resume began to
// mend.
func TestBootstrapFailure(t *testing.T) {
	const (
		streaming = "INFO  [main] StorageService.java:1 - JOINING: Starting to bootstrap...\n"
		failed    = "WARN  [main] StorageService.java:2 - Some data streaming failed. Use nodetool to check bootstrap state and resume. For more, see `nodetool help bootstrap`. IN_PROGRESS\n"
		resuming  = "INFO  [RMI TCP Connection(4)] StorageService.java:3 - Resuming bootstrap...\n"
		again     = "ERROR [Stream-Deserializer] StorageService.java:4 - Error during bootstrap: Stream failed\n"
		done      = "INFO  [Stream-Deserializer] StorageService.java:5 - Resume complete\n"
	)
	for _, tc := range []struct {
		name, log string
		failed    bool
	}{
		{"still streaming", streaming, false},
		{"stream failed", streaming + failed, true},
		{"resumed", streaming + failed + resuming, false},
		{"resumed and done", streaming + failed + resuming + done, false},
		{"resume failed", streaming + failed + resuming + again, true},
		{"empty", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why := bootstrapFailure(tc.log)
			if (why != "") != tc.failed {
				t.Errorf("bootstrapFailure = %q, want failed %v", why, tc.failed)
			}
		})
	}
}
