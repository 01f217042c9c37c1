package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/exclusive"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/sshnode"
)

// External is how to reach a Cassandra cluster of the user's (lockcheck run
// --hosts): the clients connect to it; node faults need SSH.
type External struct {
	Hosts    []string // contact points, each a node lockcheck may fault
	Port     int      // CQL port (0: 9042)
	Keyspace string   // created if missing; lockcheck's tables go there only
	RF       int      // replication factor of a keyspace it creates (0: hosts, at most 3)
	DC       string   // local data centre ("": SimpleStrategy, any DC)
	// SSH gives node access (nil: client faults only).
	SSH *sshnode.Config
	Log *slog.Logger
}

// ExternalEnv is an Env on a cluster of the user's: it runs client faults
// with no access to the nodes, and node faults over SSH (package sshnode)
// on the hosts it was named, never on another.
type ExternalEnv struct {
	cfg   External
	nodes []*sshnode.Node
}

var _ Env = (*ExternalEnv)(nil)

var identRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,47}$`)

// Validate checks x without touching the network.
func (x External) Validate() error {
	if len(x.Hosts) == 0 {
		return errors.New("--hosts: no host given")
	}
	for _, h := range x.Hosts {
		if h == "" || strings.ContainsAny(h, " /") {
			return fmt.Errorf("--hosts: %q is not a host name or address", h)
		}
	}
	if !identRE.MatchString(x.Keyspace) {
		return fmt.Errorf("--keyspace %q: want a plain CQL identifier", x.Keyspace)
	}
	if x.RF < 0 || x.Port < 0 || x.Port > 65535 {
		return fmt.Errorf("--rf %d, --port %d: want --rf >= 0 and --port in 1..65535", x.RF, x.Port)
	}
	if x.DC != "" && !regexp.MustCompile(`^[A-Za-z0-9_.-]+$`).MatchString(x.DC) {
		return fmt.Errorf("--dc %q: want a data centre name", x.DC)
	}
	return nil
}

// OpenExternal connects to the hosts: one SSH connection per host when SSH
// is given, else a CQL session that creates the keyspace if it is missing
// (with SSH, the run's recipe set-up does, after the leftover heal).
// kinds are the run's fault kinds: a node kind without SSH, or one a host
// cannot serve (no iptables, no start command, no libfaketime), is refused
// here, before any fault starts. On error everything opened is closed.
func OpenExternal(ctx context.Context, x External, kinds []string) (*ExternalEnv, error) {
	if err := x.Validate(); err != nil {
		return nil, err
	}
	if x.Log == nil {
		x.Log = slog.Default()
	}
	if x.RF == 0 {
		x.RF = min(len(x.Hosts), 3)
	}
	e := &ExternalEnv{cfg: x}
	if nemesis.AnyNodeKind(kinds) && x.SSH == nil {
		var nk []string
		for _, k := range kinds {
			if nemesis.ScopeOf(k) == nemesis.ScopeNode {
				nk = append(nk, k)
			}
		}
		return nil, fmt.Errorf("--nemesis %s: node faults on --hosts need node access (--ssh-key, --ssh-user, --ssh-port); client faults (%s, %s) need none",
			strings.Join(nk, ","), nemesis.ClientPause, nemesis.ClientClock)
	}
	if x.SSH != nil {
		if err := e.dial(ctx, kinds); err != nil {
			e.Close()
			return nil, err
		}
	}
	if x.SSH != nil {
		// No CQL yet: a partition a killed harness left may cut it off,
		// and the run heals leftovers (over SSH) before it connects.
		return e, nil
	}
	s, err := e.Session(ctx)
	if err != nil {
		return nil, err
	}
	s.Close()
	return e, nil
}

// dial connects to every host together and checks it can serve the kinds.
func (e *ExternalEnv) dial(ctx context.Context, kinds []string) error {
	cfg := *e.cfg.SSH
	cfg.Log = e.cfg.Log
	if e.cfg.Port != 0 {
		cfg.CQLPort = e.cfg.Port
	}
	d, err := sshnode.NewDialer(cfg)
	if err != nil {
		return err
	}
	e.nodes = make([]*sshnode.Node, len(e.cfg.Hosts))
	errs := make([]error, len(e.cfg.Hosts))
	var wg sync.WaitGroup
	for i, h := range e.cfg.Hosts {
		wg.Go(func() {
			n, err := d.Dial(ctx, h, h)
			if err != nil {
				errs[i] = err
				return
			}
			e.nodes[i] = n
			errs[i] = n.Check(ctx, kinds)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Close closes the SSH connections.
func (e *ExternalEnv) Close() error {
	var errs []error
	for _, n := range e.nodes {
		if n != nil {
			errs = append(errs, n.Close())
		}
	}
	return errors.Join(errs...)
}

// Targets are the hosts reached over SSH (none without SSH: only client
// faults run).
func (e *ExternalEnv) Targets() []nemesis.Target {
	var ts []nemesis.Target
	for _, n := range e.nodes {
		if n == nil {
			continue
		}
		ip := n.Host
		if addrs, err := net.LookupHost(n.Host); err == nil && len(addrs) > 0 {
			ip = addrs[0]
		}
		ts = append(ts, nemesis.Target{Name: n.Name, IP: ip, Node: n})
	}
	return ts
}

// GatewayIP is the harness's address as the nodes see it (the source of
// its SSH connections), so that a partition can cut the clients off.
func (e *ExternalEnv) GatewayIP() string {
	for _, n := range e.nodes {
		if n != nil {
			return n.LocalIP()
		}
	}
	return ""
}

// ContactPoints are the hosts at their CQL port (a --lock-cmd plug-in is told).
func (e *ExternalEnv) ContactPoints() []string {
	port := strconv.Itoa(cmp.Or(e.cfg.Port, cqlPort))
	var cps []string
	for _, h := range e.cfg.Hosts {
		cps = append(cps, net.JoinHostPort(h, port))
	}
	return cps
}

// Describe knows nothing of a user's cluster beyond its hosts: the meta
// line records no Paxos variant or commitlog it did not set.
func (e *ExternalEnv) Describe() map[string]string { return nil }

// Lease is where two users of the user's hosts exclude each other. With
// SSH, a flock held on every host over SSH: the run's own leftover
// partition (which lets SSH through) may cut the harness off from CQL until
// it heals, and it may heal only once it holds the cluster. Without SSH the
// run faults only its clients, and a row in the keyspace does: users of a
// cluster of the user's may be on several machines, and CQL is what they
// all reach.
func (e *ExternalEnv) Lease() exclusive.Store {
	if hosts := e.leaseHosts(); len(hosts) > 0 {
		return exclusive.Hosts{Nodes: hosts, Log: e.cfg.Log}
	}
	hs := slices.Clone(e.cfg.Hosts)
	slices.Sort(hs)
	return exclusive.CQL{Session: e.Session, Keyspace: e.cfg.Keyspace, ID: strings.Join(hs, ",") + ":" + strconv.Itoa(cmp.Or(e.cfg.Port, cqlPort)), Log: e.cfg.Log}
}

func (e *ExternalEnv) leaseHosts() []exclusive.Host {
	var hs []exclusive.Host
	for _, n := range e.nodes {
		if n != nil {
			hs = append(hs, sshHost{n})
		}
	}
	return hs
}

// sshHost is a node as exclusive sees it.
type sshHost struct{ n *sshnode.Node }

func (h sshHost) HostName() string { return h.n.Host }

func (h sshHost) Start(ctx context.Context, script string, args ...string) (exclusive.Script, error) {
	p, err := h.n.Start(ctx, script, args...)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Keyspace is the keyspace lockcheck's tables go in.
func (e *ExternalEnv) Keyspace() string { return e.cfg.Keyspace }

// Spares: a user's cluster has none lockcheck may bootstrap.
func (e *ExternalEnv) Spares() []nemesis.Target { return nil }

// DCs: the user's hosts are used from one data centre (--dc), so clients
// are not placed.
func (e *ExternalEnv) DCs() []string { return nil }

// DCSession is not offered for the user's hosts: DCs is nil.
func (e *ExternalEnv) DCSession(context.Context, string) (*gocql.Session, error) {
	return nil, errors.New("the user's hosts are used from one data centre (--dc)")
}

// LocalDC is the data centre the user named (--dc), "" when none: a
// plug-in is told it (LOCKCHECK_DC).
func (e *ExternalEnv) LocalDC() string { return e.cfg.DC }

func (e *ExternalEnv) hostsConfig(keyspace, pin string) cluster.HostsConfig {
	return cluster.HostsConfig{Hosts: e.cfg.Hosts, Port: e.cfg.Port, DC: e.cfg.DC, Keyspace: keyspace, Pin: pin, Log: e.cfg.Log}
}

// Session opens a session in the keyspace, creating the keyspace first if
// it is missing (SimpleStrategy, or NetworkTopologyStrategy in --dc); a --dc
// the cluster lacks, or one the user's keyspace keeps no replica in, is
// refused.
func (e *ExternalEnv) Session(ctx context.Context) (*gocql.Session, error) {
	s, err := cluster.ConnectHosts(ctx, e.hostsConfig("", ""))
	if err != nil {
		return nil, err
	}
	if e.cfg.DC != "" {
		err = cluster.CheckLocalDC(ctx, s, e.cfg.Keyspace, e.cfg.DC)
	}
	if err == nil {
		err = cluster.CreateKeyspace(ctx, s, e.cfg.Keyspace, e.cfg.RF, e.cfg.DC)
	}
	s.Close()
	if err != nil {
		return nil, err
	}
	return cluster.ConnectHosts(ctx, e.hostsConfig(e.cfg.Keyspace, ""))
}

// WaitHealthy waits until every host answers CQL on its own.
func (e *ExternalEnv) WaitHealthy(ctx context.Context) error {
	for _, h := range e.cfg.Hosts {
		for {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			s, err := cluster.ConnectHosts(cctx, e.hostsConfig("", h))
			if err == nil {
				var v string
				err = s.Query(`SELECT release_version FROM system.local`).Consistency(gocql.One).ScanContext(cctx, &v)
				s.Close()
			}
			cancel()
			if err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s does not answer CQL: %w", h, err)
			case <-time.After(time.Second):
			}
		}
	}
	return nil
}

// CopyLogs copies nothing: a user's hosts keep their logs where their
// configuration puts them.
func (e *ExternalEnv) CopyLogs(context.Context, string) error { return nil }

// NodeSession opens a session in the keyspace whose every query goes to the
// named host alone (`run --pin-clients`).
func (e *ExternalEnv) NodeSession(ctx context.Context, node string) (*gocql.Session, error) {
	for _, n := range e.nodes {
		if n != nil && n.Name == node {
			return cluster.ConnectHosts(ctx, e.hostsConfig(e.cfg.Keyspace, n.Host))
		}
	}
	return nil, fmt.Errorf("no host %q", node)
}
