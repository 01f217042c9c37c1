package cluster

import (
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strings"
)

// Defaults of a cluster started without options.
const (
	DefaultName     = "lockcheck"
	DefaultNodes    = 3
	DefaultHeap     = "512M"
	DefaultKeyspace = "lockcheck"
	DefaultPaxos    = "v1"
	MaxNodes        = 5
	MaxDCs          = 2
	MaxSpares       = 2
)

// An Option configures Start and Attach.
type Option func(*config)

// config is what the options set; Attach only uses name and logger (the rest
// is read back from the running cluster's labels).
type config struct {
	name          string
	nodes         int
	paxos         string
	version       string // a Version's name
	commitlogSync string
	heap          string
	image         string
	rf            int // 0: as many as nodes (per data centre: as many as the smallest has)
	dcs           int // data centres; 0 or 1: one
	spares        int // nodes created outside the ring, to join it during a run
	skipRepair    bool
	purging       string // paxos_state_purging; "": the release's default
	noPaxosCache  bool   // paxos_cache_size 0
	paxosUpgrade  bool   // a run may switch the nodes' Paxos v1 to v2 (paxos-upgrade)
	accord        string // accord.default_transactional_mode; "": Accord off
	accordStop    string // accord.journal.stop_marker_failure_policy; "": the release's (EXIT)
	subnet        string
	cacheDir      string
	sshKey        string // an authorized_keys line for root: sshd runs
	lazyFS        string // path of the lockcheck-lazyfs binary: data on a lazy filesystem
	logger        *slog.Logger
}

func defaultConfig() config {
	return config{
		name:          DefaultName,
		nodes:         DefaultNodes,
		paxos:         DefaultPaxos,
		version:       DefaultVersion,
		commitlogSync: "periodic",
		heap:          DefaultHeap,
		logger:        slog.New(slog.DiscardHandler),
	}
}

// WithName names the cluster (default "lockcheck"). Everything the cluster
// creates carries the name in its labels, so clusters of different names can
// run side by side.
func WithName(name string) Option { return func(c *config) { c.name = name } }

// WithNodes sets the number of nodes, 1 to 5 (default 3).
func WithNodes(n int) Option { return func(c *config) { c.nodes = n } }

// WithPaxos sets Cassandra's paxos_variant: "v1" (default), "v2", or one
// of the known-unsafe variants of Version.Unsafe (controls, not settings
// for a real cluster).
func WithPaxos(variant string) Option { return func(c *config) { c.paxos = variant } }

// WithVersion sets the Cassandra release line the nodes run: "4.0", "4.1",
// "5.0" (default) or "6.0-alpha" (Versions), each the latest patch release
// on Maven Central, on a Java it supports; or a pinned patch release of a
// line ("4.1.5", PinnedVersions), which runs with its line's settings.
func WithVersion(name string) Option { return func(c *config) { c.version = name } }

// WithCommitlogSync sets commitlog_sync: "periodic" (default) or "batch".
func WithCommitlogSync(mode string) Option { return func(c *config) { c.commitlogSync = mode } }

// WithHeap sets each node's JVM heap (-Xms and -Xmx), e.g. "512M" (default) or "1G".
func WithHeap(size string) Option { return func(c *config) { c.heap = size } }

// WithImage runs the nodes from a user's image instead of building
// lockcheck's own; docs/cluster.md says how to derive one from the official image.
func WithImage(ref string) Option { return func(c *config) { c.image = ref } }

// WithReplicationFactor sets the lockcheck keyspace's replication factor
// (default: the number of nodes, one less with WithSpares, so that a member
// can leave); with WithDCs, the factor in each data centre (default: every
// node of each, 3 and 2 for 5 nodes, so that one side of a cut between them
// still holds a quorum of all the replicas for SERIAL).
func WithReplicationFactor(rf int) Option { return func(c *config) { c.rf = rf } }

// WithDCs splits the nodes into n data centres, dc1..dcN, in order (4 nodes
// in 2: n1 n2 in dc1, n3 n4 in dc2; a remainder goes to the first ones).
// The nodes then run GossipingPropertyFileSnitch, each with its
// cassandra-rackdc.properties, and the keyspace is NetworkTopologyStrategy
// with the replication factor in every data centre. Each data centre needs
// two nodes at least: one node alone has no local quorum to lose.
func WithDCs(n int) Option { return func(c *config) { c.dcs = n } }

// WithSubnet sets the cluster network's IPv4 subnet, a /24 or larger, e.g.
// "10.199.7.0/24" (default: one derived from the cluster's name). Use it when
// the default clashes with a network of the machine.
func WithSubnet(cidr string) Option { return func(c *config) { c.subnet = cidr } }

// WithCacheDir sets where the image build keeps its Debian root filesystem
// (default $XDG_CACHE_HOME/lockcheck or ~/.cache/lockcheck).
func WithCacheDir(dir string) Option { return func(c *config) { c.cacheDir = dir } }

// WithSSHKey makes every node reachable over SSH as root with this public
// key (one authorized_keys line): sshd runs in each node and the JVM runs
// as a child the node's entrypoint supervises, so that a JVM killed over SSH
// is started again by `/opt/lockcheck/bin/entrypoint.sh start`. It lets the
// tests treat the Docker cluster as a user's own hosts (lockcheck run
// --hosts --ssh-*).
func WithSSHKey(authorizedKey string) Option {
	return func(c *config) { c.sshKey = strings.TrimSpace(authorizedKey) }
}

// WithLazyFS puts every node's data and commitlog (/var/lib/cassandra) on
// lockcheck's lazy filesystem (the lockcheck-lazyfs binary at path, copied
// into each node): writes a node has not fsynced live only in that
// filesystem's memory, so that cutting the node's power (Node.PowerOff)
// loses them, as a power failure loses a page cache. Killing the JVM alone
// (Node.Kill) loses nothing, as a process crash keeps the page cache. The
// nodes need CAP_SYS_ADMIN and /dev/fuse.
func WithLazyFS(binary string) Option { return func(c *config) { c.lazyFS = binary } }

// WithSpares creates n spare nodes (0 to MaxSpares) beside the ring's, named
// after them (n4 for a 3-node cluster): containers that stay stopped until
// a membership fault (join) bootstraps one into the ring, each with a token
// of its own halfway between two of the ring's. The keyspace's replication
// factor stays the ring's.
func WithSpares(n int) Option { return func(c *config) { c.spares = n } }

// WithSkipPaxosRepair sets skip_paxos_repair_on_topology_change on Paxos
// v2: topology changes complete without Paxos repair first, as on v1.
func WithSkipPaxosRepair(on bool) Option { return func(c *config) { c.skipRepair = on } }

// PaxosStatePurgings are the values of paxos_state_purging (4.1 and later):
// how a node forgets Paxos state. legacy (the releases' default) writes it
// with a TTL of the table's gc_grace_seconds; gc_grace purges it in
// compaction once older than gc_grace_seconds; repaired purges it in
// compaction once a Paxos repair has covered it (and
// paxos_purge_grace_period has passed). A cluster may move from legacy to
// the others, never back (the state written since has no TTL).
var PaxosStatePurgings = []string{"legacy", "gc_grace", "repaired"}

// WithPaxosStatePurging sets paxos_state_purging on 4.1 and later ("" keeps
// the release's default, legacy).
func WithPaxosStatePurging(mode string) Option { return func(c *config) { c.purging = mode } }

// WithoutPaxosCache sets paxos_cache_size to 0 (4.1 and later): every
// Paxos round reads the key's Paxos state from disk, as a round on a key
// idle long enough to leave the cache does. A known bug in what a node
// loads from disk (CASSANDRA-19617) shows only then.
func WithoutPaxosCache() Option { return func(c *config) { c.noPaxosCache = true } }

// WithPaxosUpgrade lets a run switch the nodes from Paxos v1 to v2 (the
// paxos-upgrade fault kind, faultcap.PaxosUpgrade): a cluster of 4.1 or
// later started on v1. Without it no node offers the switch, so that a run
// on a cluster others share never upgrades it. The change is one-way within
// a run; the next run's leftover heal switches the nodes back to the
// cluster's variant, recorded (PaxosUpgradeNode).
func WithPaxosUpgrade() Option { return func(c *config) { c.paxosUpgrade = true } }

// AccordModes are the transactional_mode values WithAccord takes, as the
// 6.0-alpha2 jar's TransactionalMode names them (its test_* modes left
// out): full runs every statement on a table through Accord, its LWTs
// included; mixed_reads runs writes and SERIAL reads through Accord and
// lets non-SERIAL reads read the replicas as before.
var AccordModes = []string{"full", "mixed_reads"}

// WithAccord switches Accord on (accord.enabled) with mode as
// accord.default_transactional_mode: every table created after the nodes
// start, lockcheck's lock and register tables among them, has that
// transactional_mode, so their LWTs are Accord transactions and not Paxos
// rounds. Only a release with Accord (6.0-alpha) takes it; "" leaves
// Accord off.
func WithAccord(mode string) Option { return func(c *config) { c.accord = mode } }

// AccordStopMarkerPolicies are the values of accord.journal's
// stop_marker_failure_policy WithAccordStopMarker takes, as the 6.0-alpha2
// jar's AccordConfig.JournalConfig.StopMarkerFailurePolicy names them (its
// UNSAFE_STARTUP, deprecated there, left out): what a node does at start
// when its Accord journal has no stop marker newer than its start marker,
// as after a kill. EXIT (the release's default) refuses to start;
// ALLOW_UNSAFE_STARTUP starts as if its log of votes were complete (the
// jar's own words: very unsafe for isolation); REBOOTSTRAP starts and
// rebuilds its Accord state from its peers, answering no transaction it
// cannot be sure it did not answer before (CASSANDRA-20908).
var AccordStopMarkerPolicies = []string{"EXIT", "ALLOW_UNSAFE_STARTUP", "REBOOTSTRAP"}

// WithAccordStopMarker sets accord.journal.stop_marker_failure_policy
// (AccordStopMarkerPolicies) on a cluster with Accord on: with EXIT, the
// default, a node killed with SIGKILL never starts again. ""
// leaves the release's default.
func WithAccordStopMarker(policy string) Option { return func(c *config) { c.accordStop = policy } }

// WithLogger sets the logger for progress messages (default: none).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.logger = l
		}
	}
}

// ValidateOptions checks options the way Start does, without Docker: the
// CLI rejects bad input before it touches anything.
func ValidateOptions(opts ...Option) error {
	c := defaultConfig()
	for _, o := range opts {
		o(&c)
	}
	return c.validate()
}

var (
	nameRE = regexp.MustCompile(`^[a-z][a-z0-9.-]{0,30}$`)
	heapRE = regexp.MustCompile(`^[1-9][0-9]*[MG]$`)
)

// validate checks the options of Start; every problem is bad input
// (ErrBadOption), reported before anything is created.
func (c *config) validate() error {
	var errs []string
	if !nameRE.MatchString(c.name) {
		errs = append(errs, fmt.Sprintf("name %q: want lower-case letters, digits, '-' and '.', starting with a letter, at most 31", c.name))
	}
	if c.nodes < 1 || c.nodes > MaxNodes {
		errs = append(errs, fmt.Sprintf("nodes %d: want 1 to %d", c.nodes, MaxNodes))
	}
	if v, err := LookupVersion(c.version); err != nil {
		errs = append(errs, err.Error())
	} else if !knownPaxos(c.paxos) {
		errs = append(errs, fmt.Sprintf("paxos %q: want one of %s", c.paxos, strings.Join(allPaxos(), ", ")))
	} else if !v.takesPaxos(c.paxos) {
		errs = append(errs, fmt.Sprintf("paxos %s: Cassandra %s has only %s", c.paxos, v.Name, strings.Join(v.PaxosVariants(), ", ")))
	}
	if c.commitlogSync != "periodic" && c.commitlogSync != "batch" {
		errs = append(errs, fmt.Sprintf("commitlog sync %q: want periodic or batch", c.commitlogSync))
	}
	if c.spares < 0 || c.spares > MaxSpares {
		errs = append(errs, fmt.Sprintf("spares %d: want 0 to %d", c.spares, MaxSpares))
	} else if c.spares > 0 && c.dcCount() > 1 {
		errs = append(errs, "spares and data centres: not together (a spare joins the one ring of a single data centre)")
	}
	if c.purging != "" {
		if !slices.Contains(PaxosStatePurgings, c.purging) {
			errs = append(errs, fmt.Sprintf("paxos state purging %q: want one of %s", c.purging, strings.Join(PaxosStatePurgings, ", ")))
		} else if v := c.release(); v.LegacyYAML {
			errs = append(errs, fmt.Sprintf("paxos state purging: Cassandra %s has no such setting (4.1 and later)", v.Name))
		}
	}
	if c.noPaxosCache && c.release().LegacyYAML {
		errs = append(errs, fmt.Sprintf("paxos cache: Cassandra %s has no such setting (4.1 and later)", c.release().Name))
	}
	if c.paxosUpgrade {
		if c.paxos != "v1" {
			errs = append(errs, fmt.Sprintf("paxos upgrade: the cluster starts on Paxos v1 (not %s) for a run to switch it to v2", c.paxos))
		} else if v := c.release(); !v.takesPaxos("v2") {
			errs = append(errs, fmt.Sprintf("paxos upgrade: Cassandra %s has no Paxos v2 (4.1 and later)", v.Name))
		}
	}
	if c.accord != "" {
		if !slices.Contains(AccordModes, c.accord) {
			errs = append(errs, fmt.Sprintf("accord %q: want one of %s", c.accord, strings.Join(AccordModes, ", ")))
		} else if v := c.release(); !v.Accord {
			errs = append(errs, fmt.Sprintf("accord: Cassandra %s has no Accord (6.0-alpha)", v.Name))
		}
	}
	if c.accordStop != "" {
		if !slices.Contains(AccordStopMarkerPolicies, c.accordStop) {
			errs = append(errs, fmt.Sprintf("accord stop marker %q: want one of %s", c.accordStop, strings.Join(AccordStopMarkerPolicies, ", ")))
		} else if c.accord == "" {
			errs = append(errs, "accord stop marker: an Accord setting (--accord full or mixed_reads)")
		}
	}
	if c.skipRepair && c.paxos != "v2" {
		errs = append(errs, "skip Paxos repair on topology change: a Paxos v2 setting (--paxos v2)")
	}
	if !heapRE.MatchString(c.heap) {
		errs = append(errs, fmt.Sprintf("heap %q: want a size like 512M or 1G", c.heap))
	} else if mb := heapMB(c.heap); mb < 256 || mb > 8192 {
		errs = append(errs, fmt.Sprintf("heap %q: want 256M to 8G", c.heap))
	}
	switch {
	case c.dcs < 0 || c.dcs > MaxDCs:
		errs = append(errs, fmt.Sprintf("data centres %d: want 1 to %d", c.dcs, MaxDCs))
	case c.dcs > 1 && c.nodes < 2*c.dcs:
		errs = append(errs, fmt.Sprintf("data centres %d with %d nodes: want at least 2 nodes in each (--nodes %d)", c.dcs, c.nodes, 2*c.dcs))
	case c.dcs > 1 && (c.rf < 0 || c.rf > c.smallestDC()):
		errs = append(errs, fmt.Sprintf("replication factor %d: want 1 to the nodes of the smallest data centre (%d)", c.rf, c.smallestDC()))
	case c.dcs <= 1 && (c.rf < 0 || c.rf > c.nodes):
		errs = append(errs, fmt.Sprintf("replication factor %d: want 1 to the number of nodes (%d)", c.rf, c.nodes))
	}
	if c.subnet != "" {
		p, err := netip.ParsePrefix(c.subnet)
		if err != nil || !p.Addr().Is4() || p.Bits() > 24 || p.Bits() < 8 {
			errs = append(errs, fmt.Sprintf("subnet %q: want an IPv4 CIDR from /8 to /24, e.g. 10.199.7.0/24", c.subnet))
		}
	}
	if strings.ContainsAny(c.sshKey, "\n\r") || (c.sshKey != "" && !strings.HasPrefix(c.sshKey, "ssh-") && !strings.HasPrefix(c.sshKey, "ecdsa-")) {
		errs = append(errs, "ssh key: want one public key line (ssh-ed25519 AAAA...)")
	}
	if c.lazyFS != "" {
		if st, err := os.Stat(c.lazyFS); err != nil || !st.Mode().IsRegular() {
			errs = append(errs, fmt.Sprintf("lazy filesystem binary %q: not a file (build it: make build)", c.lazyFS))
		}
		if c.sshKey != "" {
			errs = append(errs, "lazy filesystem and ssh key: not together (a node reached over SSH restarts its JVM itself)")
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %s", ErrBadOption, strings.Join(errs, "; "))
	}
	return nil
}

// release is the Version the options name (the default one for a name
// validate refuses).
func (c *config) release() Version {
	if v, err := LookupVersion(c.version); err == nil {
		return v
	}
	v, _ := LookupVersion(DefaultVersion)
	return v
}

// replicationFactor is the keyspace's factor (in each data centre): the
// option or, by default, one replica on every node; 0 with WithDCs and no
// option: every node of each data centre (replication).
func (c *config) replicationFactor() int {
	switch {
	case c.rf != 0:
		return c.rf
	case c.dcs > 1:
		return 0
	case c.spares > 0:
		// A member must be able to leave (leave, remove) without the
		// ring falling below the replication factor.
		return max(c.nodes-1, 1)
	}
	return c.nodes
}

// dcCount is the number of data centres, at least 1.
func (c *config) dcCount() int { return max(c.dcs, 1) }

// dcOf is the data centre of node i (0-based): "dc1".."dcN", the nodes
// split in order, a remainder going to the first data centres.
func (c *config) dcOf(i int) string {
	n, k := c.nodes, c.dcCount()
	size, extra := n/k, n%k
	for d := range k {
		s := size
		if d < extra {
			s++
		}
		if i < s {
			return fmt.Sprintf("dc%d", d+1)
		}
		i -= s
	}
	return fmt.Sprintf("dc%d", k)
}

// dcNames are the data centres, "dc1".."dcN".
func (c *config) dcNames() []string {
	out := make([]string, c.dcCount())
	for d := range out {
		out[d] = fmt.Sprintf("dc%d", d+1)
	}
	return out
}

// replication is a keyspace's factor in each data centre of a cluster of
// several (NetworkTopologyStrategy): rf in each, or with rf 0 each one's
// node count; nil for one data centre (SimpleStrategy).
func (c *config) replication(rf int) map[string]int {
	if c.dcCount() < 2 {
		return nil
	}
	out := map[string]int{}
	for i := range c.nodes {
		if rf != 0 {
			out[c.dcOf(i)] = rf
		} else {
			out[c.dcOf(i)]++
		}
	}
	return out
}

// smallestDC is the node count of the smallest data centre (the last one).
func (c *config) smallestDC() int { return c.nodes / c.dcCount() }

// heapMB converts a validated heap size to MiB.
func heapMB(s string) int {
	var n int
	fmt.Sscanf(s[:len(s)-1], "%d", &n)
	if strings.HasSuffix(s, "G") {
		return n * 1024
	}
	return n
}
