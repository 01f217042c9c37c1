//go:build jepsen

package exclusive_test

import (
	"cmp"
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/exclusive"
)

// TestCQLLease takes the lease row of a --hosts cluster on the shared
// cluster: a second holder is refused with the first's name, the row
// outlives several TTLs while renewed, a holder on this host whose process
// is gone is removed at once, and a release frees the row.
func TestCQLLease(t *testing.T) {
	// Only read and written: the shared cluster is attached, not taken or
	// healed (this package's TestMain is the lease helper's).
	if os.Getenv("LOCKCHECK_SHARED") == "none" {
		t.Skip("LOCKCHECK_SHARED=none: no shared cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := cluster.Attach(ctx, cluster.WithName(cmp.Or(os.Getenv("LOCKCHECK_CLUSTER"), cluster.DefaultName)))
	if err != nil {
		t.Fatal(err)
	}
	st := exclusive.CQL{Session: c.Session, Keyspace: c.Keyspace(), ID: "test-" + c.Name(), TTL: 6 * time.Second}

	l, err := exclusive.Take(ctx, st, exclusive.NoWait(true))
	if err != nil {
		t.Fatal(err)
	}
	other := exclusive.Holder{Host: "elsewhere", PID: 1, Command: "lockcheck run", Started: time.Now()}
	if _, h, err := st.TryTake(ctx, other); err != nil || !h.Same(exclusive.Self()) {
		t.Fatalf("second holder: holder %+v, err %v; want this process", h, err)
	}
	time.Sleep(15 * time.Second) // 2.5 TTLs: renewals keep it
	if h, ok, err := st.Holder(ctx); err != nil || !ok || !h.Same(exclusive.Self()) {
		t.Fatalf("after 2.5 TTLs: %+v, %v, %v; want still held by this process", h, ok, err)
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
