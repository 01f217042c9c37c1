package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// Client timeouts. The client waits longer than the server's own timeouts
// (write 2 s, CAS contention 1 s, read 5 s), so that a server timeout reaches
// the client as the server's answer rather than as a client-side timeout.
const (
	queryTimeout   = 10 * time.Second
	connectTimeout = 5 * time.Second
)

// clusterConfig is the gocql configuration of every session lockcheck opens:
// QUORUM and SERIAL, no driver retries of non-idempotent statements (gocql
// never retries them; LWTs must never be marked idempotent), and quick
// reconnection so that a healed node is used again within seconds.
func clusterConfig(log *slog.Logger, keyspace string, hosts ...string) *gocql.ClusterConfig {
	cfg := gocql.NewCluster(hosts...)
	cfg.Keyspace = keyspace
	cfg.Consistency = gocql.Quorum
	cfg.SerialConsistency = gocql.Serial
	cfg.Timeout = queryTimeout
	cfg.ConnectTimeout = connectTimeout
	cfg.NumConns = 1
	cfg.ReconnectInterval = time.Second
	cfg.ReconnectionPolicy = &gocql.ConstantReconnectionPolicy{MaxRetries: 5, Interval: 500 * time.Millisecond}
	cfg.Logger = slogLogger{log}
	return cfg
}

// Session opens a gocql session that balances over all nodes (token aware,
// then round robin), with the lockcheck keyspace set. The caller closes it.
func (c *Cluster) Session(ctx context.Context) (*gocql.Session, error) {
	cfg := clusterConfig(c.log, c.keyspace, c.Hosts()...)
	cfg.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.RoundRobinHostPolicy())
	return createSession(ctx, cfg)
}

// DCSession opens a session whose queries go to the nodes of data centre dc
// (token aware within it; the driver's DC-aware policy tries the other data
// centre's nodes only when none of dc's answers), as an application running
// in dc connects. The caller closes it.
func (c *Cluster) DCSession(ctx context.Context, dc string) (*gocql.Session, error) {
	if !slices.Contains(c.DCs(), dc) {
		return nil, fmt.Errorf("cluster %s has no data centre %q (it has %v)", c.cfg.name, dc, c.DCs())
	}
	cfg := clusterConfig(c.log, c.keyspace, c.Hosts()...)
	cfg.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.DCAwareRoundRobinPolicy(dc))
	return createSession(ctx, cfg)
}

// PinnedSession opens a gocql session whose every query is coordinated by
// node n: the driver connects to n only (a host filter drops every other
// node it learns of). Queries fail while n is down; they are never sent
// elsewhere. The caller closes it.
func (c *Cluster) PinnedSession(ctx context.Context, n *Node) (*gocql.Session, error) {
	return pinnedSession(ctx, c.log, c.keyspace, n.IP)
}

func pinnedSession(ctx context.Context, log *slog.Logger, keyspace, ip string) (*gocql.Session, error) {
	cfg := clusterConfig(log, keyspace, ip)
	cfg.HostFilter = gocql.WhiteListHostFilter(ip)
	cfg.PoolConfig.HostSelectionPolicy = gocql.RoundRobinHostPolicy()
	return createSession(ctx, cfg)
}

// createSession connects, giving up when ctx ends (gocql's CreateSession
// itself takes no context).
func createSession(ctx context.Context, cfg *gocql.ClusterConfig) (*gocql.Session, error) {
	type result struct {
		s   *gocql.Session
		err error
	}
	ch := make(chan result, 1)
	go func() {
		s, err := cfg.CreateSession()
		ch <- result{s, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, fmt.Errorf("connect to %v: %w", cfg.Hosts, r.err)
		}
		return r.s, nil
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.s != nil {
				r.s.Close()
			}
		}()
		return nil, fmt.Errorf("connect to %v: %w", cfg.Hosts, ctx.Err())
	}
}

// slogLogger passes gocql's log lines to slog at debug level (gocql's
// warnings about unreachable nodes are expected under a nemesis).
type slogLogger struct{ l *slog.Logger }

func (s slogLogger) log(level slog.Level, msg string, fields []gocql.LogField) {
	if !s.l.Enabled(context.Background(), level) {
		return
	}
	args := make([]any, 0, 2*len(fields))
	for _, f := range fields {
		args = append(args, f.Name, f.Value.String())
	}
	s.l.Log(context.Background(), level, "gocql: "+msg, args...)
}

func (s slogLogger) Error(msg string, f ...gocql.LogField)   { s.log(slog.LevelDebug, msg, f) }
func (s slogLogger) Warning(msg string, f ...gocql.LogField) { s.log(slog.LevelDebug, msg, f) }
func (s slogLogger) Info(msg string, f ...gocql.LogField)    { s.log(slog.LevelDebug-4, msg, f) }
func (s slogLogger) Debug(msg string, f ...gocql.LogField)   { s.log(slog.LevelDebug-4, msg, f) }

// HostsConfig is how to reach a Cassandra cluster lockcheck did not start
// (lockcheck run --hosts): contact points, CQL port and, for a cluster of
// several data centres, the local one.
type HostsConfig struct {
	Hosts    []string
	Port     int    // 0: 9042
	DC       string // "": any
	Keyspace string // "": none set
	Pin      string // one of Hosts: every query goes to it alone
	Log      *slog.Logger
}

// ConnectHosts opens a session with lockcheck's settings (QUORUM, SERIAL,
// no retries of LWTs, quick reconnection) on a cluster of the user's. The
// caller closes it.
func ConnectHosts(ctx context.Context, hc HostsConfig) (*gocql.Session, error) {
	log := hc.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	hosts := hc.Hosts
	if hc.Pin != "" {
		hosts = []string{hc.Pin}
	}
	cfg := clusterConfig(log, hc.Keyspace, hosts...)
	if hc.Port != 0 {
		cfg.Port = hc.Port
	}
	policy := gocql.RoundRobinHostPolicy()
	if hc.DC != "" {
		policy = gocql.DCAwareRoundRobinPolicy(hc.DC)
	}
	// Only the hosts named: the driver learns the ring's other nodes from
	// system.peers, and lockcheck never touches a host it was not given.
	allowed := map[string]bool{}
	for _, h := range hosts {
		addrs, err := net.DefaultResolver.LookupHost(ctx, h)
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", h, err)
		}
		for _, a := range addrs {
			allowed[a] = true
		}
	}
	cfg.HostFilter = gocql.HostFilterFunc(func(h *gocql.HostInfo) bool { return allowed[h.ConnectAddress().String()] })
	if hc.Pin != "" {
		cfg.PoolConfig.HostSelectionPolicy = policy
	} else {
		cfg.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(policy)
	}
	return createSession(ctx, cfg)
}
