package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// Membership changes: a spare bootstraps into the ring and leaves it again,
// a member decommissions and bootstraps back, a killed member is replaced
// by a node taking its own address, or removed by another member and then
// bootstraps back. Each is a range movement: one at a time (memberMu).
// The starting membership is the members (WithNodes) in the ring and the
// spares (WithSpares) out of it; ResetMembership restores it whatever a
// killed harness left.

// ringDelay is Cassandra's ring delay on a cluster with spares (30 s by
// default): a bootstrap and a decommission each wait it out for the ring's
// news to spread, which on a few containers of one machine takes well under
// a second.
const ringDelay = 5 * time.Second

// nodeOptions are the node's own JVM flags (node.options): on a cluster
// with spares the shorter ring delay, and when replacing the address of the
// node it takes the place of.
func (c *Cluster) nodeOptions(replace string) []byte {
	var lines []string
	if flag := c.cfg.release().jvmFlag(c.cfg.paxos); flag != "" {
		lines = append(lines, flag) // 4.0's unsafe Paxos switch
	}
	if c.cfg.spares > 0 {
		lines = append(lines, fmt.Sprintf("-Dcassandra.ring_delay_ms=%d", ringDelay.Milliseconds()))
	}
	if replace != "" {
		lines = append(lines, "-Dcassandra.replace_address_first_boot="+replace)
	}
	if len(lines) == 0 {
		return []byte("# no flags of this node's own\n")
	}
	return []byte(strings.Join(lines, "\n") + "\n")
}

// index is the node's place in the cluster's layout (members, then spares).
func (c *Cluster) index(n *Node) int {
	return slices.IndexFunc(append(slices.Clone(c.nodes), c.spares...), func(m *Node) bool { return m.Name == n.Name })
}

// IsSpare says whether the node was a spare at the start.
func (n *Node) IsSpare() bool { return slices.Contains(n.c.spares, n) }

// Ring is the ring as a running member sees it (nodetool status): node
// name -> state ("UN", "UJ" joining, "UL" leaving, "DN"...). A node that is
// not in the ring is absent.
func (c *Cluster) Ring(ctx context.Context) (map[string]string, error) {
	view, err := c.ringView(ctx, nil)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, n := range append(slices.Clone(c.nodes), c.spares...) {
		if e, ok := view[n.IP]; ok {
			out[n.Name] = e.State
		}
	}
	return out, nil
}

// ringView asks the running members in turn, but not skip, for their view.
func (c *Cluster) ringView(ctx context.Context, skip *Node) (map[string]RingEntry, error) {
	var errs []error
	for _, n := range append(slices.Clone(c.nodes), c.spares...) {
		if n == skip {
			continue
		}
		// Every node's reason is kept, so that the error says why none
		// answered (a docker inspect that times out under load, a spare).
		st, err := n.State(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if st != string(container.StateRunning) {
			errs = append(errs, fmt.Errorf("%s is %s", n.Name, st))
			continue
		}
		vctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		view, err := n.ringView(vctx)
		cancel()
		if err == nil && len(view) > 0 {
			return view, nil
		}
		if err == nil {
			err = fmt.Errorf("%s: nodetool status listed no node", n.Name)
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("cluster %s: no running node to ask about the ring: %w", c.cfg.name, errors.Join(errs...))
}

// Ring is the ring as the cluster's running nodes see it (Cluster.Ring).
func (n *Node) Ring(ctx context.Context) (map[string]string, error) { return n.c.Ring(ctx) }

// ResetMembership brings the node's cluster back to its starting
// membership (Cluster.ResetMembership).
func (n *Node) ResetMembership(ctx context.Context) (bool, error) { return n.c.ResetMembership(ctx) }

// Join bootstraps the node (a spare, or a member out of the ring) into the
// ring from empty data and returns when the ring holds it UN.
func (n *Node) Join(ctx context.Context) error {
	n.c.memberMu.Lock()
	defer n.c.memberMu.Unlock()
	return n.bootstrap(ctx, "")
}

// bootstrap stops the node if it runs, starts it from empty data as a
// joining node (replace: taking that address's place) and waits until the
// ring holds it UN and it serves CQL; then it puts back its own files for
// a later restart (a member's auto_bootstrap false, no replace flag).
func (n *Node) bootstrap(ctx context.Context, replace string) error {
	c := n.c
	i := c.index(n)
	if i < 0 {
		return fmt.Errorf("bootstrap %s: not a node of cluster %s", n.Name, c.cfg.name)
	}
	if st, err := n.State(ctx); err != nil {
		return err
	} else if st == string(container.StateRunning) || st == string(container.StatePaused) {
		if st == string(container.StatePaused) {
			_ = n.Unpause(ctx)
		}
		if _, err := c.d.ContainerKill(ctx, n.ContainerID, client.ContainerKillOptions{Signal: "SIGKILL"}); err != nil {
			return fmt.Errorf("bootstrap %s: stop: %w", n.Name, err)
		}
		if err := n.waitStopped(ctx, "bootstrap"); err != nil {
			return err
		}
	}
	own := nodeConfigs(c.cfg, c.layout)[i]
	if err := n.writeConfig(ctx, own.joining(), replace, true); err != nil {
		return err
	}
	if _, err := c.d.ContainerStart(ctx, n.ContainerID, client.ContainerStartOptions{}); err != nil {
		return fmt.Errorf("bootstrap %s: start: %w", n.Name, err)
	}
	return n.joined(ctx)
}

// joined waits until the ring holds the bootstrapping node UN and it
// serves CQL, then puts back its own files for a later restart (a
// member's auto_bootstrap false, no replace flag). A bootstrap that
// failed (bootstrapFailed) is an error at once, not a wait to the end of
// ctx: the node would stay joining for ever.
func (n *Node) joined(ctx context.Context) error {
	c := n.c
	err := n.waitRingOr(ctx, func(e RingEntry, in bool) bool { return in && e.State == "UN" }, func() error {
		// The log is read from the container's start: every few seconds.
		if why, failed := n.bootstrapFailed(ctx); failed {
			return fmt.Errorf("%w: %s", ErrMovementFailed, why)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("bootstrap %s: %w", n.Name, err)
	}
	for {
		if err := n.servesCQL(ctx); err == nil {
			break
		} else if ctx.Err() != nil {
			return fmt.Errorf("bootstrap %s: %w", n.Name, err)
		}
		time.Sleep(time.Second)
	}
	// A member restarts later (kill) as the member it is; a spare keeps
	// its joining configuration.
	i := c.index(n)
	back := nodeConfigs(c.cfg, c.layout)[i]
	if i < c.cfg.nodes {
		back.AutoBootstrap = false
	}
	return n.writeConfig(ctx, back, "", false)
}

// What Cassandra logs (StorageService) when a bootstrap's streaming fails,
// a node it streams from killed: the node stays joining (UJ), serves no
// CQL, and `nodetool bootstrap resume` streams what is missing. A resume
// that fails again logs the second line; one that starts, the third.
const (
	logStreamFailed  = "Some data streaming failed"
	logResumeFailed  = "Error during bootstrap"
	logResumeStarted = "Resuming bootstrap"
)

// bootstrapFailed says whether the node's bootstrap has failed since its
// container last started, and why: the container exited (a node it needed
// to stream from was down when it began: strict range movement refuses to
// start), or its last bootstrap attempt logged a failed stream.
func (n *Node) bootstrapFailed(ctx context.Context) (string, bool) {
	ins, err := n.c.d.ContainerInspect(ctx, n.ContainerID, client.ContainerInspectOptions{})
	if err != nil {
		return "", false
	}
	st := ins.Container.State
	if !st.Running {
		return fmt.Sprintf("exited with code %d: %s", st.ExitCode, lastLine(n.c.d.logsTail(ctx, n.ContainerID, 5))), true
	}
	why := bootstrapFailure(n.c.d.logsSince(ctx, n.ContainerID, st.StartedAt))
	return why, why != ""
}

// bootstrapFailure is the line of a node's log that says its last
// bootstrap attempt failed, or "" when none did (or a resume began after
// it).
func bootstrapFailure(log string) string {
	why := ""
	for line := range strings.Lines(log) {
		switch {
		case strings.Contains(line, logStreamFailed), strings.Contains(line, logResumeFailed):
			why = strings.TrimSpace(line)
		case strings.Contains(line, logResumeStarted):
			why = ""
		}
	}
	return why
}

// wholeWait bounds how long a movement waits for the ring to be whole: a
// killed node restarts in well under a minute, and a leftover heal's
// restarts run beside it.
const wholeWait = 3 * time.Minute

// waitWhole waits until every node in the ring other than skip is up (its
// state U*), as an operator waits before a range movement: a bootstrap
// with strict consistency refuses to start without the nodes it streams
// from, and a stream to or from a dead node fails. It gives up after
// wholeWait and returns the ring's states then, for the movement to try.
func (c *Cluster) waitWhole(ctx context.Context, skip *Node) error {
	wctx, cancel := context.WithTimeout(ctx, wholeWait)
	defer cancel()
	err := c.pollRing(wctx, skip, func(view map[string]RingEntry) error {
		var down []string
		for ip, e := range view {
			if (skip == nil || ip != skip.IP) && !strings.HasPrefix(e.State, "U") {
				down = append(down, ip+" "+e.State)
			}
		}
		if len(down) == 0 {
			return nil
		}
		slices.Sort(down)
		return fmt.Errorf("not up: %s", strings.Join(down, ", "))
	}, nil)
	if err != nil {
		return fmt.Errorf("cluster %s: ring not whole: %w", c.cfg.name, err)
	}
	return nil
}

// WaitWhole waits until every node in the ring other than n is up
// (Cluster.waitWhole).
func (n *Node) WaitWhole(ctx context.Context) error { return n.c.waitWhole(ctx, n) }

// Finish completes a movement of the node that failed, the way an operator
// would, once the ring is whole again: into the ring (in) or out of it. A
// bootstrap left joining resumes on 4.x (nodetool bootstrap resume: it
// streams what is missing) and starts again from empty data on 5.0, which
// refuses the resume (Version.ResumesBootstrap); a node whose bootstrap never began
// (it exited) bootstraps again from empty data; a decommission left leaving runs again
// (CASSANDRA-12008: it resumes). It says what it did.
func (n *Node) Finish(ctx context.Context, in bool) (string, error) {
	n.c.memberMu.Lock()
	defer n.c.memberMu.Unlock()
	if err := n.c.waitWhole(ctx, n); err != nil {
		n.c.log.Warn("finishing a movement on a ring not whole", "node", n.Name, "err", err)
	}
	if in {
		return n.finishJoin(ctx)
	}
	return n.finishLeave(ctx)
}

func (n *Node) finishJoin(ctx context.Context) (string, error) {
	view, err := n.c.ringView(ctx, n)
	if err != nil {
		return "", err
	}
	e, in := view[n.IP]
	st, _ := n.State(ctx)
	switch {
	case in && st == string(container.StateRunning) && e.State == "UN":
		return "none: it had joined", n.joined(ctx)
	case in && st == string(container.StateRunning) && e.State == "UJ":
		if _, failed := n.bootstrapFailed(ctx); !failed {
			return "none: it was still joining", n.joined(ctx)
		}
		if !n.c.cfg.release().ResumesBootstrap {
			return "bootstrap again from empty data", n.bootstrap(ctx, "")
		}
		if _, err := n.Nodetool(ctx, "bootstrap", "resume"); err != nil {
			return "nodetool bootstrap resume", fmt.Errorf("bootstrap %s: resume: %w", n.Name, err)
		}
		return "nodetool bootstrap resume", n.joined(ctx)
	default:
		return "bootstrap again from empty data", n.bootstrap(ctx, "")
	}
}

func (n *Node) finishLeave(ctx context.Context) (string, error) {
	view, err := n.c.ringView(ctx, n)
	if err != nil {
		return "", err
	}
	st, _ := n.State(ctx)
	if _, in := view[n.IP]; !in {
		if st == string(container.StateRunning) {
			return "none: it had left", n.stop(ctx)
		}
		return "none: it had left", nil
	}
	how := "nodetool decommission again (it resumes)"
	if st != string(container.StateRunning) {
		// Killed while leaving: it starts again as the member it is.
		if err := n.Restart(ctx); err != nil {
			return "restart, then decommission again", err
		}
		how = "restart, then decommission again"
	}
	if err := n.decommission(ctx); err != nil {
		// One still running (a killed harness's) refuses a second: let it
		// end, for as long as a decommission here takes; one that failed
		// again is the error.
		wctx, cancel := context.WithTimeout(ctx, wholeWait)
		werr := n.waitRing(wctx, func(_ RingEntry, in bool) bool { return !in })
		cancel()
		if werr != nil {
			return how, err
		}
		return "none: its decommission was still running", n.stop(ctx)
	}
	return how, nil
}

// writeConfig writes the node's cassandra.yaml and node.options (and the
// marker that makes the entrypoint start from empty data).
func (n *Node) writeConfig(ctx context.Context, nc nodeConfig, replace string, wipe bool) error {
	yaml, err := renderYAML(nc)
	if err != nil {
		return err
	}
	files := []file{
		{path: confDir + "/cassandra.yaml", mode: 0o644, body: yaml},
		{path: confDir + "/node.options", mode: 0o644, body: n.c.nodeOptions(replace)},
	}
	if wipe {
		files = append(files, file{path: confDir + "/wipe", mode: 0o644, body: []byte("start from empty data\n")})
	}
	if err := n.c.d.copyFiles(ctx, n.ContainerID, files); err != nil {
		return fmt.Errorf("%s: %w", n.Name, err)
	}
	return nil
}

// waitRing waits until another running node's view of n meets ok (in: n
// is in the ring at all).
func (n *Node) waitRing(ctx context.Context, ok func(e RingEntry, in bool) bool) error {
	return n.waitRingOr(ctx, ok, nil)
}

// waitRingOr is waitRing that gives up at once when failed says so.
func (n *Node) waitRingOr(ctx context.Context, ok func(e RingEntry, in bool) bool, failed func() error) error {
	return n.c.pollRing(ctx, n, func(view map[string]RingEntry) error {
		e, in := view[n.IP]
		if ok(e, in) {
			return nil
		}
		return fmt.Errorf("ring has %s as %q (in the ring: %v)", n.Name, e.State, in)
	}, failed)
}

// pollRing reads the ring (through a node other than skip) every second
// until check passes (returns nil), and returns ctx's error with check's
// last complaint when ctx ends first. Every fifth read it asks failed, when
// given, whether to give up at once with its error (a bootstrap that
// failed would keep the node joining for ever).
func (c *Cluster) pollRing(ctx context.Context, skip *Node, check func(view map[string]RingEntry) error, failed func() error) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var last error
	for i := 0; ; i++ {
		view, err := c.ringView(ctx, skip)
		if err == nil {
			if last = check(view); last == nil {
				return nil
			}
		} else {
			last = err
		}
		if failed != nil && i%5 == 4 {
			if err := failed(); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// Decommission streams the node's ranges to the others (nodetool
// decommission), waits until the ring no longer holds it, and stops its
// container: the node is out of the ring until Join.
func (n *Node) Decommission(ctx context.Context) error {
	n.c.memberMu.Lock()
	defer n.c.memberMu.Unlock()
	return n.decommission(ctx)
}

func (n *Node) decommission(ctx context.Context) error {
	// --force: Cassandra's own system_distributed keyspace has RF 3, and a
	// ring of 3 could not lose a member otherwise; lockcheck's keyspace
	// keeps a factor the remaining nodes hold (WithSpares' default).
	if _, err := n.Exec(ctx, binDir+"/nodetool", "decommission", "--force"); err != nil {
		return fmt.Errorf("decommission %s: %w", n.Name, err)
	}
	if err := n.waitRing(ctx, func(_ RingEntry, in bool) bool { return !in }); err != nil {
		return fmt.Errorf("decommission %s: %w", n.Name, err)
	}
	return n.stop(ctx)
}

// stop stops the node's container (SIGTERM: a node out of the ring has
// nothing to lose).
func (n *Node) stop(ctx context.Context) error {
	if _, err := n.c.d.ContainerStop(ctx, n.ContainerID, client.ContainerStopOptions{}); err != nil {
		return fmt.Errorf("stop %s: %w", n.Name, err)
	}
	return n.waitStopped(ctx, "stop")
}

// Replace kills the node and starts it from empty data in its own place
// (-Dcassandra.replace_address_first_boot with its own address): it
// streams its ranges from the others and the ring holds it UN again.
func (n *Node) Replace(ctx context.Context) error {
	n.c.memberMu.Lock()
	defer n.c.memberMu.Unlock()
	if err := n.Kill(ctx); err != nil {
		return err
	}
	// The others must see it down first, or the replacement is refused as
	// an address still alive.
	if err := n.waitRing(ctx, func(e RingEntry, in bool) bool { return in && e.State == "DN" }); err != nil {
		return fmt.Errorf("replace %s: %w", n.Name, err)
	}
	return n.bootstrap(ctx, n.IP)
}

// Remove kills the node, has another member remove it from the ring
// (nodetool removenode: the others stream its ranges among themselves) and
// leaves it out of the ring until Join.
func (n *Node) Remove(ctx context.Context) error {
	n.c.memberMu.Lock()
	defer n.c.memberMu.Unlock()
	if err := n.Kill(ctx); err != nil {
		return err
	}
	var id string
	if err := n.waitRing(ctx, func(e RingEntry, in bool) bool { id = e.HostID; return in && e.State == "DN" && id != "" }); err != nil {
		return fmt.Errorf("remove %s: %w", n.Name, err)
	}
	for _, m := range n.c.nodes {
		if m == n {
			continue
		}
		if st, err := m.State(ctx); err != nil || st != string(container.StateRunning) {
			continue
		}
		if _, err := m.Exec(ctx, binDir+"/nodetool", "removenode", id); err != nil {
			return fmt.Errorf("remove %s: %w", n.Name, err)
		}
		return n.waitRing(ctx, func(_ RingEntry, in bool) bool { return !in })
	}
	return fmt.Errorf("remove %s: no running member to remove it", n.Name)
}

// MembershipFaults says what keeps the ring from its starting membership,
// one phrase each ("n2 out of the ring", "n4 (a spare) in the ring"); none
// when every member is in it and no spare is.
func (c *Cluster) MembershipFaults(ctx context.Context) ([]string, error) {
	ring, err := c.Ring(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range c.nodes {
		if _, in := ring[n.Name]; !in {
			out = append(out, n.Name+" out of the ring")
		}
	}
	for _, n := range c.spares {
		if st, in := ring[n.Name]; in {
			out = append(out, fmt.Sprintf("%s (a spare) in the ring, %s", n.Name, st))
		}
	}
	return out, nil
}

// ResetMembership brings the ring back to its starting membership: a spare
// in it leaves (decommission, container stopped), a member out of it
// bootstraps back. It asks the ring, so it undoes what a killed harness
// left, and it is harmless on a ring as it started. It says whether it
// changed anything.
func (c *Cluster) ResetMembership(ctx context.Context) (bool, error) {
	c.memberMu.Lock()
	defer c.memberMu.Unlock()
	if len(c.spares) == 0 {
		return false, nil
	}
	ring, err := c.Ring(ctx)
	if err != nil {
		return false, err
	}
	changed := false
	var errs []error
	for _, n := range c.spares {
		st, in := ring[n.Name]
		running, _ := n.State(ctx)
		switch {
		case in:
			changed = true
			// A join the harness left half done, or a bootstrap a killed
			// node failed, finishes first (a joining node cannot
			// decommission); so does a decommission that failed.
			if st != "UN" {
				_ = c.waitWhole(ctx, n)
				if leaving(st) {
					if _, err := n.finishLeave(ctx); err != nil {
						errs = append(errs, err)
					}
					continue
				}
				if _, err := n.finishJoin(ctx); err != nil {
					errs = append(errs, err)
					continue
				}
			}
			if err := n.decommission(ctx); err != nil {
				errs = append(errs, err)
			}
		case running == string(container.StateRunning):
			changed = true
			if err := n.stop(ctx); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, n := range c.nodes {
		st, in := ring[n.Name]
		if in && !leaving(st) {
			continue
		}
		if in { // a decommission left running or failed: let it end, or run it again
			_ = c.waitWhole(ctx, n)
			if _, err := n.finishLeave(ctx); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		changed = true
		if err := n.bootstrap(ctx, ""); err != nil {
			errs = append(errs, err)
		}
	}
	return changed, errors.Join(errs...)
}

// leaving says whether a node's state in the ring is leaving: UL, or DL
// when it was killed meanwhile (it restarts as a member, whose leave
// finishLeave runs again).
func leaving(state string) bool { return state == "UL" || state == "DL" }
