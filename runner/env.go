package runner

import (
	"context"
	"errors"
	"fmt"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/nemesis"
)

// ClusterEnv runs tests on a cluster.Cluster.
type ClusterEnv struct{ *cluster.Cluster }

// Targets are the cluster's nodes for the nemesis.
func (e ClusterEnv) Targets() []nemesis.Target {
	var ts []nemesis.Target
	for _, n := range e.Nodes() {
		ts = append(ts, nemesis.Target{Name: n.Name, IP: n.IP, Node: n})
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
	return errors.Join(errs...)
}

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

// NodeSession opens a session coordinated by the named node alone.
func (e ClusterEnv) NodeSession(ctx context.Context, node string) (*gocql.Session, error) {
	for _, n := range e.Nodes() {
		if n.Name == node {
			return e.PinnedSession(ctx, n)
		}
	}
	return nil, fmt.Errorf("no node %q", node)
}
