package sshnode

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/lockcheck/lockcheck/faultcap"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/netshape"
)

var _ nemesis.Node = (*Node)(nil)

// Capabilities are what the host can do for the fault kinds: a host always
// signals its JVM; it restarts Cassandra only with a start command; iptables
// and the clock are what Check found on it (before Check: the clock only
// with ClockStep, iptables assumed). A host has no power to cut, and its
// data directories are the operator's: no restore.
func (n *Node) Capabilities() []faultcap.Capability {
	n.capMu.Lock()
	defer n.capMu.Unlock()
	if n.caps != nil {
		return slices.Clone(n.caps)
	}
	return n.static(true, false)
}

// static are the capabilities the configuration decides, with what a probe
// found of iptables and libfaketime.
func (n *Node) static(iptables, faketime bool) []faultcap.Capability {
	caps := []faultcap.Capability{faultcap.Signals}
	if iptables {
		caps = append(caps, faultcap.IPTables)
	}
	if faketime || n.cfg.ClockStep {
		caps = append(caps, faultcap.Clock)
	}
	if n.cfg.StartCmd != "" {
		caps = append(caps, faultcap.Restart)
	}
	if n.shaping.Netem {
		caps = append(caps, faultcap.NetDelay)
	}
	if n.shaping.HTB {
		caps = append(caps, faultcap.NetRate)
	}
	return caps
}

// Check probes the host for its capabilities (iptables as root, the JVM's
// libfaketime) and says whether it can serve the fault kinds, before any
// starts: a kind it cannot serve is one line naming the kind, the host and
// what it lacks (nemesis.CheckNode).
func (n *Node) Check(ctx context.Context, kinds []string) error {
	pid, err := n.jvm(ctx)
	if err != nil {
		return err
	}
	iptables := true
	ipErr := error(nil)
	if _, ipErr = n.Exec(ctx, "iptables", "-w", "-S", "INPUT"); ipErr != nil {
		iptables = false
	}
	// Without a JVM nothing tells whether it will run under libfaketime:
	// a stopped node is what leftover healing restarts, so the clock is
	// taken on trust and a fault that cannot move it fails at its start.
	faketime := pid == 0
	if pid != 0 {
		f, err := n.faketimeFile(ctx)
		if err != nil {
			return err
		}
		faketime = f != ""
	}
	// The kernel's qdiscs, tried on lo and removed at once: a host shapes
	// with tc netem and htb, or not at all.
	if out, err := n.Exec(ctx, "sh", "-c", netshape.ProbeScript); err == nil {
		n.capMu.Lock()
		n.shaping = netshape.ParseProbe(out)
		n.capMu.Unlock()
	}
	n.capMu.Lock()
	caps := n.static(iptables, faketime)
	n.caps = caps
	n.capMu.Unlock()
	if err := nemesis.CheckNode(n.Name, caps, kinds); err != nil {
		if ipErr != nil {
			// Why iptables failed (sudo wants a password, no binary) is
			// the user's next step.
			n.cfg.Log.Warn("iptables failed on the host", "node", n.Name, "err", ipErr)
		}
		return err
	}
	if pid == 0 && nemesis.AnyNodeKind(kinds) {
		// A stopped node is what leftover healing restarts: only say so.
		n.cfg.Log.Warn("no Cassandra JVM runs on the host", "node", n.Name)
	}
	return nil
}

// Shape shapes the host's links to s.Peers with tc (htb, netem under it),
// its SSH port's sends left out: the netem backend only, since a host gets
// no shaper binary (Check declares net-delay only where netem is).
func (n *Node) Shape(ctx context.Context, s netshape.Shape) error {
	script, err := netshape.ApplyScript(s, netshape.Netem, "", n.ControlPort())
	if err != nil {
		return fmt.Errorf("shape %s: %w", n.Name, err)
	}
	if _, err := n.Exec(ctx, "sh", "-c", script); err != nil {
		_, uerr := n.Unshape(context.WithoutCancel(ctx))
		return errors.Join(fmt.Errorf("shape %s: %w", n.Name, err), uerr)
	}
	return nil
}

// Unshape removes lockcheck's shaping of the host's links (its own qdisc
// handle and chain only) and says whether it found any.
func (n *Node) Unshape(ctx context.Context) (bool, error) {
	out, err := n.Exec(ctx, "sh", "-c", netshape.UnshapeScript)
	if err != nil {
		return false, fmt.Errorf("unshape %s: %w", n.Name, err)
	}
	return netshape.Found(out), nil
}
