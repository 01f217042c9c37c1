package exclusive

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestLocalOneHolder: a second process is refused with the first's name,
// and takes the lease once the first releases it.
func TestLocalOneHolder(t *testing.T) {
	dir := t.TempDir()
	st := Local{Name: "t1", Dir: dir}
	l, err := Take(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	h, ok, err := st.Holder(context.Background())
	if err != nil || !ok || !h.Same(Self()) {
		t.Fatalf("Holder = %+v, %v, %v; want this process", h, ok, err)
	}
	out, code := helper(t, dir, "t1", "--no-wait")
	if code != 2 || !strings.Contains(out, "in use by pid "+itoa(os.Getpid())) {
		t.Fatalf("second holder: exit %d, %q; want 2 naming pid %d", code, out, os.Getpid())
	}
	l.Release()
	if _, ok, _ := st.Holder(context.Background()); ok {
		t.Fatal("released lease still has a holder")
	}
	if out, code := helper(t, dir, "t1", "--no-wait"); code != 0 {
		t.Fatalf("after release: exit %d, %q", code, out)
	}
}

// TestLocalDeadHolder: a holder killed with SIGKILL holds nothing.
func TestLocalDeadHolder(t *testing.T) {
	dir := t.TempDir()
	cmd := helperCmd(t, dir, "t2", "--hold")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, _ := cmd.StdinPipe() // open until the kill: the helper holds on
	defer in.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := out.Read(buf); err != nil || string(buf) != "taken" {
		t.Fatalf("helper: %q, %v", buf, err)
	}
	st := Local{Name: "t2", Dir: dir}
	if _, err := Take(context.Background(), st, NoWait(true)); !errors.Is(err, ErrBusy) {
		t.Fatalf("Take while held: %v, want ErrBusy", err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	l, err := Take(context.Background(), st, NoWait(true))
	if err != nil {
		t.Fatalf("Take after the holder was killed: %v", err)
	}
	l.Release()
}

// TestWaitThenTake: a waiting Take says one line naming the holder, and
// takes the lease when the holder releases it.
func TestWaitThenTake(t *testing.T) {
	dir := t.TempDir()
	cmd := helperCmd(t, dir, "t3", "--hold")
	out, _ := cmd.StdoutPipe()
	in, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := out.Read(buf); err != nil {
		t.Fatal(err)
	}
	// The first line said is Take found the lease held and about to wait:
	// only then does the holder let go (it releases on EOF), so the take
	// that follows is one that waited, however slow the machine.
	var lines []string
	say := func(s string) {
		if lines = append(lines, s); len(lines) == 1 {
			in.Close()
		}
	}
	l, err := Take(context.Background(), Local{Name: "t3", Dir: dir}, Say(say))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	_ = cmd.Wait()
	if len(lines) != 2 || !strings.Contains(lines[0], "in use by pid "+itoa(cmd.Process.Pid)) || !strings.Contains(lines[0], "--no-wait") {
		t.Fatalf("lines %q: want the holder named once, then taken", lines)
	}
}

// TestNested: a process takes a key once; the last release frees it.
func TestNested(t *testing.T) {
	dir := t.TempDir()
	st := Local{Name: "t4", Dir: dir}
	a, err := Take(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Take(context.Background(), st, NoWait(true))
	if err != nil {
		t.Fatalf("nested Take: %v", err)
	}
	if a.Holding() == 0 || b.Holding() != a.Holding() {
		t.Errorf("nested Take's holding %d, outer's %d: want one, not 0", b.Holding(), a.Holding())
	}
	b.Release()
	b.Release() // idempotent
	if _, ok, _ := st.Holder(context.Background()); !ok {
		t.Fatal("inner release freed the outer holding")
	}
	c, err := Take(context.Background(), st, NoWait(true))
	if err != nil {
		t.Fatal(err)
	}
	if c.Holding() != a.Holding() {
		t.Errorf("a Take under the outer holding: holding %d, want %d", c.Holding(), a.Holding())
	}
	c.Release()
	a.Release()
	if _, ok, _ := st.Holder(context.Background()); ok {
		t.Fatal("outer release left the lease held")
	}
	// Once let go, another process may have held it: a new holding.
	d, err := Take(context.Background(), st, NoWait(true))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	if d.Holding() == a.Holding() || d.Holding() == 0 {
		t.Errorf("a Take after the last Release: holding %d, the released one %d: want a new one", d.Holding(), a.Holding())
	}
	if (*Lease)(nil).Holding() != 0 {
		t.Error("a nil Lease's holding: want 0")
	}
}

// TestCleanLivesWithTheHolding: a note that the cluster was left clean is
// read by every lease of the holding and is gone with it (another process
// may have held the cluster since).
func TestCleanLivesWithTheHolding(t *testing.T) {
	st := Local{Name: "t5", Dir: t.TempDir()}
	a, err := Take(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	if a.Clean() {
		t.Fatal("a new holding is clean before anyone said so")
	}
	b, err := Take(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	b.SetClean(true)
	b.Release()
	if !a.Clean() {
		t.Error("a nested lease's note is not the holding's")
	}
	c, err := Take(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Clean() {
		t.Error("a later lease of the holding does not read the note")
	}
	c.SetClean(false)
	if a.Clean() {
		t.Error("the note, taken back, still reads clean")
	}
	c.SetClean(true)
	c.Release()
	a.Release()
	if a.Clean() {
		t.Error("a released holding still reads clean")
	}
	d, err := Take(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	if d.Clean() {
		t.Error("a new holding inherited the last one's note")
	}
	var nilLease *Lease
	nilLease.SetClean(true)
	if nilLease.Clean() {
		t.Error("a nil Lease reads clean")
	}
}

func TestAlive(t *testing.T) {
	if !Self().Alive() {
		t.Fatal("this process is not alive")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	h := Self()
	h.PID, h.Boot = cmd.Process.Pid, 1
	if h.Alive() {
		t.Fatalf("exited process %d alive", h.PID)
	}
	h = Self()
	h.Boot++ // the pid reused by another process
	if h.Alive() {
		t.Fatal("a reused pid taken for its old process")
	}
	h = Self()
	h.Host = "elsewhere"
	h.PID = cmd.Process.Pid
	if !h.Alive() {
		t.Fatal("a holder on another host judged dead")
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
