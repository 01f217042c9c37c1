package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/faultcap"
	"github.com/lockcheck/lockcheck/netshape"
)

// ShaperEnv names the lockcheck-shaper binary to copy into the nodes where
// their kernel has no netem; without it, the one beside this program's
// executable, then on PATH.
const ShaperEnv = "LOCKCHECK_SHAPER_BIN"

// shaperBin is where lockcheck-shaper goes in a node.
const shaperBin = binDir + "/lockcheck-shaper"

// shapeProbeWait bounds the probe of the nodes' kernel (two docker execs).
const shapeProbeWait = 30 * time.Second

// shapeProbe is what the nodes' kernel offers to shape links: every node of
// a cluster runs on the one Docker host, so one probe answers for all.
type shapeProbe struct {
	once   sync.Once
	probed netshape.Probed
	shaper string // the shaper binary on this machine ("": none found)
	err    error
}

func (c *Cluster) probeShaping(n *Node) *shapeProbe {
	p := &c.shaping
	p.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), shapeProbeWait)
		defer cancel()
		out, err := n.NetExec(ctx, "sh", "-c", netshape.ProbeScript)
		if err != nil {
			p.err = err
			c.log.Warn("cluster: probe for link shaping failed: no net-delay nor net-rate", "node", n.Name, "err", err)
			return
		}
		p.probed = netshape.ParseProbe(out)
		p.shaper = findShaper()
	})
	return p
}

// backend is how the nodes delay packets: netem where the kernel has it,
// else the shaper on an NFQUEUE.
func (p *shapeProbe) backend() netshape.Backend {
	if p.probed.Netem {
		return netshape.Netem
	}
	return netshape.NFQueue
}

// shapeCaps are the shaping capabilities the node's kernel (and, without
// netem, the shaper binary) allow.
func (n *Node) shapeCaps() []faultcap.Capability {
	p := n.c.probeShaping(n)
	var caps []faultcap.Capability
	if p.probed.Netem || (p.probed.NFQueue && p.shaper != "") {
		caps = append(caps, faultcap.NetDelay)
	}
	if p.probed.HTB {
		caps = append(caps, faultcap.NetRate)
	}
	return caps
}

// findShaper is the lockcheck-shaper binary: ShaperEnv, beside this
// program's executable (make build puts it in bin/), or on PATH.
func findShaper() string {
	if p := os.Getenv(ShaperEnv); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
		return ""
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "lockcheck-shaper")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("lockcheck-shaper"); err == nil {
		return p
	}
	return ""
}

// Shape shapes the node's links to s.Peers as s says (netshape: added
// delay with jitter, a bandwidth limit on what the node sends them),
// replacing any shaping before: tc netem where the kernel has it, else
// lockcheck-shaper (copied in on first use) on an NFQUEUE. A zero Shape is
// an error: Unshape undoes.
func (n *Node) Shape(ctx context.Context, s netshape.Shape) error {
	p := n.c.probeShaping(n)
	if p.err != nil {
		return fmt.Errorf("shape %s: %w", n.Name, p.err)
	}
	b := p.backend()
	if b == netshape.NFQueue && s.Delay > 0 {
		if p.shaper == "" {
			return fmt.Errorf("shape %s: no netem in the kernel and no lockcheck-shaper (build it with `make build`, or set %s)", n.Name, ShaperEnv)
		}
		if err := n.copyShaper(ctx, p.shaper); err != nil {
			return err
		}
	}
	script, err := netshape.ApplyScript(s, b, shaperBin, 0)
	if err != nil {
		return fmt.Errorf("shape %s: %w", n.Name, err)
	}
	if _, err := n.Exec(ctx, "sh", "-c", script); err != nil {
		// Half a shaping is no shaping: leave none.
		_, uerr := n.Unshape(context.WithoutCancel(ctx))
		return errors.Join(fmt.Errorf("shape %s: %w", n.Name, err), uerr)
	}
	return nil
}

// copyShaper puts the shaper binary into the node unless it is there.
func (n *Node) copyShaper(ctx context.Context, path string) error {
	if _, err := n.Exec(ctx, "test", "-x", shaperBin); err == nil {
		return nil
	}
	body, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("shape %s: %w", n.Name, err)
	}
	if err := n.c.d.copyFiles(ctx, n.ContainerID, []file{{path: shaperBin, mode: 0o755, body: body}}); err != nil {
		return fmt.Errorf("shape %s: copy lockcheck-shaper: %w", n.Name, err)
	}
	return nil
}

// Unshape removes every shaping of the node's links, whatever process left
// it (the nemesis's heal and its leftover reset), and says whether it found
// any. A paused node's rules go through NetExec; its shaper, out of reach
// there, is left idle with no packet sent to it, and goes at the next
// Unshape or with the container.
func (n *Node) Unshape(ctx context.Context) (bool, error) {
	out, err := n.NetExec(ctx, "sh", "-c", netshape.UnshapeScript)
	if err != nil {
		return false, fmt.Errorf("unshape %s: %w", n.Name, err)
	}
	return netshape.Found(out), nil
}
