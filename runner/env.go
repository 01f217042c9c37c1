package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/exclusive"
	"github.com/lockcheck/lockcheck/nemesis"
)

// Env is the cluster a test runs on, as the runner needs it: a cluster
// started or attached here (ClusterEnv) and the user's hosts (ExternalEnv)
// both implement all of it, so that the runner, the recipes and the
// plug-ins never probe for what an environment can do.
type Env interface {
	// Targets are the nodes, for the nemesis (none: client faults only).
	Targets() []nemesis.Target
	// GatewayIP is where the harness's clients appear from on the cluster network.
	GatewayIP() string
	// WaitHealthy waits until every node serves CQL again.
	WaitHealthy(ctx context.Context) error
	// CopyLogs copies every node's logs to dir/<node>/.
	CopyLogs(ctx context.Context, dir string) error
	// Session opens a session in Keyspace, which exists once it returns.
	Session(ctx context.Context) (*gocql.Session, error)
	// Keyspace is where lockcheck's tables go.
	Keyspace() string
	// NodeSession opens a session in Keyspace whose every query goes to the
	// named target alone (`run --pin-clients`).
	NodeSession(ctx context.Context, node string) (*gocql.Session, error)
	// Spares are the nodes outside the ring at the start, for the
	// membership kinds (join bootstraps one); none for most clusters.
	Spares() []nemesis.Target
	// DCs are the cluster's data centres when it has several (nil: one,
	// or not known): the runner then places the clients in them round-robin.
	DCs() []string
	// DCSession opens a session in Keyspace whose queries go to the nodes
	// of data centre dc first (the driver's DC-aware policy): the session
	// of a client placed in dc.
	DCSession(ctx context.Context, dc string) (*gocql.Session, error)
	// ContactPoints are the CQL addresses (host:port) another process on
	// this machine reaches the cluster at: a --lock-cmd plug-in is told them.
	ContactPoints() []string
	// Describe is what the run's meta line records of the cluster beyond
	// its node count: its Paxos variant, commitlog sync, lazy filesystem,
	// when the environment knows them.
	Describe() map[string]string
	// Lease is where the cluster's lease lives, which a run takes before
	// it heals or faults anything (nil: no other process can reach this
	// cluster).
	Lease() exclusive.Store
}

// ClusterEnv runs tests on a cluster.Cluster.
type ClusterEnv struct{ *cluster.Cluster }

var (
	_ Env          = ClusterEnv{}
	_ strayRemover = ClusterEnv{}
)

// A cluster's node serves the membership kinds (found by assertion at
// run time, so checked here).
var _ nemesis.MemberNode = (*cluster.Node)(nil)

// A cluster's node switches its Paxos variant (paxos-upgrade, found by
// assertion at run time).
var _ nemesis.PaxosNode = (*cluster.Node)(nil)

// A cluster's node is maintained (flush, compact, repair: the
// maintenance kind, found by assertion at run time).
var _ nemesis.MaintenanceNode = (*cluster.Node)(nil)

// A cluster's node changes its rules while paused (NetExec, found by
// assertion at run time).
var _ nemesis.NetExecer = (*cluster.Node)(nil)

// Targets are the cluster's nodes for the nemesis.
func (e ClusterEnv) Targets() []nemesis.Target {
	var ts []nemesis.Target
	for _, n := range e.Nodes() {
		ts = append(ts, nemesis.Target{Name: n.Name, IP: n.IP, DC: n.DC, Node: n})
	}
	return ts
}

// CopyLogs copies every node's logs to dir/<node>/.
func (e ClusterEnv) CopyLogs(ctx context.Context, dir string) error {
	var errs []error
	for _, n := range e.Nodes() {
		if err := n.CopyLogs(ctx, dir); err != nil { // it writes dir/<node>/
			errs = append(errs, fmt.Errorf("logs of %s: %w", n.Name, err))
		}
	}
	// A spare that joined during the run has logs; one that never started
	// has none, which is no error.
	for _, n := range e.Cluster.Spares() {
		_ = n.CopyLogs(ctx, dir)
	}
	return errors.Join(errs...)
}

// Lease is a file on this machine: every user of a Docker cluster reaches
// it through this machine's Docker daemon.
func (e ClusterEnv) Lease() exclusive.Store { return exclusive.Local{Name: e.Name()} }

// NodeSession opens a session coordinated by the named node alone.
func (e ClusterEnv) NodeSession(ctx context.Context, node string) (*gocql.Session, error) {
	for _, n := range e.Nodes() {
		if n.Name == node {
			return e.PinnedSession(ctx, n)
		}
	}
	return nil, fmt.Errorf("no node %q", node)
}

// Spares are the cluster's spare nodes.
func (e ClusterEnv) Spares() []nemesis.Target {
	var ts []nemesis.Target
	for _, n := range e.Cluster.Spares() {
		ts = append(ts, nemesis.Target{Name: n.Name, IP: n.IP, DC: n.DC, Node: n})
	}
	return ts
}

// DCs are the cluster's data centres when it has two or more.
func (e ClusterEnv) DCs() []string {
	if dcs := e.Cluster.DCs(); len(dcs) > 1 {
		return dcs
	}
	return nil
}

// DCSession opens a session whose queries go to dc's nodes first.
func (e ClusterEnv) DCSession(ctx context.Context, dc string) (*gocql.Session, error) {
	return e.Cluster.DCSession(ctx, dc)
}

// ContactPoints are the nodes' CQL addresses on the cluster network.
func (e ClusterEnv) ContactPoints() []string {
	var cps []string
	for _, h := range e.Hosts() {
		cps = append(cps, net.JoinHostPort(h, strconv.Itoa(cqlPort)))
	}
	return cps
}

// Describe records what a power loss can lose: the Paxos variant, the
// commitlog's sync mode and whether the data is on the lazy filesystem.
func (e ClusterEnv) Describe() map[string]string {
	d := map[string]string{"cassandra": e.Version().Cassandra, "paxos": e.Paxos(), "commitlog": e.CommitlogSync()}
	if e.LazyFS() {
		d["lazyfs"] = "on"
	}
	if dcs := e.DCs(); dcs != nil {
		d["dcs"] = strings.Join(dcs, " ")
	}
	if sp := e.Cluster.Spares(); len(sp) > 0 {
		d["spares"] = strconv.Itoa(len(sp))
	}
	if p := e.PaxosStatePurging(); p != "" {
		d["paxos_state_purging"] = p
	}
	if e.NoPaxosCache() {
		d["paxos_cache_size"] = "0"
	}
	if e.SkipPaxosRepair() {
		d["skip_paxos_repair_on_topology_change"] = "true"
	}
	if e.PaxosUpgrade() {
		// The run starts on the cluster's variant (paxos above); a
		// paxos-upgrade window switches it (its lines say when).
		d["paxos_upgrade"] = "true"
	}
	if m := e.Accord(); m != "" {
		d["accord"] = m
	}
	if p := e.AccordStopMarker(); p != "" {
		d["accord_stop_marker_failure_policy"] = p
	}
	return d
}

// cqlPort is where every node of a cluster started here serves CQL.
const cqlPort = 9042

// AttachOrStart attaches to the running cluster of that name (`lockcheck
// cluster up`), or starts one. started tells whether this call started it,
// so that the caller stops only what it started.
func AttachOrStart(ctx context.Context, opts ...cluster.Option) (c *cluster.Cluster, started bool, err error) {
	c, err = cluster.Attach(ctx, opts...)
	if err == nil {
		return c, false, nil
	}
	if !errors.Is(err, cluster.ErrNotRunning) {
		return nil, false, err
	}
	c, err = cluster.Start(ctx, opts...)
	if err != nil {
		return nil, false, err
	}
	return c, true, nil
}

// HealLeftovers takes env's cluster (waiting while another process holds
// it: it never undoes a live run's faults), brings every node to its known
// state (nemesis.HealLeftovers: faults a killed earlier process left,
// recorded on rec when it is not nil) and waits until the cluster is
// healthy (nemesis.HealAndWait). It is the heal-then-wait of a run's
// start, `cluster up` and `cluster heal` on a running cluster, and lockd.
func HealLeftovers(ctx context.Context, env Env, rec nemesis.Recorder, log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	lease, err := TakeCluster(ctx, env, false, func(line string) { log.Warn(line) })
	if err != nil {
		return err
	}
	defer lease.Release()
	lease.SetClean(false) // until healed: the note passes to the next holder
	if sr, ok := env.(strayRemover); ok {
		if _, err := sr.RemoveStrayHelpers(ctx); err != nil {
			return err
		}
	}
	if _, err = nemesis.HealAndWait(ctx, env.Targets(), env, rec, log); err != nil {
		return err
	}
	lease.SetClean(true)
	return nil
}

// strayRemover removes what a killed process left beside the nodes
// (cluster.Cluster's helper containers).
type strayRemover interface {
	RemoveStrayHelpers(ctx context.Context) ([]string, error)
}

// foreignFix says what to do about state on a node lockcheck did not make:
// on a cluster lockcheck made, `cluster heal --force` removes every rule
// (none is anyone's firewall); on the user's hosts, only the user knows.
func foreignFix(env Env) func(node, what string) string {
	ce, ok := env.(ClusterEnv)
	if !ok {
		return func(node, what string) string {
			return "remove it on " + node + " if it is no firewall of yours"
		}
	}
	return func(node, what string) string {
		fix := fmt.Sprintf("`lockcheck cluster heal --force --name %s` removes it", ce.Name())
		if rule, ok := strings.CutPrefix(what, "iptables rule -A "); ok {
			fix += fmt.Sprintf(", or `iptables -D %s` in node %s", rule, node)
		}
		return fix
	}
}
