package lockcheck

import (
	"cmp"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Test runs lock as Run does, inside a Go test: it logs the report's path
// and fails t when the verdict is not valid (invalid: the lock broke its
// promise; unknown: the checker could not decide, which vouches for nothing)
// or the run broke. The run's log goes to t's log. Runs are stored under
// $LOCKCHECK_STORE, else lockcheck-store in the temporary directory, where
// they outlive the test.
func Test(t testing.TB, lock Lock, opts ...Option) Result {
	t.Helper()
	store := cmp.Or(os.Getenv("LOCKCHECK_STORE"), filepath.Join(os.TempDir(), "lockcheck-store"))
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	opts = append([]Option{WithStore(store), WithLogger(log)}, opts...)
	res, err := Run(t.Context(), lock, opts...)
	judge(t, res, err)
	return res
}

// judge fails t as Test promises.
func judge(t testing.TB, res Result, err error) {
	t.Helper()
	if res.Report != "" {
		t.Logf("lockcheck: %s, %d operations, faults %v; report %s", res.Verdict, res.Ops, res.Faults, res.Report)
	}
	if err != nil {
		t.Fatalf("%v", err)
	}
	switch res.Verdict {
	case Valid:
	case Invalid:
		msgs := make([]string, 0, 3)
		for i, a := range res.Check.Anomalies {
			if i == 3 {
				break
			}
			msgs = append(msgs, a.Kind+" on "+a.Lock+": "+a.Message)
		}
		t.Errorf("lockcheck: invalid, %d anomalies (%s); report %s", len(res.Check.Anomalies), strings.Join(msgs, "; "), res.Report)
	default:
		t.Errorf("lockcheck: verdict %q: the checker could not decide; report %s", res.Verdict, res.Report)
	}
}

// testWriter sends the run's log lines to t.Log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
