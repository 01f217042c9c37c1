package cluster

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/lockcheck/lockcheck/faultcap"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// Node is one Cassandra node: its name (n1..nN), its IP on the cluster
// network and its Docker container.
type Node struct {
	Name, IP, ContainerID string
	// DC is the node's data centre, "dc1".."dcN" (WithDCs).
	DC string

	c *Cluster
	// frozen is held while something is done to the paused container
	// another way than exec (execOrPaused) and by Unpause: nothing in it
	// thaws halfway through.
	frozen sync.Mutex
}

func (n *Node) String() string { return n.Name }

// Capabilities are what a Docker node can do for the fault kinds
// (faultcap, the leaf package the nemesis shares): everything (restore
// included: its data directories are the harness's to swap; maintenance:
// nodetool and its data directory's listing), a power cut
// that loses something only when its data lives on the lazy filesystem,
// and the shaping of its links its kernel and the shaper allow (probed
// once per cluster: shape.go).
func (n *Node) Capabilities() []faultcap.Capability {
	caps := []faultcap.Capability{faultcap.IPTables, faultcap.Clock, faultcap.Signals, faultcap.Restart, faultcap.CPU, faultcap.Stall, faultcap.Restore, faultcap.Maintenance}
	if n.c.LazyFS() {
		caps = append(caps, faultcap.Power, faultcap.DiskLatency)
	}
	if len(n.c.spares) > 0 {
		caps = append(caps, faultcap.Membership)
	}
	if n.c.cfg.paxosUpgrade {
		caps = append(caps, faultcap.PaxosUpgrade)
	}
	return append(caps, n.shapeCaps()...)
}

// Exec runs cmd in the node's container and returns its combined output; a
// non-zero exit status is an error (with the output in it).
func (n *Node) Exec(ctx context.Context, cmd ...string) (string, error) {
	out, code, err := n.c.d.execResult(ctx, n.ContainerID, cmd)
	if err != nil {
		return out, fmt.Errorf("%s: %w", n.Name, err)
	}
	if code != 0 {
		return out, fmt.Errorf("%s: %q exited %d: %s", n.Name, cmd, code, strings.TrimSpace(out))
	}
	return out, nil
}

// NetExec runs cmd in the node's network namespace: in its container, and
// while the container is paused (docker exec refuses a paused one) in a
// short-lived container of the node's image that shares the namespace. A
// cut and its heal thus reach a frozen node, as the kernel's rules reach
// it: a pause overlapping a partition on one node is an ordinary schedule.
func (n *Node) NetExec(ctx context.Context, cmd ...string) (string, error) {
	return n.execOrPaused(ctx, cmd, func(image string) (string, int, error) {
		return n.c.d.runBeside(ctx, n.c.log, n.c.cfg.name, n.ContainerID, image, cmd)
	})
}

// execOrPaused runs cmd in the container like Exec; when Docker refuses the
// exec because the container is paused, paused (given the node's image)
// does the command's work another way, and Unpause waits for it. A command
// that ran and failed is not done again.
func (n *Node) execOrPaused(ctx context.Context, cmd []string, paused func(image string) (string, int, error)) (string, error) {
	out, code, err := n.c.d.execResult(ctx, n.ContainerID, cmd)
	if err != nil {
		n.frozen.Lock()
		ins, ierr := n.c.d.ContainerInspect(ctx, n.ContainerID, client.ContainerInspectOptions{})
		switch {
		case ierr == nil && ins.Container.State.Paused:
			var perr error
			out, code, perr = paused(ins.Container.Image)
			n.frozen.Unlock()
			if perr != nil {
				return out, fmt.Errorf("%s (paused): %w", n.Name, errors.Join(err, perr))
			}
		case ierr == nil && ins.Container.State.Running:
			// Refused while paused, thawed since: once more, as usual.
			n.frozen.Unlock()
			if out, code, err = n.c.d.execResult(ctx, n.ContainerID, cmd); err != nil {
				return out, fmt.Errorf("%s: %w", n.Name, err)
			}
		default:
			n.frozen.Unlock()
			return out, fmt.Errorf("%s: %w", n.Name, err)
		}
	}
	if code != 0 {
		return out, fmt.Errorf("%s: %q exited %d: %s", n.Name, cmd, code, strings.TrimSpace(out))
	}
	return out, nil
}

// Pause freezes every process of the node (docker pause): the node neither
// answers nor sends, and its clock keeps running.
func (n *Node) Pause(ctx context.Context) error {
	if _, err := n.c.d.ContainerPause(ctx, n.ContainerID, client.ContainerPauseOptions{}); err != nil {
		return fmt.Errorf("pause %s: %w", n.Name, err)
	}
	return nil
}

// Unpause resumes a paused node.
func (n *Node) Unpause(ctx context.Context) error {
	n.frozen.Lock()
	defer n.frozen.Unlock()
	if _, err := n.c.d.ContainerUnpause(ctx, n.ContainerID, client.ContainerUnpauseOptions{}); err != nil {
		return fmt.Errorf("unpause %s: %w", n.Name, err)
	}
	return nil
}

// State is Docker's state of the node's container: "running", "paused",
// "exited", ...
func (n *Node) State(ctx context.Context) (string, error) {
	ins, err := n.c.d.ContainerInspect(ctx, n.ContainerID, client.ContainerInspectOptions{})
	if err != nil {
		return "", fmt.Errorf("inspect %s: %w", n.Name, err)
	}
	return string(ins.Container.State.Status), nil
}

var signalRE = regexp.MustCompile(`^(STOP|CONT|KILL|TERM|HUP|INT|QUIT|USR1|USR2)$`)

// SignalJVM sends a signal ("STOP", "CONT", "KILL", "TERM", ...) to the
// Cassandra JVM only: unlike Pause, STOP leaves the container's other
// processes (and docker exec) working, like a long GC pause.
func (n *Node) SignalJVM(ctx context.Context, sig string) error {
	sig = strings.TrimPrefix(strings.ToUpper(sig), "SIG")
	if !signalRE.MatchString(sig) {
		return fmt.Errorf("signal %q: want STOP, CONT, KILL, TERM, HUP, INT, QUIT, USR1 or USR2", sig)
	}
	_, err := n.Exec(ctx, "sh", "-c", "kill -s "+sig+" \"$(cat "+pidFile+")\"")
	return err
}

// Kill kills Cassandra with SIGKILL (no clean shutdown: a crash of the
// process) and waits until the container has stopped. Its data stays, with
// everything the process had written, synced or not, as a crashed process's
// page cache stays; Restart starts it again. On a node of a lazy filesystem
// (WithLazyFS) only the JVM is killed, and the node's entrypoint writes the
// filesystem's unsynced data out before the container stops.
func (n *Node) Kill(ctx context.Context) error {
	if n.c.LazyFS() {
		if err := n.SignalJVM(ctx, "KILL"); err != nil {
			return fmt.Errorf("kill %s: %w", n.Name, err)
		}
		return n.waitStopped(ctx, "kill")
	}
	if _, err := n.c.d.ContainerKill(ctx, n.ContainerID, client.ContainerKillOptions{Signal: "SIGKILL"}); err != nil {
		return fmt.Errorf("kill %s: %w", n.Name, err)
	}
	return n.waitStopped(ctx, "kill")
}

// PowerOff cuts the node's power: every process of its container is killed
// at once, the lazy filesystem's memory with them, so that the node loses
// what it had not fsynced (on a node without the lazy filesystem it is the
// same as Kill of the whole container: nothing is lost). Restart starts it
// again.
func (n *Node) PowerOff(ctx context.Context) error {
	if _, err := n.c.d.ContainerKill(ctx, n.ContainerID, client.ContainerKillOptions{Signal: "SIGKILL"}); err != nil {
		return fmt.Errorf("power off %s: %w", n.Name, err)
	}
	return n.waitStopped(ctx, "power off")
}

// LazyFS says whether the node's data lives on the lazy filesystem.
func (n *Node) LazyFS() bool { return n.c.LazyFS() }

// Unsynced reads the lazy filesystem's own count of the bytes and files it
// holds that were written and not yet fsynced: what a power loss now would
// throw away. It is at most a quarter of a second old.
func (n *Node) Unsynced(ctx context.Context) (bytes int64, files int, err error) {
	if !n.c.LazyFS() {
		return 0, 0, fmt.Errorf("%s: no lazy filesystem", n.Name)
	}
	out, err := n.Exec(ctx, "cat", lazyFSStatus)
	if err != nil {
		return 0, 0, err
	}
	var st struct {
		Bytes int64 `json:"unsynced_bytes"`
		Files int   `json:"unsynced_files"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		return 0, 0, fmt.Errorf("%s: lazy filesystem status %q: %w", n.Name, strings.TrimSpace(out), err)
	}
	return st.Bytes, st.Files, nil
}

func (n *Node) waitStopped(ctx context.Context, what string) error {
	w := n.c.d.ContainerWait(ctx, n.ContainerID, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case <-w.Result:
		return nil
	case err := <-w.Error:
		return fmt.Errorf("%s %s: wait: %w", what, n.Name, err)
	case <-ctx.Done():
		return fmt.Errorf("%s %s: %w", what, n.Name, ctx.Err())
	}
}

// Restart starts a killed (or exited) node again and waits until it serves
// CQL. Its clock offset file is kept, so a skewed node comes back skewed.
func (n *Node) Restart(ctx context.Context) error {
	if _, err := n.c.d.ContainerStart(ctx, n.ContainerID, client.ContainerStartOptions{}); err != nil {
		return fmt.Errorf("restart %s: %w", n.Name, err)
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		err := n.servesCQL(ctx)
		if err == nil {
			return nil
		}
		ins, ierr := n.c.d.ContainerInspect(ctx, n.ContainerID, client.ContainerInspectOptions{})
		if ierr == nil && !ins.Container.State.Running {
			return fmt.Errorf("restart %s: exited with code %d: %s", n.Name, ins.Container.State.ExitCode, lastLine(n.c.d.logsTail(ctx, n.ContainerID, 5)))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("restart %s: %w (last: %v)", n.Name, ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// SetClockOffset moves the node's wall clock (what Cassandra's
// System.currentTimeMillis returns) by d from real time, at once, through
// libfaketime's offset file; monotonic time and sleeps stay real. 0 resets it.
func (n *Node) SetClockOffset(ctx context.Context, d time.Duration) error {
	// Written aside and renamed: libfaketime rereads the file on every call
	// and must never see it half written.
	line := clockOffsetLine(d)
	script := fmt.Sprintf("printf '%%s' '%s' > %s.tmp && mv %s.tmp %s", line, faketimeFile, faketimeFile, faketimeFile)
	_, err := n.execOrPaused(ctx, []string{"sh", "-c", script}, func(string) (string, int, error) {
		// Written anew through Docker's archive API (its unpack replaces
		// the file, not atomically), which is safe only because nothing in
		// the frozen container reads it meanwhile and Unpause waits. A
		// clock fault overlapping a pause on one node is an ordinary
		// schedule.
		return "", 0, n.c.d.copyFiles(ctx, n.ContainerID, []file{{path: faketimeFile, mode: 0o644, body: []byte(line)}})
	})
	return err
}

// CopyLogs copies the node's log directory (system.log) and its container
// output (docker.log) to dir/<node>/. It works on stopped nodes too.
func (n *Node) CopyLogs(ctx context.Context, dir string) error {
	dst := filepath.Join(dir, n.Name)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("copy logs of %s: %w", n.Name, err)
	}
	var errs []error
	res, err := n.c.d.CopyFromContainer(ctx, n.ContainerID, client.CopyFromContainerOptions{SourcePath: logDir})
	if err != nil {
		errs = append(errs, fmt.Errorf("copy logs of %s: %w", n.Name, err))
	} else {
		err := untarFlat(res.Content, dst)
		res.Content.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("copy logs of %s: %w", n.Name, err))
		}
	}
	logs := n.c.d.logsTail(ctx, n.ContainerID, 100000)
	if err := os.WriteFile(filepath.Join(dst, "docker.log"), []byte(logs+"\n"), 0o644); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// untarFlat writes the regular files of a tar stream into dir, by base name.
func untarFlat(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		f, err := os.Create(filepath.Join(dir, filepath.Base(h.Name)))
		if err != nil {
			return err
		}
		_, err = io.Copy(f, tr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
}

// servesCQL checks that the node answers CQL and has bootstrapped.
func (n *Node) servesCQL(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s, err := pinnedSession(cctx, n.c.log, "", n.IP)
	if err != nil {
		return fmt.Errorf("%s: no CQL yet: %w", n.Name, err)
	}
	defer s.Close()
	var boot string
	if err := s.Query(`SELECT bootstrapped FROM system.local`).Consistency(gocql.One).ScanContext(cctx, &boot); err != nil {
		return fmt.Errorf("%s: system.local: %w", n.Name, err)
	}
	if boot != "COMPLETED" {
		return fmt.Errorf("%s: bootstrapped = %q", n.Name, boot)
	}
	return nil
}

// ringView runs nodetool status on the node: its failure detector's view of
// every node of the ring, by IP.
func (n *Node) ringView(ctx context.Context) (map[string]RingEntry, error) {
	out, err := n.Exec(ctx, binDir+"/nodetool", "status")
	if err != nil {
		return nil, err
	}
	return parseNodetoolStatus(out), nil
}

// RingEntry is one node as another node's `nodetool status` shows it.
type RingEntry struct {
	// State is "UN", "DN", "UJ" (joining), "UL" (leaving)...
	State string
	DC    string
	// HostID is the node's host ID (what `nodetool removenode` takes).
	HostID string
}

var (
	statusLineRE = regexp.MustCompile(`^([UD][NLJM])\s+(\d+\.\d+\.\d+\.\d+)\s`)
	hostIDRE     = regexp.MustCompile(`\s([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\s`)
	dcLineRE     = regexp.MustCompile(`^Datacenter: (\S+)`)
)

// parseNodetoolStatus reads the node lines of `nodetool status`, each under
// its "Datacenter:" header.
func parseNodetoolStatus(out string) map[string]RingEntry {
	view := make(map[string]RingEntry)
	dc := ""
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if m := dcLineRE.FindStringSubmatch(line); m != nil {
			dc = m[1]
			continue
		}
		if m := statusLineRE.FindStringSubmatch(line); m != nil {
			e := RingEntry{State: m[1], DC: dc}
			if id := hostIDRE.FindStringSubmatch(line + " "); id != nil {
				e.HostID = id[1]
			}
			view[m[2]] = e
		}
	}
	return view
}

// clockLine is libfaketime's offset file as it stands, read from a paused
// container too.
func (n *Node) clockLine(ctx context.Context) (string, error) {
	return n.execOrPaused(ctx, []string{"cat", faketimeFile}, func(string) (string, int, error) {
		b, err := n.c.d.readFile(ctx, n.ContainerID, faketimeFile)
		return string(b), 0, err
	})
}

// ClockOffset is the offset SetClockOffset last gave the node's clock (read
// back from libfaketime's file, so that a reset finds what an earlier
// process left).
func (n *Node) ClockOffset(ctx context.Context) (time.Duration, error) {
	out, err := n.clockLine(ctx)
	if err != nil {
		return 0, err
	}
	s, err := strconv.ParseFloat(strings.TrimSpace(out), 64)
	if err != nil {
		return 0, fmt.Errorf("clock offset of %s: %q: %w", n.Name, out, err)
	}
	return time.Duration(s * float64(time.Second)).Round(time.Microsecond), nil
}
