package nemesis

import (
	"errors"
	"fmt"

	"github.com/lockcheck/lockcheck/faultcap"
)

// Capability is something a node backend can do for the fault kinds. A
// kind declares the capabilities it needs (Kind.Needs); a node declares
// the ones it has (Node.Capabilities), and a kind a node cannot serve is
// refused before the run. The capabilities, with their docs, live in the
// leaf package faultcap, which the backends (cluster, sshnode) share.
type Capability = faultcap.Capability

// The capabilities of the kinds in the table, by their nemesis names.
const (
	CapIPTables     = faultcap.IPTables
	CapClock        = faultcap.Clock
	CapSignals      = faultcap.Signals
	CapRestart      = faultcap.Restart
	CapPower        = faultcap.Power
	CapMembership   = faultcap.Membership
	CapNetDelay     = faultcap.NetDelay
	CapNetRate      = faultcap.NetRate
	CapCPU          = faultcap.CPU
	CapStall        = faultcap.Stall
	CapDiskLatency  = faultcap.DiskLatency
	CapPaxosUpgrade = faultcap.PaxosUpgrade
	CapRestore      = faultcap.Restore
	CapMaintenance  = faultcap.Maintenance
)

// Baseline are the capabilities every node backend lockcheck ships can
// offer: `all` is the kinds that need no more than these and no pins.
var Baseline = faultcap.Baseline

// missing are the capabilities of need that have lacks.
func missing(need, have []Capability) []Capability { return faultcap.Missing(need, have) }

// refusal is the one line that refuses kind on node for want of c.
func refusal(kind, node string, c Capability) error {
	doc := faultcap.Doc(c)
	if doc == "" {
		doc = "a capability its backend does not declare"
	}
	return fmt.Errorf("nemesis: %s cannot run on node %s, which lacks %q: %s", kind, node, c, doc)
}

// CheckNode says whether a node with capabilities caps can serve the node
// kinds among kinds: one line for each kind and capability it lacks (an
// unknown kind is ParseKinds's business and passes here). A backend that
// learns its capabilities by probing the host (sshnode) calls it after the
// probe; New makes the same check for every target.
func CheckNode(node string, caps []Capability, kinds []string) error {
	var errs []error
	for _, name := range kinds {
		k := lookup(name)
		if k == nil || k.Scope != ScopeNode {
			continue
		}
		for _, c := range missing(k.Needs, caps) {
			errs = append(errs, refusal(name, node, c))
		}
	}
	return errors.Join(errs...)
}

// serves says whether the node has every capability k needs.
func serves(t Target, k *Kind) bool {
	return t.Node != nil && len(missing(k.Needs, t.Node.Capabilities())) == 0
}
