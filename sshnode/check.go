package sshnode

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockcheck/lockcheck/nemesis"
)

var _ nemesis.Node = (*Node)(nil)

// Check says whether the host can serve the fault kinds, before any starts:
// a host without iptables, a kill with no start command, a clock fault on a
// JVM without libfaketime (and no clock steps allowed) is one clear error.
func (n *Node) Check(ctx context.Context, kinds []string) error {
	pid, err := n.jvm(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, k := range kinds {
		if nemesis.ScopeOf(k) != nemesis.ScopeNode {
			continue
		}
		switch k {
		case nemesis.Partition, nemesis.Loss:
			if _, err := n.Exec(ctx, "iptables", "-w", "-S", "INPUT"); err != nil {
				errs = append(errs, fmt.Errorf("%s needs iptables on %s (as root, or sudo -n): %w", k, n.Name, err))
			}
		case nemesis.Kill:
			if n.cfg.StartCmd == "" {
				errs = append(errs, fmt.Errorf("kill needs --ssh-start-cmd (e.g. \"systemctl start cassandra\") to restart %s", n.Name))
			}
		case nemesis.Clock:
			if pid == 0 {
				break
			}
			f, err := n.faketimeFile(ctx)
			if err != nil {
				errs = append(errs, err)
			} else if f == "" && !n.cfg.ClockStep {
				errs = append(errs, fmt.Errorf("clock: the Cassandra JVM on %s does not run under libfaketime (LD_PRELOAD and FAKETIME_TIMESTAMP_FILE); --ssh-clock-step steps the host's clock instead (README: the risk)", n.Name))
			}
		}
	}
	if pid == 0 && len(errs) == 0 && nemesis.AnyNodeKind(kinds) {
		// A stopped node is what leftover healing restarts: only say so.
		n.cfg.Log.Warn("no Cassandra JVM runs on the host", "node", n.Name)
	}
	return errors.Join(errs...)
}
