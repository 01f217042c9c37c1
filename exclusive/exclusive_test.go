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
// read by every lease of the holding; its last value (what the holding
// found, unless it said otherwise) goes to the process that takes the
// cluster right after the holding ends (Local is a NotedStore), and to no
// other: a holder that dies says nothing.
func TestCleanLivesWithTheHolding(t *testing.T) {
	dir := t.TempDir()
	st := Local{Name: "t5", Dir: dir}
	a, err := Take(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	if a.Clean() {
		t.Fatal("a first holding is clean before anyone said so")
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
	c.SetClean(false)
	if a.Clean() {
		t.Error("the note, taken back, still reads clean")
	}
	c.SetClean(true)
	c.Release()
	a.Release()
	if _, ok, _ := st.Holder(context.Background()); ok {
		t.Fatal("a note left on release reads as a holder")
	}
	// The next process reads the note and leaves one; one that says
	// nothing passes on what it found; one that takes it back leaves none.
	for i, step := range []struct{ mode, found string }{
		{"--clean", "true"}, {"--report", "true"}, {"--unclean", "true"}, {"--report", "false"},
	} {
		if out, code := helper(t, dir, "t5", step.mode); code != 0 || out != step.found {
			t.Fatalf("process %d after the holding (%s): exit %d, found clean %q, want %s", i+1, step.mode, code, out, step.found)
		}
	}
	// A holder that noted clean but died never said so.
	if out, code := helper(t, dir, "t5", "--clean"); code != 0 || out != "false" {
		t.Fatalf("exit %d, %q", code, out)
	}
	cmd := helperCmd(t, dir, "t5", "--hold-clean")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, _ := cmd.StdinPipe()
	defer in.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := out.Read(buf); err != nil || string(buf) != "taken" {
		t.Fatalf("helper: %q, %v", buf, err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	d, err := Take(context.Background(), st, NoWait(true))
	if err != nil {
		t.Fatal(err)
	}
	if d.Clean() {
		t.Error("a holding after a holder killed with its note unsaid starts clean")
	}
	d.Release()
	var nilLease *Lease
	nilLease.SetClean(true)
	if nilLease.Clean() {
		t.Error("a nil Lease reads clean")
	}
}

// TestNoNoteWithoutANotedStore: a store that keeps no note (CQL, Hosts)
// starts every holding unclean, whatever the last one said.
func TestNoNoteWithoutANotedStore(t *testing.T) {
	st := plainStore{Local{Name: "t6", Dir: t.TempDir()}}
	a, err := Take(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	a.SetClean(true)
	a.Release()
	b, err := Take(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	if b.Clean() {
		t.Error("a store without notes passed one on")
	}
}

// plainStore is Local without its notes: a Store only.
type plainStore struct{ l Local }

func (p plainStore) Key() string { return p.l.Key() }
func (p plainStore) TryTake(ctx context.Context, me Holder) (func(), Holder, error) {
	return p.l.TryTake(ctx, me)
}
func (p plainStore) Holder(ctx context.Context) (Holder, bool, error) { return p.l.Holder(ctx) }

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
