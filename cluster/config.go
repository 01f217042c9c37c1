package cluster

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"math/big"
	"net/netip"
	"strings"
	"text/template"
	"time"
)

// nodeConfig is what cassandra.yaml.tmpl needs to render one node's file.
type nodeConfig struct {
	ClusterName   string
	InitialToken  string
	Seeds         string
	Address       string
	CommitlogSync string
	PaxosVariant  string
	// Snitch is SimpleSnitch for one data centre, else
	// GossipingPropertyFileSnitch reading DC from cassandra-rackdc.properties.
	Snitch string
	DC     string
	// AutoBootstrap: the node streams its ranges before it serves them (a
	// node joining a running ring; false when all start at once).
	AutoBootstrap bool
	// SkipPaxosRepair sets skip_paxos_repair_on_topology_change (Paxos v2).
	SkipPaxosRepair bool
	// PaxosStatePurging sets paxos_state_purging ("": not written).
	PaxosStatePurging string
	// NoPaxosCache sets paxos_cache_size to 0.
	NoPaxosCache bool
	// Accord switches Accord on with this default_transactional_mode ("":
	// not written, Accord off).
	Accord string
	// AccordStopMarker sets accord.journal.stop_marker_failure_policy ("":
	// not written).
	AccordStopMarker string
	// Legacy: Cassandra 4.0, which reads only the old setting names.
	Legacy bool
}

// legacyNames are 4.0's names of the settings whose old name is not the new
// one plus _in_mb or _in_ms.
var legacyNames = map[string]string{
	"prepared_statements_cache_size": "prepared_statements_cache_size_mb",
	"compaction_throughput":          "compaction_throughput_mb_per_sec",
}

// MiB renders a size setting of n MiB.
func (nc nodeConfig) MiB(key string, n int) string {
	if !nc.Legacy {
		return fmt.Sprintf("%s: %dMiB", key, n)
	}
	if old, ok := legacyNames[key]; ok {
		return fmt.Sprintf("%s: %d", old, n)
	}
	return fmt.Sprintf("%s_in_mb: %d", key, n)
}

// MiBps renders a rate setting of n MiB/s.
func (nc nodeConfig) MiBps(key string, n int) string {
	if !nc.Legacy {
		return fmt.Sprintf("%s: %dMiB/s", key, n)
	}
	return nc.MiB(key, n)
}

// Ms renders a duration setting of ms milliseconds.
func (nc nodeConfig) Ms(key string, ms int) string {
	if !nc.Legacy {
		return fmt.Sprintf("%s: %dms", key, ms)
	}
	return fmt.Sprintf("%s_in_ms: %d", key, ms)
}

var yamlTemplate = template.Must(template.New("cassandra.yaml").Option("missingkey=error").
	ParseFS(imageFS, "image/cassandra.yaml.tmpl")).Lookup("cassandra.yaml.tmpl")

// renderYAML renders one node's cassandra.yaml.
func renderYAML(nc nodeConfig) ([]byte, error) {
	var b bytes.Buffer
	if err := yamlTemplate.Execute(&b, nc); err != nil {
		return nil, fmt.Errorf("render cassandra.yaml: %w", err)
	}
	return b.Bytes(), nil
}

// tokens returns the initial token of each of n nodes: the Murmur3 ring
// [-2^63, 2^63) split evenly, so with one token a node every node owns the
// same share and no node needs to bootstrap.
func tokens(n int) []string {
	ring := new(big.Int).Lsh(big.NewInt(1), 64)
	step := new(big.Int).Div(ring, big.NewInt(int64(n)))
	minToken := new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), 63))
	out := make([]string, n)
	for i := range n {
		t := new(big.Int).Mul(step, big.NewInt(int64(i)))
		out[i] = t.Add(t, minToken).String()
	}
	return out
}

// layout is where a cluster lives on its network: the subnet, the gateway
// (the bridge's address on the host) and the node addresses.
type layout struct {
	subnet  netip.Prefix
	gateway netip.Addr
	nodes   []netip.Addr
}

// defaultSubnet derives a /24 in 10.199.0.0/16 from the cluster name, so
// clusters of different names do not share a subnet.
func defaultSubnet(name string) netip.Prefix {
	if name == DefaultName {
		return netip.MustParsePrefix("10.199.0.0/24")
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	third := 1 + h.Sum32()%254
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 199, byte(third), 0}), 24)
}

// newLayout places n nodes on subnet: the gateway is the first host address
// and node i (1-based) is the subnet's address 10+i, so n1 of 10.199.0.0/24
// is 10.199.0.11.
func newLayout(subnet netip.Prefix, n int) layout {
	base := subnet.Masked().Addr().As4()
	at := func(k int) netip.Addr {
		a := base
		a[3] += byte(k)
		return netip.AddrFrom4(a)
	}
	l := layout{subnet: subnet.Masked(), gateway: at(1)}
	for i := 1; i <= n; i++ {
		l.nodes = append(l.nodes, at(10+i))
	}
	return l
}

// nodeConfigs renders the per-node settings of a cluster: every node is a
// seed, so that nodes starting at the same time need not wait for one
// particular node to find the ring. With several data centres each one's
// ring is split evenly on its own (NetworkTopologyStrategy places a data
// centre's replicas by its own nodes' tokens), shifted by the data centre's
// number so that no two nodes share a token.
func nodeConfigs(c config, l layout) []nodeConfig {
	members := l.nodes[:c.nodes]
	seeds := make([]string, len(members))
	for i, a := range members {
		seeds[i] = a.String()
	}
	inDC := map[string][]int{} // data centre -> node indexes
	for i := range members {
		dc := c.dcOf(i)
		inDC[dc] = append(inDC[dc], i)
	}
	toks := make([]string, len(l.nodes))
	for d, dc := range c.dcNames() {
		for j, tok := range tokens(len(inDC[dc])) {
			t, _ := new(big.Int).SetString(tok, 10)
			toks[inDC[dc][j]] = t.Add(t, big.NewInt(int64(d))).String()
		}
	}
	// Spare k takes the middle of the ring's range k: joining, it takes
	// half of one node's primary range.
	ring := tokens(c.nodes)
	for k := range len(l.nodes) - c.nodes {
		lo, _ := new(big.Int).SetString(ring[k%c.nodes], 10)
		hi := new(big.Int).Lsh(big.NewInt(1), 63) // the ring's end
		if k%c.nodes+1 < c.nodes {
			hi.SetString(ring[k%c.nodes+1], 10)
		}
		mid := new(big.Int).Add(lo, hi)
		toks[c.nodes+k] = mid.Rsh(mid, 1).String()
	}
	snitch := "SimpleSnitch"
	if c.dcCount() > 1 {
		snitch = "GossipingPropertyFileSnitch"
	}
	out := make([]nodeConfig, len(l.nodes))
	for i, a := range l.nodes {
		dc := "dc1"
		if i < c.nodes {
			dc = c.dcOf(i)
		}
		out[i] = nodeConfig{
			ClusterName:       c.name,
			InitialToken:      toks[i],
			Seeds:             strings.Join(seeds, ","),
			Address:           a.String(),
			CommitlogSync:     c.commitlogSync,
			PaxosVariant:      c.paxos,
			Snitch:            snitch,
			DC:                dc,
			AutoBootstrap:     i >= c.nodes, // a spare joins a running ring
			SkipPaxosRepair:   c.skipRepair,
			PaxosStatePurging: c.purging,
			NoPaxosCache:      c.noPaxosCache,
			Accord:            c.accord,
			AccordStopMarker:  c.accordStop,
			Legacy:            c.release().LegacyYAML,
		}
	}
	return out
}

// joining is nc for a node that joins a running ring: it bootstraps, and
// it is not its own seed (a seed never bootstraps).
func (nc nodeConfig) joining() nodeConfig {
	var seeds []string
	for _, s := range strings.Split(nc.Seeds, ",") {
		if s != nc.Address {
			seeds = append(seeds, s)
		}
	}
	nc.Seeds, nc.AutoBootstrap = strings.Join(seeds, ","), true
	return nc
}

// rackDC is the node's cassandra-rackdc.properties, which
// GossipingPropertyFileSnitch reads from the classpath (the entrypoint puts
// the configuration directory on it). One rack a data centre.
func (nc nodeConfig) rackDC() []byte {
	return []byte("dc=" + nc.DC + "\nrack=rack1\n")
}

// clockOffsetLine formats a clock offset for libfaketime's timestamp file:
// signed seconds with microseconds ("+30.000000", "-0.250000"), which
// libfaketime reads as a relative offset.
func clockOffsetLine(d time.Duration) string {
	return fmt.Sprintf("%+.6f\n", d.Seconds())
}
