package exclusive

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// execHost runs the lease script with this machine's bash and flock, as a
// host would over SSH; each host keeps its lease file in its own directory.
type execHost struct {
	name, dir string
	path      string        // PATH of the script ("": inherited)
	beats     chan struct{} // told of each heartbeat line a script took (nil: not told)
}

func (h execHost) HostName() string { return h.name }

func (h execHost) Start(ctx context.Context, script string, args ...string) (Script, error) {
	args[2] = filepath.Join(h.dir, h.name+".lease")
	cmd := exec.Command("/bin/bash", append([]string{"-c", script, "lockcheck"}, args...)...)
	if h.path != "" {
		cmd.Env = []string{"PATH=" + h.path}
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// Not StdoutPipe: Wait would close it under an answer not yet read.
	out, pw := io.Pipe()
	cmd.Stdout = pw
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &execScript{cmd: cmd, in: in, out: out, done: make(chan struct{})}
	if h.beats != nil {
		s.in = beatCounter{in, h.beats}
	}
	go func() { s.err = cmd.Wait(); pw.Close(); close(s.done) }()
	return s, nil
}

type execScript struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  io.Reader
	done chan struct{}
	err  error
}

func (s *execScript) Stdin() io.WriteCloser { return s.in }
func (s *execScript) Stdout() io.Reader     { return s.out }
func (s *execScript) Wait() error           { <-s.done; return s.err }
func (s *execScript) Close() error          { return s.in.Close() }

// beatCounter tells of each heartbeat written to a script that is still
// there to read it (a write to an ended script fails).
type beatCounter struct {
	io.WriteCloser
	beats chan<- struct{}
}

func (b beatCounter) Write(p []byte) (int, error) {
	n, err := b.WriteCloser.Write(p)
	if err == nil && string(p) == "\n" {
		select {
		case b.beats <- struct{}{}:
		default: // the test stopped counting
		}
	}
	return n, err
}

func hostsOf(dir string, names ...string) Hosts {
	var ns []Host
	for _, n := range names {
		ns = append(ns, execHost{name: n, dir: dir})
	}
	return Hosts{Nodes: ns, Silence: 2 * time.Second}
}

func requireFlock(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("no flock(1) on this machine")
	}
}

// TestHostsOneHolder: a second user that shares one host with the holder is
// refused with the holder's name, holds nothing it took on the way, and
// takes the cluster once the holder releases it.
func TestHostsOneHolder(t *testing.T) {
	requireFlock(t)
	dir := t.TempDir()
	ctx := context.Background()
	a := hostsOf(dir, "n2")
	l, err := Take(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	b := hostsOf(dir, "n2", "n1") // n1 comes first: taken, then given back
	_, err = Take(ctx, b, NoWait(true))
	var busy *BusyError
	if !errors.As(err, &busy) || !busy.Holder.Same(Self()) {
		t.Fatalf("Take of a held host: %v; want a BusyError naming this process", err)
	}
	if h, ok, err := b.Holder(ctx); err != nil || !ok || !h.Same(Self()) {
		t.Fatalf("Holder = %+v, %v, %v; want this process", h, ok, err)
	}
	c := hostsOf(dir, "n1")
	lc, err := Take(ctx, c, NoWait(true))
	if err != nil {
		t.Fatalf("n1 after a refused take of n1,n2: %v; want it free", err)
	}
	lc.Release()
	l.Release()
	if _, ok, err := b.Holder(ctx); err != nil || ok {
		t.Fatalf("after release: held %v, %v", ok, err)
	}
	lb, err := Take(ctx, b, NoWait(true))
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	lb.Release()
}

// TestHostsHeldWhileBeating: a holder that keeps beating holds past the
// silence; one that stops (its machine vanished without closing the
// connection) is let go once the silence has passed.
func TestHostsHeldWhileBeating(t *testing.T) {
	requireFlock(t)
	dir := t.TempDir()
	ctx := context.Background()
	st := hostsOf(dir, "n1")
	beats := make(chan struct{}, 64)
	st.Nodes[0] = execHost{name: "n1", dir: dir, beats: beats}
	release, _, err := st.TryTake(ctx, Self())
	if err != nil || release == nil {
		t.Fatalf("TryTake: %v", err)
	}
	// The holder beats every sixth of the silence (a ticker, never
	// faster): twelve beats the script took span at least twice the
	// silence, however late each came.
	// A holder that stopped beating (its script ended) is a failure, not
	// a hang: the guard is far past any beat's lateness.
	guard := time.NewTimer(30 * st.Silence)
	defer guard.Stop()
	for i := range 12 {
		select {
		case <-beats:
		case <-guard.C:
			t.Fatalf("the holder stopped beating after %d beats", i)
		}
	}
	if _, ok, err := st.Holder(ctx); err != nil || !ok {
		t.Fatalf("a beating holder after twice the silence: held %v, %v", ok, err)
	}
	release()

	s, word, _, err := st.answer(ctx, st.Nodes[0], Self(), "take")
	if err != nil || word != "taken" {
		t.Fatalf("take: %q, %v", word, err)
	}
	defer s.Close()
	if h, ok, err := st.Holder(ctx); !ok {
		t.Fatalf("a silent holder is let go at once: %v %v", h, err)
	}
	deadline := time.Now().Add(10 * st.Silence)
	for {
		_, ok, err := st.Holder(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a silent holder still holds after %v", 10*st.Silence)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestHostsWithoutFlock: a host without flock(1) is one clear error, not a
// wait.
func TestHostsWithoutFlock(t *testing.T) {
	st := Hosts{Nodes: []Host{execHost{name: "bare", dir: t.TempDir(), path: "/nonexistent"}}}
	_, err := Take(context.Background(), st)
	if err == nil || errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "bare has no flock(1)") {
		t.Fatalf("Take on a host without flock: %v; want the host named, not a wait", err)
	}
}
