package sshnode

import (
	"context"
	"slices"

	"github.com/lockcheck/lockcheck/faultcap"
	"github.com/lockcheck/lockcheck/nemesis"
)

var _ nemesis.Node = (*Node)(nil)

// Capabilities are what the host can do for the fault kinds: a host always
// signals its JVM; it restarts Cassandra only with a start command; iptables
// and the clock are what Check found on it (before Check: the clock only
// with ClockStep, iptables assumed). A host has no power to cut.
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
	caps := n.static(iptables, faketime)
	n.capMu.Lock()
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
