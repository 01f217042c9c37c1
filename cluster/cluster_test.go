package cluster

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/big"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestTokens(t *testing.T) {
	minT, _ := new(big.Int).SetString("-9223372036854775808", 10)
	maxT, _ := new(big.Int).SetString("9223372036854775807", 10)
	ring := new(big.Int).Lsh(big.NewInt(1), 64)
	for n := 1; n <= MaxNodes; n++ {
		toks := tokens(n)
		if len(toks) != n {
			t.Fatalf("tokens(%d): %d tokens", n, len(toks))
		}
		if toks[0] != minT.String() {
			t.Errorf("tokens(%d)[0] = %s, want the ring's minimum", n, toks[0])
		}
		var prev *big.Int
		for i, s := range toks {
			v, ok := new(big.Int).SetString(s, 10)
			if !ok || v.Cmp(minT) < 0 || v.Cmp(maxT) > 0 {
				t.Fatalf("tokens(%d)[%d] = %q: not a Murmur3 token", n, i, s)
			}
			if prev != nil {
				// Evenly split: every gap is ring/n, up to rounding.
				gap := new(big.Int).Sub(v, prev)
				want := new(big.Int).Div(ring, big.NewInt(int64(n)))
				if gap.Cmp(want) != 0 {
					t.Errorf("tokens(%d): gap %d..%d = %s, want %s", n, i-1, i, gap, want)
				}
			}
			prev = v
		}
	}
	if got := tokens(2); got[1] != "0" {
		t.Errorf("tokens(2)[1] = %s, want 0", got[1])
	}
	if got := tokens(4); got[1] != "-4611686018427387904" || got[3] != "4611686018427387904" {
		t.Errorf("tokens(4) = %v", got)
	}
}

func TestRenderYAML(t *testing.T) {
	tests := []struct {
		name     string
		sync     string
		paxos    string
		syncLine bool // commitlog_sync_period present
	}{
		{"periodic v1", "periodic", "v1", true},
		{"batch v2", "batch", "v2", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := defaultConfig()
			c.name, c.commitlogSync, c.paxos = "demo", tt.sync, tt.paxos
			l := newLayout(defaultSubnet("demo"), 3)
			ncs := nodeConfigs(c, l)
			b, err := renderYAML(ncs[1])
			if err != nil {
				t.Fatal(err)
			}
			var y map[string]any
			if err := yaml.Unmarshal(b, &y); err != nil {
				t.Fatalf("rendered cassandra.yaml is not YAML: %v\n%s", err, b)
			}
			want := map[string]any{
				"cluster_name":   "demo",
				"num_tokens":     1,
				"initial_token":  tokens(3)[1],
				"auto_bootstrap": false,
				"listen_address": l.nodes[1].String(),
				"rpc_address":    l.nodes[1].String(),
				"commitlog_sync": tt.sync,
				"paxos_variant":  tt.paxos,
			}
			for k, v := range want {
				if got := fmt.Sprint(y[k]); got != fmt.Sprint(v) {
					t.Errorf("%s = %v, want %v", k, got, v)
				}
			}
			if _, ok := y["commitlog_sync_period"]; ok != tt.syncLine {
				t.Errorf("commitlog_sync_period present = %v, want %v", ok, tt.syncLine)
			}
			seeds := y["seed_provider"].([]any)[0].(map[string]any)["parameters"].([]any)[0].(map[string]any)["seeds"]
			if want := l.nodes[0].String() + "," + l.nodes[1].String() + "," + l.nodes[2].String(); seeds != want {
				t.Errorf("seeds = %v, want every node", seeds)
			}
		})
	}
}

// Two data centres: each is a ring of its own, split evenly, no token
// shared; the snitch reads each node's data centre.
func TestNodeConfigsDCs(t *testing.T) {
	for _, tt := range []struct {
		nodes int
		dcs   []string
	}{
		{4, []string{"dc1", "dc1", "dc2", "dc2"}},
		{5, []string{"dc1", "dc1", "dc1", "dc2", "dc2"}},
	} {
		c := defaultConfig()
		c.nodes, c.dcs = tt.nodes, 2
		ncs := nodeConfigs(c, newLayout(defaultSubnet("demo"), tt.nodes))
		seen := map[string]bool{}
		perDC := map[string][]string{}
		for i, nc := range ncs {
			if nc.DC != tt.dcs[i] || nc.Snitch != "GossipingPropertyFileSnitch" {
				t.Errorf("%d nodes: node %d in %s with %s, want %s with GossipingPropertyFileSnitch", tt.nodes, i+1, nc.DC, nc.Snitch, tt.dcs[i])
			}
			if seen[nc.InitialToken] {
				t.Errorf("%d nodes: token %s given twice", tt.nodes, nc.InitialToken)
			}
			seen[nc.InitialToken] = true
			perDC[nc.DC] = append(perDC[nc.DC], nc.InitialToken)
			if got := string(nc.rackDC()); got != "dc="+tt.dcs[i]+"\nrack=rack1\n" {
				t.Errorf("rackdc %q", got)
			}
		}
		if got := perDC["dc1"][0]; got != tokens(len(perDC["dc1"]))[0] {
			t.Errorf("dc1 starts at %s, want %s", got, tokens(len(perDC["dc1"]))[0])
		}
		// Every node a replica of its data centre: 3+2 keeps a quorum of
		// all five replicas on one side of a cut between them.
		want := map[string]int{"dc1": len(perDC["dc1"]), "dc2": len(perDC["dc2"])}
		if got := c.replication(0); !maps.Equal(got, want) || c.replicationFactor() != 0 {
			t.Errorf("%d nodes in 2 dcs: replication %v (factor %d), want %v (0)", tt.nodes, got, c.replicationFactor(), want)
		}
		c.rf = 2
		if got := c.replication(c.rf); got["dc1"] != 2 || got["dc2"] != 2 || len(got) != 2 {
			t.Errorf("%d nodes in 2 dcs, rf 2: replication %v", tt.nodes, got)
		}
	}
	c := defaultConfig()
	if nc := nodeConfigs(c, newLayout(defaultSubnet("demo"), 3))[0]; nc.Snitch != "SimpleSnitch" || nc.DC != "dc1" {
		t.Errorf("one data centre: %s in %s, want SimpleSnitch", nc.Snitch, nc.DC)
	}
}

// A spare starts outside the ring: it bootstraps when started, from the
// members as seeds, with a token halfway along one member's range; a member
// that joins again is no seed of its own.
func TestNodeConfigsSpares(t *testing.T) {
	c := defaultConfig()
	c.nodes, c.spares = 4, 2
	l := newLayout(defaultSubnet("demo"), 6)
	ncs := nodeConfigs(c, l)
	members := strings.Join([]string{l.nodes[0].String(), l.nodes[1].String(), l.nodes[2].String(), l.nodes[3].String()}, ",")
	ring := tokens(4)
	want := []string{ring[0], ring[1], ring[2], ring[3], "-6917529027641081856", "-2305843009213693952"}
	for i, nc := range ncs {
		if nc.InitialToken != want[i] {
			t.Errorf("node %d: token %s, want %s", i+1, nc.InitialToken, want[i])
		}
		if nc.AutoBootstrap != (i >= 4) {
			t.Errorf("node %d: auto_bootstrap %v", i+1, nc.AutoBootstrap)
		}
		if nc.Seeds != members {
			t.Errorf("node %d: seeds %s, want the members %s", i+1, nc.Seeds, members)
		}
	}
	j := ncs[1].joining()
	if !j.AutoBootstrap || strings.Contains(j.Seeds, l.nodes[1].String()) || strings.Count(j.Seeds, ",") != 2 {
		t.Errorf("n2 joining again: auto_bootstrap %v, seeds %s (want the 3 others)", j.AutoBootstrap, j.Seeds)
	}
	b, err := renderYAML(j)
	if err != nil || !strings.Contains(string(b), "auto_bootstrap: true") {
		t.Errorf("joining yaml: %v\n%s", err, b)
	}
}

func TestInputsHash(t *testing.T) {
	base := fstest.MapFS{
		"Dockerfile":    {Data: []byte("FROM x\n")},
		"entrypoint.sh": {Data: []byte("#!/bin/sh\n")},
	}
	h0, err := inputsHash(base, "spec")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := inputsHash(base, "spec"); again != h0 {
		t.Fatal("inputsHash is not deterministic")
	}
	variants := map[string]func() (fs.FS, string){
		"content changed": func() (fs.FS, string) {
			return fstest.MapFS{"Dockerfile": {Data: []byte("FROM y\n")}, "entrypoint.sh": base["entrypoint.sh"]}, "spec"
		},
		"file renamed": func() (fs.FS, string) {
			return fstest.MapFS{"Dockerfile2": base["Dockerfile"], "entrypoint.sh": base["entrypoint.sh"]}, "spec"
		},
		"file added": func() (fs.FS, string) {
			return fstest.MapFS{"Dockerfile": base["Dockerfile"], "entrypoint.sh": base["entrypoint.sh"], "x": {Data: nil}}, "spec"
		},
		"rootfs spec changed": func() (fs.FS, string) { return base, "spec2" },
		// Moving bytes between files must not collide.
		"bytes moved between files": func() (fs.FS, string) {
			return fstest.MapFS{"Dockerfile": {Data: []byte("FROM x\n#!/bin/sh\n")}, "entrypoint.sh": {Data: nil}}, "spec"
		},
	}
	for name, v := range variants {
		fsys, spec := v()
		h, err := inputsHash(fsys, spec)
		if err != nil {
			t.Fatal(err)
		}
		if h == h0 {
			t.Errorf("%s: hash unchanged", name)
		}
	}
	// Every version has an image of its own, on a root filesystem that
	// differs where its Debian suite or Java does.
	refs := map[string]string{}
	for _, name := range append(Versions(), PinnedVersions()...) {
		v, err := LookupVersion(name)
		if err != nil {
			t.Fatal(err)
		}
		ref := NodeImageRef(v)
		if !regexp.MustCompile(`^lockcheck-node:` + regexp.QuoteMeta(v.Name) + `-[0-9a-f]{12}$`).MatchString(ref) {
			t.Errorf("NodeImageRef(%s) = %q", name, ref)
		}
		if other, ok := refs[ref]; ok {
			t.Errorf("versions %s and %s share the image %s", other, name, ref)
		}
		refs[ref] = name
		if strings.HasSuffix(ref, BaseImageRef(v)[len(baseImageRepo)+1:]) {
			t.Errorf("%s: node and base image tags coincide", name)
		}
	}
	v40, _ := LookupVersion("4.0")
	v41, _ := LookupVersion("4.1")
	v50, _ := LookupVersion("5.0")
	v415, _ := LookupVersion("4.1.5")
	if BaseImageRef(v415) != BaseImageRef(v41) {
		t.Error("4.1.5 runs on its line's root filesystem, but their base images differ")
	}
	if BaseImageRef(v40) != BaseImageRef(v41) {
		t.Error("4.0 and 4.1 run on the same root filesystem, but their base images differ")
	}
	if BaseImageRef(v41) == BaseImageRef(v50) {
		t.Error("4.1 (Java 11) and 5.0 (Java 17) share a base image")
	}
}

func TestValidateOptions(t *testing.T) {
	tests := []struct {
		name string
		opts []Option
		ok   bool
	}{
		{"defaults", nil, true},
		{"5 nodes v2 batch 1G", []Option{WithNodes(5), WithPaxos("v2"), WithCommitlogSync("batch"), WithHeap("1G")}, true},
		{"rf 2 of 3", []Option{WithReplicationFactor(2)}, true},
		{"subnet", []Option{WithSubnet("10.200.3.0/24")}, true},
		{"0 nodes", []Option{WithNodes(0)}, false},
		{"6 nodes", []Option{WithNodes(6)}, false},
		{"paxos v3", []Option{WithPaxos("v3")}, false},
		{"commitlog group", []Option{WithCommitlogSync("group")}, false},
		{"heap 512", []Option{WithHeap("512")}, false},
		{"heap 100M", []Option{WithHeap("100M")}, false},
		{"heap 16G", []Option{WithHeap("16G")}, false},
		{"rf 4 of 3", []Option{WithReplicationFactor(4)}, false},
		{"rf -1", []Option{WithReplicationFactor(-1)}, false},
		{"name with space", []Option{WithName("my cluster")}, false},
		{"name upper", []Option{WithName("Lockcheck")}, false},
		// A row's cluster is named after its key, which names a release
		// line: lockcheck-c4.0.
		{"name with a release", []Option{WithName("lockcheck-c4.0")}, true},
		{"subnet v6", []Option{WithSubnet("fd00::/64")}, false},
		{"subnet /28", []Option{WithSubnet("10.200.3.0/28")}, false},
		{"subnet junk", []Option{WithSubnet("10.200.3.0")}, false},
		{"2 dcs of 4", []Option{WithNodes(4), WithDCs(2)}, true},
		{"2 dcs of 5 rf 2", []Option{WithNodes(5), WithDCs(2), WithReplicationFactor(2)}, true},
		{"2 dcs of 3", []Option{WithDCs(2)}, false},
		{"3 dcs", []Option{WithNodes(5), WithDCs(3)}, false},
		{"2 dcs rf 3 of 2 each", []Option{WithNodes(4), WithDCs(2), WithReplicationFactor(3)}, false},
		{"4 nodes 1 spare", []Option{WithNodes(4), WithSpares(1)}, true},
		{"3 spares", []Option{WithSpares(3)}, false},
		{"spares in 2 dcs", []Option{WithNodes(4), WithDCs(2), WithSpares(1)}, false},
		{"skip paxos repair v2", []Option{WithPaxos("v2"), WithSkipPaxosRepair(true)}, true},
		{"skip paxos repair v1", []Option{WithSkipPaxosRepair(true)}, false},
		{"paxos state purging repaired", []Option{WithVersion("4.1"), WithPaxos("v2"), WithPaxosStatePurging("repaired")}, true},
		{"paxos state purging gc_grace on 5.0", []Option{WithPaxosStatePurging("gc_grace")}, true},
		{"paxos state purging on 4.0", []Option{WithVersion("4.0"), WithPaxosStatePurging("legacy")}, false},
		{"paxos state purging unknown", []Option{WithPaxosStatePurging("never")}, false},
		{"paxos upgrade on 5.0", []Option{WithPaxosUpgrade()}, true},
		{"paxos upgrade on 4.1", []Option{WithVersion("4.1"), WithPaxosUpgrade()}, true},
		{"paxos upgrade from v2", []Option{WithPaxos("v2"), WithPaxosUpgrade()}, false},
		{"paxos upgrade on 4.0", []Option{WithVersion("4.0"), WithPaxosUpgrade()}, false},
		{"accord full on 6.0-alpha", []Option{WithVersion("6.0-alpha"), WithAccord("full")}, true},
		{"accord mixed_reads on 6.0-alpha", []Option{WithVersion("6.0-alpha"), WithAccord("mixed_reads")}, true},
		{"accord on 5.0", []Option{WithAccord("full")}, false},
		{"accord unknown mode", []Option{WithVersion("6.0-alpha"), WithAccord("test_unsafe")}, false},
		{"accord stop marker REBOOTSTRAP", []Option{WithVersion("6.0-alpha"), WithAccord("full"), WithAccordStopMarker("REBOOTSTRAP")}, true},
		{"accord stop marker without accord", []Option{WithVersion("6.0-alpha"), WithAccordStopMarker("REBOOTSTRAP")}, false},
		{"accord stop marker unknown", []Option{WithVersion("6.0-alpha"), WithAccord("full"), WithAccordStopMarker("rebootstrap")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateOptions(tt.opts...)
			if tt.ok && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !tt.ok && !errors.Is(err, ErrBadOption) {
				t.Fatalf("got %v, want ErrBadOption", err)
			}
		})
	}
}

func TestLayout(t *testing.T) {
	l := newLayout(netip.MustParsePrefix("10.199.0.0/24"), 3)
	if l.gateway.String() != "10.199.0.1" {
		t.Errorf("gateway = %s", l.gateway)
	}
	want := []string{"10.199.0.11", "10.199.0.12", "10.199.0.13"}
	for i, a := range l.nodes {
		if a.String() != want[i] {
			t.Errorf("node %d = %s, want %s", i+1, a, want[i])
		}
	}
	if got := defaultSubnet(DefaultName).String(); got != "10.199.0.0/24" {
		t.Errorf("default subnet = %s", got)
	}
	outer := netip.MustParsePrefix("10.199.0.0/16")
	for _, name := range []string{"a", "lcdev", "lockcheck-test", "x-y-z"} {
		p := defaultSubnet(name)
		if !outer.Contains(p.Addr()) || p.Bits() != 24 {
			t.Errorf("defaultSubnet(%q) = %s, want a /24 in %s", name, p, outer)
		}
		if p == defaultSubnet(DefaultName) {
			t.Errorf("defaultSubnet(%q) = the default cluster's subnet", name)
		}
	}
}

func TestClockOffsetLine(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "+0.000000\n"},
		{30 * time.Second, "+30.000000\n"},
		{-250 * time.Millisecond, "-0.250000\n"},
		{time.Hour + 1500*time.Microsecond, "+3600.001500\n"},
	}
	for _, tt := range tests {
		if got := clockOffsetLine(tt.d); got != tt.want {
			t.Errorf("clockOffsetLine(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestParseNodetoolStatus(t *testing.T) {
	out := `Datacenter: datacenter1
=======================
Status=Up/Down
|/ State=Normal/Leaving/Joining/Moving
--  Address      Load        Owns (effective)  Host ID                               Token                 Rack 
UN  10.199.0.11  114.38 KiB  100.0%            d50ca6fa-48cb-4f62-9228-bef52e1a923a  -9223372036854775808  rack1
DN  10.199.0.12  98.1 KiB    100.0%            e50ca6fa-48cb-4f62-9228-bef52e1a923a  -3074457345618258603  rack1
UJ  10.199.0.13  ?           100.0%            f50ca6fa-48cb-4f62-9228-bef52e1a923a  3074457345618258602   rack1
`
	got := parseNodetoolStatus(out + `Datacenter: dc2
===============
--  Address      Load        Tokens  Owns (effective)  Host ID                               Rack
UL  10.199.0.14  80 KiB      1       50.0%             a50ca6fa-48cb-4f62-9228-bef52e1a923a  rack1
DN  10.199.0.15  ?           1       50.0%             ?                                     rack1
`)
	want := map[string]RingEntry{
		"10.199.0.11": {"UN", "datacenter1", "d50ca6fa-48cb-4f62-9228-bef52e1a923a"},
		"10.199.0.12": {"DN", "datacenter1", "e50ca6fa-48cb-4f62-9228-bef52e1a923a"},
		"10.199.0.13": {"UJ", "datacenter1", "f50ca6fa-48cb-4f62-9228-bef52e1a923a"},
		"10.199.0.14": {"UL", "dc2", "a50ca6fa-48cb-4f62-9228-bef52e1a923a"},
		"10.199.0.15": {"DN", "dc2", ""},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for ip, e := range want {
		if got[ip] != e {
			t.Errorf("%s: %+v, want %+v", ip, got[ip], e)
		}
	}
	if len(parseNodetoolStatus("nodetool: Failed to connect to '127.0.0.1:7199'")) != 0 {
		t.Error("an error message parsed as node lines")
	}
}

func TestNodeFiles(t *testing.T) {
	files, err := nodeFiles([]byte("cluster_name: x\n"), []byte("dc=dc2\nrack=rack1\n"), []byte("-Dx=1\n"))
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]file{}
	for _, f := range files {
		byPath[f.path] = f
	}
	for _, p := range []string{"/opt/lockcheck/bin/entrypoint.sh", "/opt/lockcheck/bin/nodetool"} {
		if byPath[p].mode&0o111 == 0 {
			t.Errorf("%s is not executable (mode %o)", p, byPath[p].mode)
		}
	}
	if got := string(byPath[faketimeFile].body); got != "+0.000000\n" {
		t.Errorf("initial clock offset %q, want zero", got)
	}
	if string(byPath[confDir+"/cassandra.yaml"].body) != "cluster_name: x\n" {
		t.Error("cassandra.yaml not passed through")
	}
	if string(byPath[confDir+"/cassandra-rackdc.properties"].body) != "dc=dc2\nrack=rack1\n" {
		t.Error("cassandra-rackdc.properties not passed through")
	}
	// jvm.options: every option line is a flag the entrypoint passes on;
	// the heap is the entrypoint's (LOCKCHECK_HEAP), never the file's.
	opts := string(byPath[confDir+"/jvm.options"].body)
	for _, line := range strings.Split(opts, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !strings.HasPrefix(line, "-") {
			t.Errorf("jvm.options: %q is neither a flag nor a comment", line)
		}
		if strings.HasPrefix(line, "-Xmx") || strings.HasPrefix(line, "-Xms") {
			t.Errorf("jvm.options sets the heap: %q", line)
		}
	}
	for _, must := range []string{"--add-opens=java.base/java.lang=ALL-UNNAMED", "-Djdk.attach.allowAttachSelf=true", "-Dcassandra.jmx.local.port=7199"} {
		if !strings.Contains(opts, must+"\n") {
			t.Errorf("jvm.options lacks %s", must)
		}
	}
}

// The paxos_state_purging a node's cassandra.yaml names, as the template
// renders it (legacy when absent), and the script that switches it, run
// here on rendered files: once where the file has the line, once where it
// has none.
func TestPurgingScript(t *testing.T) {
	if _, err := exec.LookPath("sed"); err != nil {
		t.Skip("no sed here")
	}
	for _, start := range []string{"", "gc_grace"} {
		b, err := renderYAML(nodeConfig{ClusterName: "x", InitialToken: "0", Seeds: "10.0.0.2", Address: "10.0.0.2",
			CommitlogSync: "periodic", PaxosVariant: "v2", Snitch: "SimpleSnitch", DC: "dc1", PaxosStatePurging: start})
		if err != nil {
			t.Fatal(err)
		}
		want := cmp.Or(start, "legacy")
		if got := yamlPurging(string(b)); got != want {
			t.Fatalf("rendered with %q: yamlPurging = %q, want %q", start, got, want)
		}
		path := filepath.Join(t.TempDir(), "cassandra.yaml")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, mode := range []string{"repaired", "legacy"} {
			if out, err := exec.Command("sh", "-c", purgingScript(path, mode)).CombinedOutput(); err != nil {
				t.Fatalf("script: %v: %s", err, out)
			}
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if m := purgingLine.FindAllString(string(after), -1); len(m) != 1 || yamlPurging(string(after)) != mode {
				t.Errorf("from %q to %s: lines %q", start, mode, m)
			}
			var y map[string]any
			if err := yaml.Unmarshal(after, &y); err != nil || y["paxos_state_purging"] != mode || y["paxos_variant"] != "v2" {
				t.Errorf("from %q to %s: %v, paxos_state_purging %v, paxos_variant %v", start, mode, err, y["paxos_state_purging"], y["paxos_variant"])
			}
		}
	}
}

// The Accord journal's stop marker policy is written under accord.journal
// as stop_marker_failure_policy: Cassandra's YAML loader names a field by
// its Java name in snake case (DefaultLoader, FBUtilities.camelToSnake), and
// JournalConfig's field is stopMarkerFailurePolicy.
func TestRenderYAMLAccordStopMarker(t *testing.T) {
	for _, policy := range []string{"", "REBOOTSTRAP"} {
		c := defaultConfig()
		c.version, c.accord, c.accordStop = "6.0-alpha", "full", policy
		b, err := renderYAML(nodeConfigs(c, newLayout(defaultSubnet("demo"), 3))[0])
		if err != nil {
			t.Fatal(err)
		}
		var y struct {
			Accord struct {
				Enabled bool `yaml:"enabled"`
				Journal *struct {
					Policy string `yaml:"stop_marker_failure_policy"`
				} `yaml:"journal"`
			} `yaml:"accord"`
		}
		if err := yaml.Unmarshal(b, &y); err != nil {
			t.Fatalf("not YAML: %v\n%s", err, b)
		}
		if !y.Accord.Enabled {
			t.Errorf("policy %q: accord.enabled not true", policy)
		}
		switch {
		case policy == "" && y.Accord.Journal != nil:
			t.Errorf("no policy asked for, yet accord.journal written: %+v", *y.Accord.Journal)
		case policy != "" && (y.Accord.Journal == nil || y.Accord.Journal.Policy != policy):
			t.Errorf("accord.journal = %+v, want stop_marker_failure_policy %s", y.Accord.Journal, policy)
		}
	}
}

// TestRenderYAMLVersions: 4.0 refuses a cassandra.yaml with any name it does
// not know, and knows only the old names with the unit in the key; 4.1 and
// later read the new names. Every size and time setting must follow.
func TestRenderYAMLVersions(t *testing.T) {
	tests := []struct {
		version   string
		want      map[string]string
		forbidden []string
	}{
		{"4.0", map[string]string{
			"commitlog_sync_period_in_ms":       "10000",
			"commitlog_segment_size_in_mb":      "8",
			"prepared_statements_cache_size_mb": "8",
			"compaction_throughput_mb_per_sec":  "64",
			"cas_contention_timeout_in_ms":      "1000",
			"max_hint_window_in_ms":             "10800000",
		}, []string{"paxos_variant", "commitlog_sync_period", "commitlog_segment_size", "cas_contention_timeout", "compaction_throughput"}},
		{"4.1", map[string]string{
			"commitlog_sync_period":  "10000ms",
			"commitlog_segment_size": "8MiB",
			"compaction_throughput":  "64MiB/s",
			"cas_contention_timeout": "1000ms",
			"paxos_variant":          "v1",
		}, []string{"commitlog_sync_period_in_ms", "compaction_throughput_mb_per_sec"}},
		{"5.0", map[string]string{"commitlog_sync_period": "10000ms", "paxos_variant": "v1"}, []string{"paxos_state_purging"}},
		{"4.1.5", map[string]string{"paxos_variant": "v2", "paxos_state_purging": "repaired"}, nil},
		{"5.0", map[string]string{"paxos_state_purging": "gc_grace"}, nil},
		{"5.0", map[string]string{"paxos_variant": "v1"}, []string{"accord"}},
		{"6.0-alpha", map[string]string{"accord": "map[default_transactional_mode:full enabled:true]"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			c := defaultConfig()
			c.version = tt.version
			c.purging = tt.want["paxos_state_purging"]
			if _, ok := tt.want["accord"]; ok {
				c.accord = "full"
			}
			if p, ok := tt.want["paxos_variant"]; ok {
				c.paxos = p
			}
			b, err := renderYAML(nodeConfigs(c, newLayout(defaultSubnet("demo"), 3))[0])
			if err != nil {
				t.Fatal(err)
			}
			var y map[string]any
			if err := yaml.Unmarshal(b, &y); err != nil {
				t.Fatalf("not YAML: %v\n%s", err, b)
			}
			for k, v := range tt.want {
				if got := fmt.Sprint(y[k]); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			for _, k := range tt.forbidden {
				if _, ok := y[k]; ok {
					t.Errorf("%s present: Cassandra %s does not take it", k, tt.version)
				}
			}
			// No size or time is left in a form the version cannot read.
			for k, v := range y {
				s := fmt.Sprint(v)
				legacyKey := strings.HasSuffix(k, "_in_ms") || strings.HasSuffix(k, "_in_mb") || strings.HasSuffix(k, "_mb") || strings.HasSuffix(k, "_mb_per_sec")
				unitValue := regexp.MustCompile(`^[0-9]+(ms|MiB|MiB/s|h|s)$`).MatchString(s)
				if tt.version == "4.0" && unitValue {
					t.Errorf("4.0: %s: %s has a unit in its value", k, s)
				}
				if tt.version != "4.0" && legacyKey {
					t.Errorf("%s: %s is a 4.0 name", tt.version, k)
				}
			}
		})
	}
}

// TestUnsafeJVMFlag: 4.0's unsafe variant is a system property, a line of
// the node's own JVM flags (node.options); the other releases' are
// paxos_variant alone.
func TestUnsafeJVMFlag(t *testing.T) {
	v40, _ := LookupVersion("4.0")
	flag := v40.jvmFlag(PaxosV1UnsafeReads)
	if flag != "-Dcassandra.unsafe.disable-serial-reads-linearizability=true" {
		t.Fatalf("4.0's unsafe flag %q", flag)
	}
	c := &Cluster{cfg: config{version: "4.0", paxos: PaxosV1UnsafeReads}}
	if opts := string(c.nodeOptions("")); !strings.Contains(opts, flag+"\n") {
		t.Errorf("node.options %q lacks the flag", opts)
	}
	safe := &Cluster{cfg: config{version: "4.0", paxos: "v1"}}
	if opts := string(safe.nodeOptions("")); strings.Contains(opts, "unsafe") {
		t.Errorf("node.options of the safe variant %q", opts)
	}
	v50, _ := LookupVersion("5.0")
	if f := v50.jvmFlag(PaxosV2Unsafe); f != "" {
		t.Errorf("5.0 %s needs flag %q, want none", PaxosV2Unsafe, f)
	}
	if !UnsafePaxos(PaxosV1Unsafe) || UnsafePaxos("v2") {
		t.Error("UnsafePaxos")
	}
}

func TestValidateVersion(t *testing.T) {
	tests := []struct {
		opts    []Option
		wantErr string
	}{
		{[]Option{WithVersion("4.1"), WithPaxos("v2")}, ""},
		{[]Option{WithVersion("4.1.10")}, ""},
		{[]Option{WithVersion("4.0"), WithPaxos("v2")}, "Cassandra 4.0 has only v1, v1_without_linearizable_reads"},
		{[]Option{WithVersion("5.0"), WithPaxos("v1_without_linearizable_reads_or_rejected_writes")}, ""},
		{[]Option{WithVersion("4.1"), WithPaxos("v2_without_linearizable_reads_or_rejected_writes")}, ""},
		{[]Option{WithVersion("4.1"), WithPaxos("v2_without_linearizable_reads")}, ""},
		{[]Option{WithVersion("4.0"), WithPaxos("v1_without_linearizable_reads")}, ""},
		{[]Option{WithVersion("4.0"), WithPaxos("v1_without_linearizable_reads_or_rejected_writes")}, "Cassandra 4.0 has only"},
		{[]Option{WithVersion("5.0"), WithPaxos("v1_without_linearizable_reads")}, "Cassandra 5.0 has only v1, v2, v1_without"},
		{[]Option{WithPaxos("v3")}, `paxos "v3": want one of v1, v1_without_linearizable_reads, v2,`},
		{[]Option{WithVersion("3.11")}, `version "3.11": want a release line, 4.0, 4.1, 5.0`},
		{[]Option{WithVersion("4.1.5"), WithPaxos("v2")}, ""},
		{[]Option{WithVersion("4.1.4")}, `or a pinned release, 4.1.5, 4.1.6`},
		{[]Option{WithVersion("")}, "version"},
	}
	for _, tt := range tests {
		err := ValidateOptions(tt.opts...)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%v", err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("err = %v, want one containing %q", err, tt.wantErr)
		}
	}
}

func TestForeignRules(t *testing.T) {
	out := `-P INPUT ACCEPT
-P FORWARD DROP
-P OUTPUT ACCEPT
-N LOCKCHECK-PARTITION
-N MINE
-A INPUT -j LOCKCHECK-PARTITION
-A INPUT -s 10.7.0.3/32 -j DROP
-A LOCKCHECK-PARTITION -s 10.7.0.2/32 -j DROP
-A INPUT -p tcp --dport 22 -j LOCKCHECK-PARTITION
`
	got := foreignRules(out)
	want := []string{
		"iptables policy -P FORWARD DROP",
		"iptables chain -N MINE",
		"iptables rule -A INPUT -s 10.7.0.3/32 -j DROP",
		"iptables rule -A INPUT -p tcp --dport 22 -j LOCKCHECK-PARTITION",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("foreignRules:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A spare is healthy out of the ring and stopped; anything else is named
// in `cluster status`, whose state column ("UN") would not say it is a
// spare.
func TestSpareFault(t *testing.T) {
	for _, tc := range []struct {
		in        bool
		container string
		want      string
	}{
		{false, "exited", ""},
		{false, "created", ""},
		{false, "running", "a spare running out of the ring"},
		{true, "running", "a spare in the ring"},
		{true, "paused", "a spare in the ring"},
	} {
		if got := spareFault(tc.in, tc.container); got != tc.want {
			t.Errorf("spareFault(in ring %v, %s) = %q, want %q", tc.in, tc.container, got, tc.want)
		}
	}
}

func TestLookupVersion(t *testing.T) {
	tests := []struct {
		name, want, line, cassandra string
	}{
		{name: "4.1", want: "4.1", line: "4.1", cassandra: "4.1.10"},
		{name: "4.1.10", want: "4.1", line: "4.1", cassandra: "4.1.10"},
		{name: "4.1.5", want: "4.1.5", line: "4.1", cassandra: "4.1.5"},
		{name: "4.1.6", want: "4.1.6", line: "4.1", cassandra: "4.1.6"},
		{name: "5.0", want: "5.0", line: "5.0", cassandra: "5.0.9"},
		{name: "4.1.4"},
		{name: "4.1.x"},
		{name: "4"},
		{name: ""},
	}
	for _, tt := range tests {
		v, err := LookupVersion(tt.name)
		if tt.want == "" {
			if err == nil {
				t.Errorf("LookupVersion(%q) = %s, want an error", tt.name, v.Name)
			} else if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "4.1.5") || !strings.Contains(msg, "5.0") {
				t.Errorf("LookupVersion(%q): %q, want one line naming every known release", tt.name, msg)
			}
			continue
		}
		if err != nil {
			t.Errorf("LookupVersion(%q): %v", tt.name, err)
			continue
		}
		if v.Name != tt.want || v.Line() != tt.line || v.Cassandra != tt.cassandra || len(v.Pinned) != 0 && v.Name != v.Line() {
			t.Errorf("LookupVersion(%q) = name %s, line %s, cassandra %s; want %s, %s, %s", tt.name, v.Name, v.Line(), v.Cassandra, tt.want, tt.line, tt.cassandra)
		}
	}
	// A pinned release runs with its line's settings: the same variants.
	v41, _ := LookupVersion("4.1")
	v415, _ := LookupVersion("4.1.5")
	if !slices.Equal(v41.PaxosVariants(), v415.PaxosVariants()) || v41.Suite != v415.Suite || v41.JRE != v415.JRE {
		t.Errorf("4.1.5 runs with other settings than its line 4.1: %+v", v415)
	}
	if err := ValidateOptions(WithVersion("4.1.5"), WithPaxos("v2")); err != nil {
		t.Errorf("4.1.5 with Paxos v2: %v", err)
	}
	if err := ValidateOptions(WithVersion("4.1.4")); err == nil || !errors.Is(err, ErrBadOption) {
		t.Errorf("4.1.4: %v, want ErrBadOption", err)
	}
}

// The paxos_variant line a node's variant is read from, as the template
// renders it, and the one sed rewrites (SetPaxosVariant).
func TestPaxosLine(t *testing.T) {
	b, err := renderYAML(nodeConfig{ClusterName: "x", InitialToken: "0", Seeds: "10.0.0.2", Address: "10.0.0.2",
		CommitlogSync: "periodic", PaxosVariant: "v1", Snitch: "SimpleSnitch", DC: "dc1"})
	if err != nil {
		t.Fatal(err)
	}
	m := paxosLine.FindAllStringSubmatch(string(b), -1)
	if len(m) != 1 || m[0][1] != "v1" {
		t.Fatalf("paxos_variant lines %q, want one naming v1", m)
	}
	if paxosLine.MatchString("# paxos_variant: v2\n") {
		t.Error("a comment matched as the setting")
	}
}
