//go:build jepsen

package exclusive_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/cluster/clustertest"
	"github.com/lockcheck/lockcheck/exclusive"
)

// TestCQLLease takes the lease row of a --hosts cluster on the shared
// cluster: a second holder is refused with the first's name, the row
// outlives several TTLs while renewed, a holder on this host whose process
// is gone is removed at once, and a release frees the row.
func TestCQLLease(t *testing.T) {
	// Only read and written: the shared cluster is attached, not healed
	// (this package's TestMain is the lease helper's). It is taken, as
	// clustertest.Main takes it for other packages, so that no package's
	// faults run beside it when make test builds the next package's tests
	// while one runs.
	if os.Getenv("LOCKCHECK_SHARED") == "none" {
		t.Skip("LOCKCHECK_SHARED=none: no shared cluster")
	}
	shared, c := clustertest.TakeShared(t)
	defer shared.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st := exclusive.CQL{Session: c.Session, Keyspace: c.Keyspace(), ID: "test-" + c.Name(), TTL: 6 * time.Second}

	l, err := exclusive.Take(ctx, st, exclusive.NoWait(true))
	if err != nil {
		t.Fatal(err)
	}
	other := exclusive.Holder{Host: "elsewhere", PID: 1, Command: "lockcheck run", Started: time.Now()}
	if _, h, err := st.TryTake(ctx, other); err != nil || !h.Same(exclusive.Self()) {
		t.Fatalf("second holder: holder %+v, err %v; want this process", h, err)
	}
	// Renewals keep it: wait until the row, still this process's, was
	// last written 2.5 TTLs after the take (the cluster's own write times,
	// so a slow renewal on a loaded machine only makes the wait longer),
	// and fail as soon as it is gone or someone else's.
	taken := writeTime(ctx, t, st)
	for {
		h, ok, err := st.Holder(ctx)
		if err != nil || !ok || !h.Same(exclusive.Self()) {
			t.Fatalf("while renewed: %+v, %v, %v; want held by this process", h, ok, err)
		}
		if w := writeTime(ctx, t, st); w.Sub(taken) >= 5*st.TTL/2 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no renewal 2.5 TTLs after the take before the test's deadline: %v", ctx.Err())
		case <-time.After(st.TTL / 10): // a renewal's period
		}
	}
	l.Release()
	if _, ok, err := st.Holder(ctx); err != nil || ok {
		t.Fatalf("released row still held (%v)", err)
	}

	// A holder of this host whose process is gone: its row stays until its
	// TTL, but a taker here removes it at once.
	dead := exclusive.Self()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead.PID, dead.Boot = cmd.Process.Pid, 1
	long := st
	long.TTL = 5 * time.Minute
	if release, _, err := long.TryTake(ctx, dead); err != nil || release == nil {
		t.Fatalf("dead holder's take: %v", err)
	} // never released: its process "died"
	l, err = exclusive.Take(ctx, st, exclusive.NoWait(true))
	if err != nil {
		t.Fatalf("take over a dead holder: %v", err)
	}
	l.Release()

	// A live holder elsewhere is waited for, not removed.
	if release, _, err := long.TryTake(ctx, other); err != nil || release == nil {
		t.Fatalf("other's take: %v", err)
	} else {
		defer release()
	}
	if _, err := exclusive.Take(ctx, st, exclusive.NoWait(true)); !errors.Is(err, exclusive.ErrBusy) {
		t.Fatalf("take while held elsewhere: %v; want ErrBusy", err)
	}
}

// writeTime is when the lease row was last written, by the cluster's clock
// (WRITETIME of its holder).
func writeTime(ctx context.Context, t *testing.T, st exclusive.CQL) time.Time {
	t.Helper()
	s, err := st.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var us int64
	if err := s.Query(fmt.Sprintf(`SELECT WRITETIME(holder) FROM %s.%s WHERE name = 'cluster'`, st.Keyspace, exclusive.CQLTable)).
		Consistency(gocql.Quorum).WithContext(ctx).Scan(&us); err != nil {
		t.Fatalf("lease row's write time: %v", err)
	}
	return time.UnixMicro(us)
}
