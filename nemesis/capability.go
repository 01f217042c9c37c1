package nemesis

import (
	"errors"
	"fmt"
	"slices"
)

// Capability is something a node backend can do for the fault kinds. A
// kind declares the capabilities it needs (Kind.Needs); a node declares
// the ones it has (Node.Capabilities), and a kind a node cannot serve is
// refused before the run. A capability is a plain string so that a backend
// importing nothing of lockcheck (package cluster) can declare its own.
type Capability = string

// The capabilities of the kinds in the table. A kind needing a new node
// action declares its capability in its own file, with NewCapability
// (issue 22's membership kinds: "membership").
var (
	CapIPTables = NewCapability("iptables",
		"iptables as root (a Docker node always, paused too; a host over SSH as root or with sudo -n)")
	CapClock = NewCapability("clock",
		"move the Cassandra JVM's clock (libfaketime in a Docker node, paused too; over SSH libfaketime on the JVM, or --ssh-clock-step)")
	CapSignals = NewCapability("signals",
		"freeze and resume the node or its JVM (SIGSTOP/SIGCONT; a Docker node also docker pause)")
	CapRestart = NewCapability("restart",
		"kill Cassandra and start it again (a Docker node always; a host over SSH with --ssh-start-cmd)")
	CapPower = NewCapability("power",
		"cut the node's power, losing its unsynced writes (a cluster of `lockcheck cluster up --lazyfs`)")
)

// capabilityDocs say what each capability is and how a node gets it: the
// refusal's line and the fault reference.
var capabilityDocs = map[Capability]string{}

// NewCapability declares a capability and what it lets a node do (and how
// a node gets it), for the refusal's line and the fault reference.
func NewCapability(name, doc string) Capability {
	if _, dup := capabilityDocs[name]; dup {
		panic("nemesis: capability " + name + " declared twice")
	}
	capabilityDocs[name] = doc
	return name
}

// Baseline are the capabilities every node backend lockcheck ships can
// offer (a Docker node always, a host over SSH when set up for them): `all`
// is the kinds that need no more than these and no pins.
var Baseline = []Capability{CapIPTables, CapClock, CapSignals, CapRestart}

// missing are the capabilities of need that have lacks.
func missing(need, have []Capability) []Capability {
	var out []Capability
	for _, c := range need {
		if !slices.Contains(have, c) {
			out = append(out, c)
		}
	}
	return out
}

// refusal is the one line that refuses kind on node for want of c.
func refusal(kind, node string, c Capability) error {
	doc := capabilityDocs[c]
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
