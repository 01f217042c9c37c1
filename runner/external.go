package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/httplock"
	"github.com/lockcheck/lockcheck/lockcmd"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// CmdRecipe is the lock of `--lock-cmd COMMAND`: a plug-in process per
// client speaking lockcheck's JSON-lines protocol (package lockcmd). The
// protected resource stays lockcheck's. A plug-in that cannot start or
// fails its setup makes Setup fail, with every process started so far
// ended. It holds the set-up turn (setupMu) while tables are made: the
// resource's, the plug-in's keyspace, and the first process's setup,
// which makes the plug-in's tables; its other processes start after it.
func CmdRecipe(command string, promise history.Promise) Recipe {
	return Recipe{Name: "plugin", Promise: promise, ownSetupTurn: true, Setup: func(ctx context.Context, env Env, t *Test) (workload.NewLockFunc, workload.Resource, func(), error) {
		if env == nil {
			return nil, nil, nil, errors.New("--lock-cmd needs a Cassandra cluster")
		}
		log := t.runLog
		if log == nil {
			log = t.Log
		}
		opts := []lockcmd.Option{lockcmd.WithLogger(log)}
		var clockDir string
		if slices.Contains(t.Nemesis, nemesis.ClientClock) {
			lib, err := lockcmd.FindFaketime()
			if err != nil {
				return nil, nil, nil, fmt.Errorf("client-clock on a plug-in: %w", err)
			}
			sweepFaketimeDirs(log)
			if clockDir, err = os.MkdirTemp("", faketimePrefix+strconv.Itoa(os.Getpid())+"-"); err != nil {
				return nil, nil, nil, err
			}
			opts = append(opts, lockcmd.WithFaketime(lib, clockDir))
		}
		penv := lockcmd.Env{Hosts: env.ContactPoints(), Keyspace: env.Keyspace(), TTL: t.TTL}
		if t.pins != nil {
			pins, err := pinAddresses(env, t.pins)
			if err != nil {
				return nil, nil, nil, err
			}
			penv.Pins = pins
		}
		setupMu.Lock()
		unlock := sync.OnceFunc(setupMu.Unlock)
		defer unlock()
		d, err := lockcmd.New(command, penv, opts...) // a bad command is refused before the cluster is asked
		var res workload.Resource
		closeRes := func() {}
		if err == nil {
			var s *gocql.Session
			s, res, err = cassandraResource(ctx, env, nil)
			if err == nil {
				closeRes = s.Close
			}
			if err == nil && t.pins != nil {
				// The critical sections go through each client's
				// coordinator, as its plug-in's queries do (LOCKCHECK_PIN).
				var pinned map[string]*gocql.Session
				var closePinned func()
				if pinned, closePinned, err = nodeSessions(ctx, env, t.pins); err == nil {
					closeRes = func() { closePinned(); s.Close() }
					res, err = pinResource(res, pinned, t.pins, func(ps *gocql.Session) (workload.Resource, error) {
						return workload.NewCassandraResource(ps, env.Keyspace()), nil
					})
				}
			}
			if err == nil {
				if penv.DC, err = localDC(ctx, env, s); err == nil {
					// A keyspace of its own (pluginks.go).
					penv.Keyspace, err = createPluginKeyspace(ctx, s, env.Keyspace(), t.Recipe.Name)
				}
				if err == nil {
					d, err = lockcmd.New(command, penv, opts...)
				}
			}
		}
		if err != nil {
			closeRes()
			if clockDir != "" {
				os.RemoveAll(clockDir)
			}
			return nil, nil, nil, err
		}
		locks, err := startPlugins(ctx, d, t.Clients, unlock)
		closeAll := func() {
			// Together: each may wait a moment for its process to exit.
			var wg sync.WaitGroup
			for _, l := range locks {
				if l != nil {
					wg.Go(func() { l.Close() })
				}
			}
			wg.Wait()
			closeRes()
			if clockDir != "" {
				os.RemoveAll(clockDir)
			}
		}
		if err != nil {
			closeAll()
			return nil, nil, nil, err
		}
		nl := func(client int, _ workload.Clock) (workload.Lock, error) { return locks[client], nil }
		return nl, res, closeAll, nil
	}}
}

// localDC is the data centre a plug-in's driver calls local
// (LOCKCHECK_DC): the one the user named (run --dc), else the one of the
// node the harness's session asked.
func localDC(ctx context.Context, env Env, s *gocql.Session) (string, error) {
	if e, ok := env.(interface{ LocalDC() string }); ok && e.LocalDC() != "" {
		return e.LocalDC(), nil
	}
	var dc string
	if err := s.Query(`SELECT data_center FROM system.local`).ScanContext(ctx, &dc); err != nil {
		return "", fmt.Errorf("local data centre: %w", err)
	}
	return dc, nil
}

// faketimePrefix names the directories of the plug-ins' clock files
// (client-clock): lockcheck-faketime-PID-RANDOM in the temporary directory.
const faketimePrefix = "lockcheck-faketime-"

// sweepFaketimeDirs removes the clock directories of runs whose process is
// gone: a run killed with SIGKILL never removes its own.
func sweepFaketimeDirs(log *slog.Logger) {
	ents, _ := os.ReadDir(os.TempDir())
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), faketimePrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid == os.Getpid() || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(os.TempDir(), e.Name())); err == nil {
			log.Info("removed the clock files of a run that is gone", "dir", e.Name(), "pid", pid)
		}
	}
}

// startPlugins starts a process per client: the first alone, so that its
// setup creates the schema before the others' setups find it there
// (concurrent CREATE TABLE of one table can disagree on its id), then
// schemaMade, then the rest together. The locks started are returned even
// with an error.
func startPlugins(ctx context.Context, d *lockcmd.Driver, clients int, schemaMade func()) ([]*lockcmd.Lock, error) {
	locks := make([]*lockcmd.Lock, clients)
	var err error
	if locks[0], err = d.Start(ctx, 0); err != nil {
		return locks, err
	}
	schemaMade()
	errs := make([]error, clients)
	var wg sync.WaitGroup
	for i := 1; i < clients; i++ {
		wg.Go(func() { locks[i], errs[i] = d.Start(ctx, i) })
	}
	wg.Wait()
	return locks, errors.Join(errs...)
}

// URLRecipe is the lock of `--lock-url URL`: a REST lock service with seed
// 004's contract (package httplock), shared by every client.
func URLRecipe(url string, promise history.Promise) Recipe {
	return Recipe{Name: "http", Promise: promise, Setup: func(ctx context.Context, env Env, t *Test) (workload.NewLockFunc, workload.Resource, func(), error) {
		if t.pins != nil {
			return nil, nil, nil, errPinExternal
		}
		if env == nil {
			return nil, nil, nil, errors.New("--lock-url needs a Cassandra cluster for the protected resource")
		}
		d, err := httplock.New(url, httplock.WithTTL(t.TTL), httplock.WithLogger(t.Log))
		if err != nil {
			return nil, nil, nil, err
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = d.Check(cctx)
		cancel()
		if err != nil {
			return nil, nil, nil, err
		}
		s, res, err := cassandraResource(ctx, env, nil)
		if err != nil {
			return nil, nil, nil, err
		}
		closeRes := s.Close
		nl := func(int, workload.Clock) (workload.Lock, error) { return d, nil }
		return nl, res, func() { d.Close(); closeRes() }, nil
	}}
}

// cassandraResource opens a session, creates the lock's tables (schema,
// when the lock has its own) and the protected resource's, and returns
// both; the caller closes the session. It is the one schema set-up of every
// kind of lock.
func cassandraResource(ctx context.Context, env Env, schema func(context.Context, *gocql.Session, string) error, opts ...workload.ResourceOption) (*gocql.Session, workload.Resource, error) {
	s, err := env.Session(ctx)
	if err != nil {
		return nil, nil, err
	}
	ks := env.Keyspace()
	res := workload.NewCassandraResource(s, ks, opts...)
	if schema != nil {
		err = schema(ctx, s, ks)
	}
	if err == nil {
		err = res.CreateSchema(ctx)
	}
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	return s, res, nil
}

// errPinExternal: a lock service picks its own coordinators, so the harness
// cannot pin them (nor aim a fault by a pinning it did not make). A plug-in
// is told its coordinator (LOCKCHECK_PIN).
var errPinExternal = errors.New("--pin-clients works with --lock recipes and --lock-cmd plug-ins only: a lock service chooses its own coordinators")

// pinAddresses are the CQL addresses (host:port) of the clients' pinned
// nodes, by client number: the node's address with the contact points'
// port.
func pinAddresses(env Env, pins map[int]string) ([]string, error) {
	port := strconv.Itoa(cqlPort)
	if cps := env.ContactPoints(); len(cps) > 0 {
		if _, p, err := net.SplitHostPort(cps[0]); err == nil {
			port = p
		}
	}
	ips := map[string]string{}
	for _, tg := range env.Targets() {
		ips[tg.Name] = tg.IP
	}
	out := make([]string, len(pins))
	for i := range out {
		ip, ok := ips[pins[i]]
		if !ok {
			return nil, fmt.Errorf("pin client %d: no address for node %q", i, pins[i])
		}
		out[i] = net.JoinHostPort(ip, port)
	}
	return out, nil
}
