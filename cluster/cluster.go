package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// startTimeout bounds how long Start waits for a new cluster to become
// healthy when ctx has no earlier deadline.
const startTimeout = 4 * time.Minute

// Cluster is a handle on a running N-node Cassandra cluster: one started by
// Start or found by Attach.
type Cluster struct {
	cfg      config
	d        *docker
	log      *slog.Logger
	layout   layout
	netName  string
	keyspace string
	nodes    []*Node
	// spares are the nodes outside the ring at the start (WithSpares).
	spares []*Node
	// memberMu serialises the membership changes (Join, Leave, Replace,
	// Remove, ResetMembership): one range movement at a time.
	memberMu sync.Mutex
	// healthReady: WaitHealthy's table exists.
	healthReady bool
	// shaping is what the nodes' kernel offers to shape links (shape.go),
	// probed once.
	shaping shapeProbe
}

// Paths inside a node.
const (
	confDir      = "/etc/lockcheck"
	binDir       = "/opt/lockcheck/bin"
	logDir       = "/var/log/cassandra"
	faketimeFile = confDir + "/faketime"
	pidFile      = "/run/cassandra.pid"
	// The lazy filesystem (WithLazyFS): its binary, and the status it
	// keeps of what it holds unsynced.
	lazyFSBin    = binDir + "/lockcheck-lazyfs"
	lazyFSStatus = "/run/lockcheck-lazyfs.status"
)

// Start builds the node image if missing, removes what an earlier cluster
// of the same name left, starts N nodes at once on a new network and returns
// when every node has bootstrapped and sees all the others up, with the
// lockcheck keyspace created. On error nothing it created is left running.
func Start(ctx context.Context, opts ...Option) (*Cluster, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	subnet := defaultSubnet(cfg.name)
	if cfg.subnet != "" {
		subnet = netip.MustParsePrefix(cfg.subnet).Masked()
	}
	d, err := newDocker(ctx)
	if err != nil {
		return nil, err
	}
	log := cfg.logger.With("cluster", cfg.name)
	if v := cfg.release(); v.Experimental {
		log.Warn("an experimental Cassandra release: what it does is not a finding about a released Cassandra", "cassandra", v.Cassandra)
	}
	begin := time.Now()
	if left, _ := d.containers(ctx, cfg.name); len(left) > 0 {
		log.Info("removing what an earlier cluster of this name left", "containers", len(left))
	}
	if err := d.removeAll(ctx, cfg.name); err != nil {
		d.Close()
		return nil, fmt.Errorf("remove earlier cluster %q: %w", cfg.name, err)
	}
	image, err := ensureNodeImage(ctx, d, &cfg)
	if err != nil {
		d.Close()
		return nil, err
	}
	if subnet, err = freeSubnet(ctx, d, subnet, cfg.subnet == ""); err != nil {
		d.Close()
		return nil, err
	}
	cfg.image = image
	c := &Cluster{
		cfg:      cfg,
		d:        d,
		log:      log,
		layout:   newLayout(subnet, cfg.nodes+cfg.spares),
		netName:  cfg.name + "-net",
		keyspace: DefaultKeyspace,
	}
	if err := c.start(ctx); err != nil {
		// Clean up with a fresh context: ctx may be what ended.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if rerr := d.removeAll(cctx, cfg.name); rerr != nil {
			err = errors.Join(err, fmt.Errorf("clean up: %w", rerr))
		}
		d.Close()
		return nil, err
	}
	log.Info("cluster up", "nodes", cfg.nodes, "cassandra", cfg.release().Cassandra, "image", image, "took", time.Since(begin).Round(100*time.Millisecond))
	return c, nil
}

// start creates the network and the nodes, starts them and waits.
func (c *Cluster) start(ctx context.Context) error {
	if _, hasDeadline := ctx.Deadline(); !hasDeadline {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, startTimeout)
		defer cancel()
	}
	if _, err := c.d.createNetwork(ctx, c.netName, c.cfg.name, c.layout); err != nil {
		return err
	}
	// Containers are created and started side by side: on a loaded machine
	// each Docker call takes a second or more.
	ncs := nodeConfigs(c.cfg, c.layout)
	nodes := make([]*Node, len(ncs))
	errs := make([]error, len(ncs))
	var wg sync.WaitGroup
	for i, nc := range ncs {
		wg.Go(func() { nodes[i], errs[i] = c.createNode(ctx, i+1, nc) })
	}
	wg.Wait()
	for i, n := range nodes {
		switch {
		case n == nil:
		case i < c.cfg.nodes:
			c.nodes = append(c.nodes, n)
		default:
			c.spares = append(c.spares, n)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// Spares stay stopped until a membership fault bootstraps one.
	for i, n := range c.nodes {
		wg.Go(func() {
			if _, err := c.d.ContainerStart(ctx, n.ContainerID, client.ContainerStartOptions{}); err != nil {
				errs[i] = fmt.Errorf("start %s: %w", n.Name, err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	c.log.Info("nodes started, waiting until healthy", "nodes", len(c.nodes), "subnet", c.layout.subnet)
	begin := time.Now()
	if err := c.WaitHealthy(ctx); err != nil {
		return err
	}
	c.log.Debug("healthy", "took", time.Since(begin).Round(100*time.Millisecond))
	return c.createKeyspace(ctx)
}

// nodeFiles are the files every node gets before it starts: the scripts and
// configuration of the image inputs (so a user's image needs none of them)
// and the node's own cassandra.yaml, data centre and JVM flags.
func nodeFiles(yaml, rackDC, options []byte) ([]file, error) {
	files := []file{
		{path: confDir + "/cassandra.yaml", mode: 0o644, body: yaml},
		{path: confDir + "/cassandra-rackdc.properties", mode: 0o644, body: rackDC},
		{path: confDir + "/node.options", mode: 0o644, body: options},
		{path: faketimeFile, mode: 0o644, body: []byte(clockOffsetLine(0))},
	}
	for _, f := range []struct{ src, dst string }{
		{"image/entrypoint.sh", binDir + "/entrypoint.sh"},
		{"image/nodetool", binDir + "/nodetool"},
		{"image/jvm.options", confDir + "/jvm.options"},
		{"image/logback.xml", confDir + "/logback.xml"},
		{"image/logback-tools.xml", confDir + "/logback-tools.xml"},
	} {
		b, err := fs.ReadFile(imageFS, f.src)
		if err != nil {
			return nil, err
		}
		mode := int64(0o644)
		if strings.HasPrefix(f.dst, binDir) {
			mode = 0o755
		}
		files = append(files, file{path: f.dst, mode: mode, body: b})
	}
	return files, nil
}

// nodeEnv is the environment of every node's entrypoint.
func (c *Cluster) nodeEnv() []string {
	env := []string{"LOCKCHECK_HEAP=" + c.cfg.heap}
	if c.cfg.lazyFS != "" {
		env = append(env, "LOCKCHECK_LAZYFS="+lazyFSBin, "LOCKCHECK_LAZYFS_STATUS="+lazyFSStatus, "LOCKCHECK_LAZYFS_LATENCY="+lazyFSLatency)
	}
	if c.cfg.sshKey != "" {
		env = append(env, "LOCKCHECK_SSH_AUTHORIZED_KEY="+c.cfg.sshKey)
	}
	return env
}

func (c *Cluster) createNode(ctx context.Context, i int, nc nodeConfig) (*Node, error) {
	name := fmt.Sprintf("n%d", i)
	yaml, err := renderYAML(nc)
	if err != nil {
		return nil, err
	}
	files, err := nodeFiles(yaml, nc.rackDC(), c.nodeOptions(""))
	if err != nil {
		return nil, err
	}
	init := true
	hc := &container.HostConfig{
		// docker-init as PID 1 makes the JVM an ordinary process that
		// signals sent from inside the container reach.
		Init:        &init,
		CapAdd:      []string{"NET_ADMIN"},
		NetworkMode: container.NetworkMode(c.netName),
	}
	if c.cfg.lazyFS != "" {
		// Copied in rather than built into the image, so that the image's
		// hash (and a user's --image) does not depend on our Go code.
		bin, err := os.ReadFile(c.cfg.lazyFS)
		if err != nil {
			return nil, fmt.Errorf("lazy filesystem: %w", err)
		}
		files = append(files, file{path: lazyFSBin, mode: 0o755, body: bin})
		// FUSE: mount(2) needs CAP_SYS_ADMIN and the device; Docker's
		// AppArmor profile (where the host has one) forbids mounts.
		hc.CapAdd = append(hc.CapAdd, "SYS_ADMIN")
		hc.Devices = []container.DeviceMapping{{PathOnHost: "/dev/fuse", PathInContainer: "/dev/fuse", CgroupPermissions: "rwm"}}
		hc.SecurityOpt = []string{"apparmor=unconfined"}
	}
	ip := c.layout.nodes[i-1]
	lazy := ""
	if c.cfg.lazyFS != "" {
		lazy = "1"
	}
	labels := map[string]string{
		labelCluster:  c.cfg.name,
		labelNode:     name,
		labelKeyspace: DefaultKeyspace,
		labelRF:       strconv.Itoa(c.cfg.replicationFactor()),
		labelPaxos:    c.cfg.paxos,
		labelVersion:  c.cfg.version,
		labelCommit:   c.cfg.commitlogSync,
		labelHeap:     c.cfg.heap,
		labelNodes:    strconv.Itoa(c.cfg.nodes),
		labelImage:    c.cfg.image,
		labelLazyFS:   lazy,
		labelDC:       nc.DC,
		labelDCs:      strconv.Itoa(c.cfg.dcCount()),
		labelSpares:   strconv.Itoa(c.cfg.spares),
		labelSkip:     strconv.FormatBool(c.cfg.skipRepair),
		labelPurging:  c.cfg.purging,
		labelNoCache:  strconv.FormatBool(c.cfg.noPaxosCache),
		labelUpgrade:  strconv.FormatBool(c.cfg.paxosUpgrade),
		labelAccord:   c.cfg.accord,
		labelAccordSM: c.cfg.accordStop,
	}
	if i > c.cfg.nodes {
		labels[labelSpare] = "1"
	}
	res, err := c.d.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: c.cfg.name + "-" + name,
		Config: &container.Config{
			Image:      c.cfg.image,
			Hostname:   name,
			Entrypoint: []string{binDir + "/entrypoint.sh"},
			Env:        c.nodeEnv(),
			Labels:     labels,
			StopSignal: "SIGTERM",
		},
		HostConfig: hc,
		NetworkingConfig: &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
			c.netName: {IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: ip}, Aliases: []string{name}},
		}},
	})
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", name, err)
	}
	if err := c.d.copyFiles(ctx, res.ID, files); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &Node{Name: name, IP: ip.String(), ContainerID: res.ID, DC: nc.DC, c: c}, nil
}

func (c *Cluster) createKeyspace(ctx context.Context) error {
	// The keyspace does not exist yet: this session has none set.
	cfg := clusterConfig(c.log, "", c.Hosts()...)
	s, err := createSession(ctx, cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := createKeyspace(ctx, s, c.keyspace, c.cfg.replicationFactor(), c.cfg.replication(c.cfg.rf)); err != nil {
		return err
	}
	if err := s.AwaitSchemaAgreement(ctx); err != nil {
		return fmt.Errorf("create keyspace %s: schema agreement: %w", c.keyspace, err)
	}
	return nil
}

// Attach returns a handle on the running cluster of the name given with
// WithName (default "lockcheck"), as `lockcheck cluster up` left it, even
// when its nodes are all stopped. It wraps ErrNotRunning when no container
// of that cluster exists.
func Attach(ctx context.Context, opts ...Option) (*Cluster, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	d, err := newDocker(ctx)
	if err != nil {
		return nil, err
	}
	c, err := attach(ctx, d, cfg)
	if err != nil {
		d.Close()
		return nil, err
	}
	return c, nil
}

func attach(ctx context.Context, d *docker, cfg config) (*Cluster, error) {
	all, err := d.containers(ctx, cfg.name)
	if err != nil {
		return nil, err
	}
	// A helper a killed harness left (runBeside) is not a node.
	cs := slices.DeleteFunc(all, func(s container.Summary) bool { return s.Labels[labelHelper] != "" })
	// Containers that all stopped are still the cluster (its data, its
	// address plan): a harness killed while the kill fault held a 1-node
	// cluster down, or a machine reboot, leaves it so. Attach it: the
	// leftover heal starts the nodes again (Node.Reset) rather than a new
	// cluster replacing it.
	if len(cs) == 0 {
		return nil, fmt.Errorf("%w named %q (start one with `lockcheck cluster up`)", ErrNotRunning, cfg.name)
	}
	lb := cs[0].Labels
	cfg.nodes, _ = strconv.Atoi(lb[labelNodes])
	cfg.rf, _ = strconv.Atoi(lb[labelRF])
	cfg.dcs, _ = strconv.Atoi(lb[labelDCs]) // none: a cluster of one data centre
	cfg.spares, _ = strconv.Atoi(lb[labelSpares])
	cfg.skipRepair = lb[labelSkip] == "true"
	cfg.purging = lb[labelPurging]
	cfg.noPaxosCache = lb[labelNoCache] == "true"
	cfg.paxosUpgrade = lb[labelUpgrade] == "true"
	cfg.accord = lb[labelAccord]
	cfg.accordStop = lb[labelAccordSM]
	cfg.paxos, cfg.commitlogSync, cfg.heap, cfg.image = lb[labelPaxos], lb[labelCommit], lb[labelHeap], lb[labelImage]
	// Clusters started before versions were labelled ran 5.0.
	cfg.version = cmp.Or(lb[labelVersion], "5.0")
	if lb[labelLazyFS] != "" {
		// The binary is already in the nodes; only "on" matters here.
		cfg.lazyFS = lazyFSBin
	}
	c := &Cluster{cfg: cfg, d: d, log: cfg.logger.With("cluster", cfg.name), netName: cfg.name + "-net", keyspace: lb[labelKeyspace]}
	if c.keyspace == "" {
		c.keyspace = DefaultKeyspace
	}
	nres, err := d.NetworkInspect(ctx, c.netName, client.NetworkInspectOptions{})
	if err != nil {
		return nil, fmt.Errorf("%w: network %s: %w", ErrNotRunning, c.netName, err)
	}
	if len(nres.Network.IPAM.Config) == 0 {
		return nil, fmt.Errorf("network %s has no subnet", c.netName)
	}
	ipam := nres.Network.IPAM.Config[0]
	c.layout = layout{subnet: ipam.Subnet, gateway: ipam.Gateway}
	for _, s := range cs {
		name := s.Labels[labelNode]
		ins, err := d.ContainerInspect(ctx, s.ID, client.ContainerInspectOptions{})
		if err != nil {
			return nil, fmt.Errorf("inspect %s: %w", name, err)
		}
		ep := ins.Container.NetworkSettings.Networks[c.netName]
		if ep == nil || ep.IPAMConfig == nil {
			return nil, fmt.Errorf("node %s is not on network %s", name, c.netName)
		}
		n := &Node{Name: name, IP: ep.IPAMConfig.IPv4Address.String(), ContainerID: s.ID, DC: cmp.Or(s.Labels[labelDC], "dc1"), c: c}
		if s.Labels[labelSpare] != "" {
			c.spares = append(c.spares, n)
		} else {
			c.nodes = append(c.nodes, n)
		}
	}
	byName := func(a, b *Node) int { return cmp.Compare(len(a.Name), len(b.Name))*2 + strings.Compare(a.Name, b.Name) }
	slices.SortFunc(c.nodes, byName)
	slices.SortFunc(c.spares, byName)
	for _, n := range append(slices.Clone(c.nodes), c.spares...) {
		c.layout.nodes = append(c.layout.nodes, netip.MustParseAddr(n.IP))
	}
	return c, nil
}

// Down removes every container and network labelled with the cluster name,
// whether the cluster runs, stopped or crashed. Removing nothing is no error.
func Down(ctx context.Context, name string) error {
	d, err := newDocker(ctx)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.removeAll(ctx, name)
}

// Name is the cluster's name (its Docker labels carry it).
func (c *Cluster) Name() string { return c.cfg.name }

// Nodes returns the nodes n1..nN in order.
func (c *Cluster) Nodes() []*Node { return slices.Clone(c.nodes) }

// Node returns the node of the name "n1".."nN".
func (c *Cluster) Node(name string) (*Node, error) {
	for _, n := range c.nodes {
		if n.Name == name {
			return n, nil
		}
	}
	return nil, fmt.Errorf("cluster %s has no node %q", c.cfg.name, name)
}

// Spares are the nodes outside the ring at the start (WithSpares), in
// order: stopped until a membership fault bootstraps one.
func (c *Cluster) Spares() []*Node { return slices.Clone(c.spares) }

// PaxosStatePurging is the paxos_state_purging the nodes were given ("":
// none, the release's default).
func (c *Cluster) PaxosStatePurging() string { return c.cfg.purging }

// Accord is the default transactional_mode the nodes run Accord with (""
// when Accord is off: WithAccord).
func (c *Cluster) Accord() string { return c.cfg.accord }

// AccordStopMarker is the nodes' accord.journal.stop_marker_failure_policy
// ("" when not set: the release's, EXIT; WithAccordStopMarker).
func (c *Cluster) AccordStopMarker() string { return c.cfg.accordStop }

// NoPaxosCache says whether the nodes run with paxos_cache_size 0
// (WithoutPaxosCache).
func (c *Cluster) NoPaxosCache() bool { return c.cfg.noPaxosCache }

// SkipPaxosRepair says whether skip_paxos_repair_on_topology_change is set.
func (c *Cluster) SkipPaxosRepair() bool { return c.cfg.skipRepair }

// PaxosUpgrade says whether a run may switch the nodes from Paxos v1 to v2
// (WithPaxosUpgrade).
func (c *Cluster) PaxosUpgrade() bool { return c.cfg.paxosUpgrade }

// Keyspace is the keyspace created for the recipes ("lockcheck").
func (c *Cluster) Keyspace() string { return c.keyspace }

// ReplicationFactor is the keyspace's replication factor; with several data
// centres, the factor in each, or 0 when every node of each is a replica
// (their sizes may differ: 3 and 2).
func (c *Cluster) ReplicationFactor() int { return c.cfg.replicationFactor() }

// DCs are the data centres, "dc1".."dcN" (one, "dc1", unless started
// WithDCs; a cluster of one data centre runs SimpleSnitch, whose data centre
// Cassandra calls datacenter1).
func (c *Cluster) DCs() []string { return c.cfg.dcNames() }

// Paxos is the nodes' paxos_variant ("v1" or "v2").
func (c *Cluster) Paxos() string { return c.cfg.paxos }

// Version is the Cassandra release the nodes run (Version.Cassandra is
// the patch release, "4.1.10").
func (c *Cluster) Version() Version { return c.cfg.release() }

// CommitlogSync is the nodes' commitlog_sync: periodic or batch.
func (c *Cluster) CommitlogSync() string { return c.cfg.commitlogSync }

// LazyFS says whether the nodes' data lives on the lazy filesystem
// (WithLazyFS): only then does Node.PowerOff lose unsynced writes.
func (c *Cluster) LazyFS() bool { return c.cfg.lazyFS != "" }

// Image is the image the nodes run.
func (c *Cluster) Image() string { return c.cfg.image }

// Hosts returns the node IPs (CQL on port 9042), reachable from the host.
func (c *Cluster) Hosts() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.IP
	}
	return out
}

// GatewayIP is the address the host's clients appear from on the cluster
// network (the bridge's own address): a partition that cuts a node off
// from the clients drops traffic from it.
func (c *Cluster) GatewayIP() string { return c.layout.gateway.String() }

// Subnet is the cluster network's subnet.
func (c *Cluster) Subnet() string { return c.layout.subnet.String() }

// Stop copies every node's logs (the spares' too: a spare's failed
// bootstrap is in its own) to logsDir/<node>/ when logsDir is not empty,
// then removes the cluster's containers and network.
func (c *Cluster) Stop(ctx context.Context, logsDir string) error {
	var errs []error
	if logsDir != "" {
		for _, n := range c.nodes {
			if err := n.CopyLogs(ctx, logsDir); err != nil {
				errs = append(errs, err)
			}
		}
		for _, n := range c.spares {
			_ = n.CopyLogs(ctx, logsDir) // a spare that never ran has none
		}
	}
	if err := c.d.removeAll(ctx, c.cfg.name); err != nil {
		errs = append(errs, err)
	}
	c.d.Close()
	return errors.Join(errs...)
}

// WaitHealthy waits until every node runs, has bootstrapped, serves CQL and
// sees every other node up and normal (UN in nodetool status). It fails at
// once when a node's container is not running (killed, paused or exited:
// that does not heal by itself), with the container's last log lines.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	cql := make(map[string]bool) // nodes found serving CQL
	var last error
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		err := c.checkHealthy(ctx, cql)
		if err == nil {
			return nil
		}
		var fatal *nodeDownError
		if errors.As(err, &fatal) {
			return err
		}
		if ctx.Err() != nil && last != nil {
			// err is only the deadline cutting a check short: keep the
			// reason seen before.
			return fmt.Errorf("cluster %s not healthy: %w (last: %v)", c.cfg.name, ctx.Err(), last)
		}
		if last == nil || err.Error() != last.Error() {
			c.log.Debug("not healthy yet", "err", err)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster %s not healthy: %w (last: %v)", c.cfg.name, ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// nodeDownError: a node's container does not run.
type nodeDownError struct {
	node, state string
	code        int
	logs        string
}

func (e *nodeDownError) Error() string {
	msg := fmt.Sprintf("node %s is %s", e.node, e.state)
	if e.state == "exited" {
		msg += fmt.Sprintf(" (exit code %d)", e.code)
	}
	if e.logs != "" {
		msg += ": " + e.logs
	}
	return msg
}

func (e *nodeDownError) Unwrap() error {
	if e.code == 78 { // the entrypoint's "this image cannot run a node"
		return ErrBadImage
	}
	return nil
}

func (c *Cluster) checkHealthy(ctx context.Context, cql map[string]bool) error {
	for _, n := range c.nodes {
		ins, err := c.d.ContainerInspect(ctx, n.ContainerID, client.ContainerInspectOptions{})
		if err != nil {
			return fmt.Errorf("inspect %s: %w", n.Name, err)
		}
		st := ins.Container.State
		if st.Paused {
			return &nodeDownError{node: n.Name, state: "paused"}
		}
		if !st.Running {
			return &nodeDownError{node: n.Name, state: string(st.Status), code: st.ExitCode, logs: lastLine(c.d.logsTail(ctx, n.ContainerID, 5))}
		}
	}
	for _, n := range c.nodes {
		if cql[n.Name] {
			continue
		}
		if err := n.servesCQL(ctx); err != nil {
			return err
		}
		cql[n.Name] = true
	}
	if !c.healthReady {
		if err := c.createHealthTable(ctx); err != nil {
			return err
		}
		c.healthReady = true
	}
	// Every node's own view: a read at consistency ALL of a table with a
	// replica on every node, coordinated by each node in turn. A
	// coordinator whose failure detector holds any node down refuses it at
	// once (Unavailable); one that sees all up gets every replica's answer.
	// (nodetool status says the same for a JVM start of a few CPU seconds a
	// node; `lockcheck cluster status` uses it.)
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		wg.Go(func() { errs[i] = n.seesAllUp(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// healthKeyspace holds one empty table replicated to every node, for
// WaitHealthy's reads at consistency ALL.
const healthKeyspace = "lockcheck_health"

func (c *Cluster) createHealthTable(ctx context.Context) error {
	s, err := createSession(ctx, clusterConfig(c.log, "", c.Hosts()...))
	if err != nil {
		return err
	}
	defer s.Close()
	if err := createKeyspace(ctx, s, healthKeyspace, len(c.nodes), c.cfg.replication(0)); err != nil {
		return fmt.Errorf("health table: %w", err)
	}
	if err := s.Query(fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s.probe (k int PRIMARY KEY)`, healthKeyspace)).ExecContext(ctx); err != nil {
		return fmt.Errorf("health table: %w", err)
	}
	if err := s.AwaitSchemaAgreement(ctx); err != nil {
		return fmt.Errorf("health table: schema agreement: %w", err)
	}
	return nil
}

// seesAllUp reads the health table at ALL with n as coordinator.
func (n *Node) seesAllUp(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s, err := pinnedSession(cctx, n.c.log, "", n.IP)
	if err != nil {
		return fmt.Errorf("%s: %w", n.Name, err)
	}
	defer s.Close()
	err = s.Query(`SELECT k FROM ` + healthKeyspace + `.probe WHERE k = 0`).Consistency(gocql.All).IterContext(cctx).Close()
	if err != nil {
		return fmt.Errorf("%s does not see every node up: %w", n.Name, err)
	}
	return nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// NodeStatus is one line of `lockcheck cluster status`.
type NodeStatus struct {
	Name, IP string
	// State is the node's state as another running node sees it ("UN", "DN",
	// "UJ" joining, "UL" leaving), "out" for a member the ring does not
	// hold (it left or was removed), "spare" for a spare out of the ring,
	// or "DN" when no node could be asked.
	State string
	// Container is Docker's state of the node's container ("running", "paused", "exited").
	Container string
	// DC is the node's data centre as the ring sees it ("" when no node
	// could be asked).
	DC string
	// Version is the node's Cassandra release_version, "" when unreachable.
	Version string
	// Faults are what lockcheck left on the node (Node.Faults): why a node
	// is not UN, or a fault that does not show in the ring (a clock offset).
	Faults []string
}

// Status reports every node: its state in the ring as the first reachable
// node sees it, its container state and Cassandra version.
func (c *Cluster) Status(ctx context.Context) ([]NodeStatus, error) {
	all := append(slices.Clone(c.nodes), c.spares...)
	out := make([]NodeStatus, len(all))
	var view map[string]RingEntry
	for i, n := range all {
		out[i] = NodeStatus{Name: n.Name, IP: n.IP, State: "DN"}
		if i >= len(c.nodes) {
			out[i].State = "spare" // unless the ring holds it (below)
		}
		ins, err := c.d.ContainerInspect(ctx, n.ContainerID, client.ContainerInspectOptions{})
		if err != nil {
			return nil, fmt.Errorf("inspect %s: %w", n.Name, err)
		}
		out[i].Container = string(ins.Container.State.Status)
		if ins.Container.State.Status == container.StatePaused {
			// Its rules and clock can be read (Faults); the ring and
			// version cannot.
			if out[i].Faults, err = n.Faults(ctx); err != nil {
				return nil, err
			}
			continue
		}
		if ins.Container.State.Status != container.StateRunning {
			if i < len(c.nodes) {
				out[i].Faults = []string{"container " + string(ins.Container.State.Status)}
			}
			continue
		}
		if out[i].Faults, err = n.Faults(ctx); err != nil {
			return nil, err
		}
		if view == nil {
			vctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			view, _ = n.ringView(vctx)
			cancel()
		}
		vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		out[i].Version, _ = n.releaseVersion(vctx)
		cancel()
	}
	for i := range out {
		e, ok := view[out[i].IP]
		if i >= len(c.nodes) {
			if f := spareFault(ok, out[i].Container); f != "" {
				out[i].Faults = append(out[i].Faults, f)
			}
		}
		switch {
		case ok:
			out[i].DC = e.DC
			if out[i].Container != string(container.StatePaused) {
				out[i].State = e.State
			}
		case len(view) > 0 && i < len(c.nodes):
			// The ring was read and holds no such node: a member that
			// left (or was removed), not one that is down.
			out[i].State = "out"
		}
	}
	return out, nil
}

// spareFault is what keeps a spare from its starting state, out of the
// ring and stopped, in `cluster status` words: a join (a run's, or one a
// killed run left) put it in the ring, or started it. Its state column
// alone ("UJ", "UN") would not say the node is a spare.
func spareFault(inRing bool, container string) string {
	switch {
	case inRing:
		return "a spare in the ring"
	case container == "running", container == "paused":
		return "a spare running out of the ring"
	}
	return ""
}

// releaseVersion asks the node itself for its Cassandra version.
func (n *Node) releaseVersion(ctx context.Context) (string, error) {
	s, err := pinnedSession(ctx, n.c.log, "", n.IP)
	if err != nil {
		return "", err
	}
	defer s.Close()
	var v string
	err = s.Query(`SELECT release_version FROM system.local`).Consistency(gocql.One).ScanContext(ctx, &v)
	return v, err
}

// freeSubnet checks subnet against the machine's networks. A subnet derived
// from the name (not chosen with WithSubnet) that clashes moves on to the
// next /24 of 10.199.0.0/16: two names can hash to one subnet, and the
// jepsen tests run several clusters at once.
func freeSubnet(ctx context.Context, d *docker, subnet netip.Prefix, derived bool) (netip.Prefix, error) {
	err := d.checkSubnet(ctx, subnet)
	if err == nil || !derived || !errors.Is(err, ErrNetworkClash) {
		return subnet, err
	}
	for range 254 {
		b := subnet.Addr().As4()
		b[2] = 1 + b[2]%254 // 1..254: 10.199.0.0/24 is the default cluster's
		subnet = netip.PrefixFrom(netip.AddrFrom4(b), 24)
		if d.checkSubnet(ctx, subnet) == nil {
			return subnet, nil
		}
	}
	return subnet, err
}
