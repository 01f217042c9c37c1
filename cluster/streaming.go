package cluster

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// What a test of a range movement needs to see and slow its streams: a
// stream must last long enough for a node to be killed inside it.

// Nodetool runs Cassandra's nodetool in the node's container against its
// own JMX port and returns its output; a non-zero exit is an error.
func (n *Node) Nodetool(ctx context.Context, args ...string) (string, error) {
	return n.Exec(ctx, append([]string{binDir + "/nodetool"}, args...)...)
}

// SetStreamThroughput caps what the node streams out at mbit megabits per
// second until it restarts (0: no cap), both ways Cassandra streams: parts
// of SSTables (`nodetool setstreamthroughput`, in megabits, whose smallest
// cap is 1 megabit, 125 kB/s) and entire SSTables (`-e`, in MiB/s, at
// least 1; 4.1 and later: Version.ThrottlesEntireSSTables). A restarted
// node takes its cassandra.yaml's rates again.
func (n *Node) SetStreamThroughput(ctx context.Context, mbit int) error {
	if mbit < 0 {
		return fmt.Errorf("stream throughput %d megabits: want 0 (no cap) or more", mbit)
	}
	mib := 0
	if mbit > 0 {
		mib = max(1, (mbit+7)/8)
	}
	if _, err := n.Nodetool(ctx, "setstreamthroughput", strconv.Itoa(mbit)); err != nil {
		return err
	}
	if !n.c.cfg.release().ThrottlesEntireSSTables {
		return nil
	}
	_, err := n.Nodetool(ctx, "setstreamthroughput", "-e", strconv.Itoa(mib))
	return err
}

// Netstats is what `nodetool netstats` says of the node: its operation
// mode ("NORMAL", "JOINING", "LEAVING", "DECOMMISSION_FAILED"...) and the
// streams of its sessions with each peer.
type Netstats struct {
	Mode    string
	Streams []Stream
}

// Stream is the node's stream with one peer, one way: Done of Total bytes.
type Stream struct {
	Peer        string // the peer's IP
	Sending     bool   // the node sends (else it receives)
	Total, Done int64
}

// Active says whether the stream has bytes left to move.
func (s Stream) Active() bool { return s.Done < s.Total }

// Netstats runs `nodetool netstats` on the node.
func (n *Node) Netstats(ctx context.Context) (Netstats, error) {
	out, err := n.Nodetool(ctx, "netstats")
	if err != nil {
		return Netstats{}, err
	}
	return parseNetstats(out), nil
}

var (
	modeRE     = regexp.MustCompile(`^Mode: (\S+)`)
	ipRE       = regexp.MustCompile(`\b(\d+\.\d+\.\d+\.\d+)\b`)
	progressRE = regexp.MustCompile(`^(Receiving|Sending) \d+ files, (\d+) bytes total\. Already (?:received|sent) \d+ files \([^)]*\), (\d+) bytes total`)
)

// parseNetstats reads netstats' mode line and, under each session's peer
// line (its address, nothing else on it: the per-file lines name a peer
// too, with their bytes), the peer's receiving and sending summaries.
func parseNetstats(out string) Netstats {
	var ns Netstats
	peer := ""
	for line := range strings.Lines(out) {
		line = strings.TrimSpace(line)
		if m := modeRE.FindStringSubmatch(line); m != nil {
			ns.Mode = m[1]
			continue
		}
		if m := progressRE.FindStringSubmatch(line); m != nil {
			total, _ := strconv.ParseInt(m[2], 10, 64)
			done, _ := strconv.ParseInt(m[3], 10, 64)
			ns.Streams = append(ns.Streams, Stream{Peer: peer, Sending: m[1] == "Sending", Total: total, Done: done})
			continue
		}
		if m := ipRE.FindStringSubmatch(line); m != nil && !strings.Contains(line, "bytes") {
			peer = m[1]
		}
	}
	return ns
}

// RingSeen is the ring as this node's own failure detector sees it (its
// `nodetool status`): node name -> state, a node not in the ring absent.
// Cluster.Ring asks whichever node runs; this asks the one that matters
// when a read must not be sent to a node it still thinks up.
func (n *Node) RingSeen(ctx context.Context) (map[string]string, error) {
	view, err := n.ringView(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, m := range append(slices.Clone(n.c.nodes), n.c.spares...) {
		if e, ok := view[m.IP]; ok {
			out[m.Name] = e.State
		}
	}
	return out, nil
}
