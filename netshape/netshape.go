// Package netshape is the shaping of a node's links, as Jepsen's
// net/shape! is: one value (Shape: added latency with jitter, a bandwidth
// limit) for what a node sends to chosen peers, applied by one backend
// method (cluster.Node.Shape, sshnode.Node.Shape) and undone by another
// (Unshape). It holds the value, its validation and the shell scripts the
// backends run in the node (through docker exec or SSH), so that a Docker
// node and a host shape alike. A leaf: it imports nothing of lockcheck.
//
// The shaping is egress: what the node sends to the peers waits (a node's
// requests to the replicas, its responses to the clients), as tc netem
// shapes. Two mechanisms, probed per node (Probe):
//
//   - tc: an HTB root qdisc of lockcheck's own handle (4c43:) with one
//     class for the peers' traffic (u32 filters on their addresses) and its
//     rate; on a kernel with netem, a netem qdisc under it adds the delay;
//   - nfqueue (a kernel without netem, such as the development machines'):
//     an iptables chain LOCKCHECK-SHAPE, jumped to from OUTPUT, sends the
//     packets to the peers to an NFQUEUE that lockcheck-shaper (copied into
//     the node) serves, holding each for the delay plus or minus the jitter.
//     --queue-bypass and the shaper's fail-open make a dead or full shaper
//     pass packets: a delay, never a loss.
//
// Unshape removes both, whatever an earlier, possibly killed, process left.
package netshape

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Shape is how a node's links to Peers are shaped: every packet the node
// sends to one of them waits Delay plus or minus a uniform Jitter (order
// kept per flow), and the whole of it goes at most Rate bits per second
// (zero: unlimited). The zero Shape shapes nothing.
type Shape struct {
	// Peers are the addresses whose links are shaped (IPv4).
	Peers  []string
	Delay  time.Duration
	Jitter time.Duration
	// RateKbit is the bandwidth limit in kbit/s (0: none).
	RateKbit int
}

// Validate says what makes no sense in s, in one line: no peers, a
// negative delay or jitter, a jitter above the delay, a negative rate, or
// nothing shaped.
func (s Shape) Validate() error {
	if len(s.Peers) == 0 {
		return errors.New("netshape: no peers to shape the links to")
	}
	for _, p := range s.Peers {
		if a, err := netip.ParseAddr(p); err != nil || !a.Is4() {
			return fmt.Errorf("netshape: peer %q is not an IPv4 address", p)
		}
	}
	return ValidateBounds(s.Delay, s.Jitter, s.RateKbit, s.RateKbit == 0)
}

// ValidateBounds is the check of a shaping's numbers, shared by the kinds'
// options: delay and jitter not negative, jitter at most the delay, the rate
// positive unless rateOff, and something shaped.
func ValidateBounds(delay, jitter time.Duration, rateKbit int, rateOff bool) error {
	switch {
	case delay < 0:
		return fmt.Errorf("netshape: delay %s is negative", delay)
	case jitter < 0:
		return fmt.Errorf("netshape: jitter %s is negative", jitter)
	case jitter > delay:
		return fmt.Errorf("netshape: jitter %s is above the delay %s", jitter, delay)
	case rateKbit < 0 || (!rateOff && rateKbit == 0):
		return fmt.Errorf("netshape: rate %d kbit/s must be positive", rateKbit)
	case delay == 0 && rateKbit == 0:
		return errors.New("netshape: neither a delay nor a rate: nothing to shape")
	}
	return nil
}

// Backend is how a node delays packets.
type Backend string

const (
	// Netem: tc netem under the HTB class (most kernels; hosts over SSH).
	Netem Backend = "netem"
	// NFQueue: lockcheck-shaper on an NFQUEUE (a kernel without netem).
	NFQueue Backend = "nfqueue"
)

// Names of what the backends leave in a node: Unshape finds them there.
const (
	// Handle is the HTB root qdisc's handle (hex "LC"), lockcheck's own:
	// Unshape deletes a root qdisc with it and no other.
	Handle = "4c43"
	// Chain is the iptables chain of the NFQUEUE rules, jumped to from
	// OUTPUT (egress: a node's own sends).
	Chain = "LOCKCHECK-SHAPE"
	// Queue is the NFQUEUE number.
	Queue = 4243
	// PIDFile is where lockcheck-shaper writes its pid once bound.
	PIDFile = "/run/lockcheck-shaper.pid"
	// LogFile is where the shaper's output goes in the node.
	LogFile = "/tmp/lockcheck-shaper.log"
)

// ProbeScript prints "netem" when the kernel takes a netem qdisc and "htb"
// when it takes an HTB one (each tried on lo with lockcheck's handle and
// removed at once), and "nfqueue" when the kernel serves NFQUEUE.
const ProbeScript = `h=4c4f
if tc qdisc add dev lo root handle $h: netem delay 1ms 2>/dev/null; then tc qdisc del dev lo root handle $h: 2>/dev/null; echo netem; fi
if tc qdisc add dev lo root handle $h: htb 2>/dev/null; then tc qdisc del dev lo root handle $h: 2>/dev/null; echo htb; fi
if [ -e /proc/net/netfilter/nfnetlink_queue ]; then echo nfqueue; fi
true`

// Probed is what ProbeScript's output says the node can do.
type Probed struct{ Netem, HTB, NFQueue bool }

// ParseProbe reads ProbeScript's output.
func ParseProbe(out string) Probed {
	var p Probed
	for _, f := range strings.Fields(out) {
		switch f {
		case "netem":
			p.Netem = true
		case "htb":
			p.HTB = true
		case "nfqueue":
			p.NFQueue = true
		}
	}
	return p
}

// UnshapeScript removes every shaping lockcheck leaves in a node (the HTB
// root qdisc of Handle on any device, the chain and its jumps, the shaper)
// and prints "shaped" for each it found: harmless on a node never shaped.
// The chain goes before the shaper stops, so that no packet is queued to a
// shaper that is gone (the bypass would pass it anyway).
const UnshapeScript = `for d in $(ls /sys/class/net); do
  if tc qdisc show dev "$d" root 2>/dev/null | grep -q "qdisc htb ` + Handle + `: "; then tc qdisc del dev "$d" root && echo shaped; fi
done
if iptables -w -S ` + Chain + ` >/dev/null 2>&1; then
  iptables -w -F ` + Chain + `
  while iptables -w -D OUTPUT -j ` + Chain + ` 2>/dev/null; do :; done
  iptables -w -X ` + Chain + ` && echo shaped
fi
if [ -s ` + PIDFile + ` ]; then
  p=$(cat ` + PIDFile + `)
  if kill -TERM "$p" 2>/dev/null; then
    i=0; while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
    kill -KILL "$p" 2>/dev/null || true
    echo shaped
  fi
  rm -f ` + PIDFile + `
fi
true`

// StateScript prints what shaping a node holds, changing nothing: "tc"
// for lockcheck's root qdisc on a device, "shaper" for a live
// lockcheck-shaper (the chain is an iptables rule like any other).
const StateScript = `for d in $(ls /sys/class/net); do
  tc qdisc show dev "$d" root 2>/dev/null | grep -q "qdisc htb ` + Handle + `: " && echo tc
done
[ -s ` + PIDFile + ` ] && kill -0 "$(cat ` + PIDFile + `)" 2>/dev/null && echo shaper
true`

// State reads StateScript's output as phrases for a node's faults.
func State(out string) []string {
	var phrases []string
	for _, f := range strings.Fields(out) {
		switch f {
		case "tc":
			phrases = append(phrases, "links shaped (tc)")
		case "shaper":
			phrases = append(phrases, "lockcheck-shaper running")
		}
	}
	return phrases
}

// Found says whether UnshapeScript's output found anything to remove.
func Found(out string) bool { return strings.Contains(out, "shaped") }

// ApplyScript is the script that shapes the node as s says, on backend b
// (shaper: lockcheck-shaper's path in the node, for NFQueue), after
// UnshapeScript's clearing: a Shape replaces the node's whole shaping.
// controlPort, when positive, is a TCP port whose sends are never shaped
// (sshnode's SSH: a shaping must not slow the harness's own heal).
func ApplyScript(s Shape, b Backend, shaper string, controlPort int) (string, error) {
	if err := s.Validate(); err != nil {
		return "", err
	}
	if b == NFQueue && s.Delay > 0 && shaper == "" {
		return "", errors.New("netshape: the nfqueue backend needs lockcheck-shaper in the node")
	}
	var w strings.Builder
	line := func(format string, a ...any) { fmt.Fprintf(&w, format+"\n", a...) }
	line("%s >/dev/null", UnshapeScript)
	line("set -e")
	netem := b == Netem && s.Delay > 0
	if s.RateKbit > 0 || netem {
		// The device that reaches the peers (eth0 in a Docker node).
		line(`dev=$(ip -o route get %s | sed -n 's/.* dev \([^ ]*\).*/\1/p')`, s.Peers[0])
		line(`[ -n "$dev" ]`)
		rate := "10gbit"
		if s.RateKbit > 0 {
			rate = strconv.Itoa(s.RateKbit) + "kbit"
		}
		line(`tc qdisc add dev "$dev" root handle %s: htb default 1`, Handle)
		line(`tc class add dev "$dev" parent %s: classid %s:1 htb rate 10gbit`, Handle, Handle)
		line(`tc class add dev "$dev" parent %s: classid %s:2 htb rate %s ceil %s`, Handle, Handle, rate, rate)
		if netem {
			line(`tc qdisc add dev "$dev" parent %s:2 handle 4c44: netem delay %dus %dus`, Handle,
				s.Delay.Microseconds(), s.Jitter.Microseconds())
		}
		if controlPort > 0 {
			line(`tc filter add dev "$dev" parent %s: protocol ip prio 1 u32 match ip sport %d 0xffff flowid %s:1`, Handle, controlPort, Handle)
		}
		for _, p := range s.Peers {
			line(`tc filter add dev "$dev" parent %s: protocol ip prio 2 u32 match ip dst %s/32 flowid %s:2`, Handle, p, Handle)
		}
	}
	if b == NFQueue && s.Delay > 0 {
		// The shaper first, bound before any packet is queued to it.
		line(`setsid %s -queue %d -delay %s -jitter %s -pidfile %s </dev/null >>%s 2>&1 &`,
			shaper, Queue, s.Delay, s.Jitter, PIDFile, LogFile)
		line(`i=0; while [ ! -s %s ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done`, PIDFile)
		line(`[ -s %s ] || { cat %s >&2; exit 1; }`, PIDFile, LogFile)
		line(`iptables -w -N %s`, Chain)
		if controlPort > 0 {
			line(`iptables -w -A %s -p tcp --sport %d -j RETURN`, Chain, controlPort)
		}
		line(`iptables -w -A %s -d %s -j NFQUEUE --queue-num %d --queue-bypass`, Chain, strings.Join(s.Peers, ","), Queue)
		line(`iptables -w -I OUTPUT -j %s`, Chain)
	}
	return w.String(), nil
}
