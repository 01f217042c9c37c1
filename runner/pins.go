package runner

import (
	"context"
	"fmt"
	"strings"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// PinRoundRobin pins client i to node i mod len(targets).
func PinRoundRobin(targets []nemesis.Target, clients int) map[int]string {
	pins := make(map[int]string, clients)
	for i := range clients {
		pins[i] = targets[i%len(targets)].Name
	}
	return pins
}

// PlaceInDCs places client i in data centre i mod len(dcs); nil for fewer
// than two data centres.
func PlaceInDCs(dcs []string, clients int) map[int]string {
	if len(dcs) < 2 {
		return nil
	}
	out := make(map[int]string, clients)
	for i := range clients {
		out[i] = dcs[i%len(dcs)]
	}
	return out
}

// dcSessions opens one session per data centre a client is placed in.
func dcSessions(ctx context.Context, env Env, dcs map[int]string) (map[string]*gocql.Session, func(), error) {
	out := map[string]*gocql.Session{}
	closeAll := func() {
		for _, s := range out {
			s.Close()
		}
	}
	for i := range len(dcs) {
		dc := dcs[i]
		if out[dc] != nil {
			continue
		}
		s, err := env.DCSession(ctx, dc)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("session in %s: %w", dc, err)
		}
		out[dc] = s
	}
	return out, closeAll, nil
}

// pinsString is the meta line's form of the pins ("0=n1 1=n2 2=n3") or
// of the clients' data centres ("0=dc1 1=dc2").
func pinsString(pins map[int]string) string {
	parts := make([]string, len(pins))
	for i := range parts {
		parts[i] = fmt.Sprintf("%d=%s", i, pins[i])
	}
	return strings.Join(parts, " ")
}

// nodeSessions opens one session per node that a client is pinned to.
func nodeSessions(ctx context.Context, env Env, pins map[int]string) (map[string]*gocql.Session, func(), error) {
	out := map[string]*gocql.Session{}
	closeAll := func() {
		for _, s := range out {
			s.Close()
		}
	}
	for i := range len(pins) {
		n := pins[i]
		if out[n] != nil {
			continue
		}
		s, err := env.NodeSession(ctx, n)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("session pinned to %s: %w", n, err)
		}
		out[n] = s
	}
	return out, closeAll, nil
}

// pinnedResource is the resource whose critical sections go through each
// client's pinned coordinator (workload.ClientResource): a fault aimed at
// a holder's coordinator then delays the write its lease protects, as it
// would an application's. The final reads keep the shared session.
type pinnedResource struct {
	workload.Resource
	byNode map[string]workload.Resource
	pins   map[int]string
}

// Client is the resource through client i's coordinator.
func (r pinnedResource) Client(i int) workload.Resource { return r.byNode[r.pins[i]] }

// pinResource makes shared's per-client resource over the pinned sessions,
// each resource made by mk over its node's session.
func pinResource(shared workload.Resource, sessions map[string]*gocql.Session, pins map[int]string,
	mk func(*gocql.Session) (workload.Resource, error)) (workload.Resource, error) {
	r := pinnedResource{Resource: shared, byNode: map[string]workload.Resource{}, pins: pins}
	for node, s := range sessions {
		res, err := mk(s)
		if err != nil {
			return nil, fmt.Errorf("resource through %s: %w", node, err)
		}
		r.byNode[node] = res
	}
	return r, nil
}
