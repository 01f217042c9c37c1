package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/lease"
	"github.com/lockcheck/lockcheck/recipe"
	"github.com/lockcheck/lockcheck/workload"
)

// lockService is what the REST service needs of a lock: lease-fenced's
// richer API (*lease.Lease). Tests put a fake behind the handler.
type lockService interface {
	TryAcquire(ctx context.Context, name, owner string, ttl time.Duration) (workload.Grant, bool, error)
	ReleaseOwner(ctx context.Context, name, owner string) error
	Holder(ctx context.Context, name string) (lease.Holder, error)
}

const (
	lockdDefaultTTL = 60
	lockdMaxTTL     = 86400
	lockdMaxName    = 255
	// retryAfter is what a client is told to wait after an unknown outcome
	// or an unavailable cluster.
	retryAfter = "1"
)

// lockResponse is the JSON body of a held lock.
type lockResponse struct {
	Name       string `json:"name"`
	Owner      string `json:"owner"`
	TTLSeconds int    `json:"ttl_seconds"`
	Token      int64  `json:"token,omitempty"`
	// LeaseMS is how long a grant is valid from the request's arrival
	// (the TTL less lease-fenced's margin): what httplock counts on.
	LeaseMS int64 `json:"lease_ms,omitempty"`
}

type errorResponse struct {
	Error   string `json:"error"`
	Holder  string `json:"holder,omitempty"`
	Outcome string `json:"outcome,omitempty"` // "unknown" or "failed" on a 503
}

// lockdHandler serves /v1/locks/{name}:
//
//	PUT    Lock-Owner: ID [?ttl=1..86400, default 60]  201 acquired, 200 renewed (same owner), 409 held by another, 503 unknown/unavailable
//	       201/200 body: {name, owner, ttl_seconds, token, lease_ms} (httplock's grant)
//	DELETE Lock-Owner: ID                              204 released, 409 held by another, 404 not held, 503
//	GET                                                200 {name, owner, ttl_seconds (left)}, 404 free
//
// 400 with a JSON error for a missing owner, a bad name (empty, over 255
// bytes, not valid UTF-8 or not printable) or a bad ttl. An unknown outcome
// is never answered 201: the client cannot tell whether it holds the lock.
func lockdHandler(svc lockService, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /v1/locks/{name}", func(w http.ResponseWriter, r *http.Request) {
		name, owner, ok := lockdArgs(w, r, true)
		if !ok {
			return
		}
		ttl, err := lockdTTL(r)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, errorResponse{Error: err.Error()})
			return
		}
		g, renewed, err := svc.TryAcquire(r.Context(), name, owner, time.Duration(ttl)*time.Second)
		var held *lease.HeldError
		switch {
		case err == nil:
			code := http.StatusCreated
			if renewed {
				code = http.StatusOK
			}
			writeJSON(w, code, lockResponse{Name: name, Owner: owner, TTLSeconds: ttl, Token: g.Token, LeaseMS: g.Lease.Milliseconds()})
		case errors.As(err, &held):
			writeJSON(w, http.StatusConflict, errorResponse{Error: "held by another owner", Holder: held.Holder})
		default:
			unavailable(w, log, "acquire", name, err, workload.ClassifyOutcome(err))
		}
	})
	mux.HandleFunc("DELETE /v1/locks/{name}", func(w http.ResponseWriter, r *http.Request) {
		name, owner, ok := lockdArgs(w, r, true)
		if !ok {
			return
		}
		err := svc.ReleaseOwner(r.Context(), name, owner)
		var held *lease.HeldError
		switch {
		case err == nil:
			w.WriteHeader(http.StatusNoContent)
		case errors.As(err, &held):
			writeJSON(w, http.StatusConflict, errorResponse{Error: "held by another owner", Holder: held.Holder})
		case errors.Is(err, workload.ErrNotHeld):
			writeJSON(w, http.StatusNotFound, errorResponse{Error: "not held"})
		default:
			unavailable(w, log, "release", name, err, workload.ClassifyOutcome(err))
		}
	})
	mux.HandleFunc("GET /v1/locks/{name}", func(w http.ResponseWriter, r *http.Request) {
		name, _, ok := lockdArgs(w, r, false)
		if !ok {
			return
		}
		h, err := svc.Holder(r.Context(), name)
		switch {
		case err != nil:
			// A read has no effect: it failed, whatever the error.
			unavailable(w, log, "read", name, err, workload.Failed)
		case h.Owner == "":
			writeJSON(w, http.StatusNotFound, errorResponse{Error: "not held"})
		default:
			writeJSON(w, http.StatusOK, lockResponse{Name: name, Owner: h.Owner, TTLSeconds: int(h.TTL / time.Second)})
		}
	})
	return jsonRouteErrors(mux)
}

// jsonRouteErrors lets the mux answer a request no route matches (404, or
// 405 with its Allow header) but with a JSON error body like every other
// error of the API, so that clients parse one kind of error.
func jsonRouteErrors(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern == "" {
			w = &jsonErrorWriter{ResponseWriter: w}
		}
		mux.ServeHTTP(w, r)
	})
}

// jsonErrorWriter replaces the plain-text body of the mux's own error
// answers with errorResponse.
type jsonErrorWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *jsonErrorWriter) WriteHeader(code int) {
	if w.wrote {
		return
	}
	w.wrote = true
	w.Header().Del("X-Content-Type-Options")
	writeJSON(w.ResponseWriter, code, errorResponse{Error: strings.ToLower(http.StatusText(code))})
}

// Write drops the mux's plain text: its error handlers (http.Error,
// http.Redirect) set the status first, which answered in JSON.
func (w *jsonErrorWriter) Write(b []byte) (int, error) { return len(b), nil }

// unavailable answers 503 with Retry-After, telling an unknown outcome from
// a definite failure in the body.
func unavailable(w http.ResponseWriter, log *slog.Logger, op, name string, err error, o workload.Outcome) {
	outcome := o.String()
	log.Warn("lockd: "+op+" failed", "lock", name, "outcome", outcome, "err", err)
	w.Header().Set("Retry-After", retryAfter)
	writeJSON(w, http.StatusServiceUnavailable, errorResponse{Error: err.Error(), Outcome: outcome})
}

// lockdArgs validates the lock name and (when needed) the Lock-Owner header,
// answering 400 itself when they are bad.
func lockdArgs(w http.ResponseWriter, r *http.Request, needOwner bool) (name, owner string, ok bool) {
	name = r.PathValue("name")
	if err := checkLockdString("lock name", name); err != nil {
		writeJSON(w, http.StatusBadRequest, errorResponse{Error: err.Error()})
		return "", "", false
	}
	if needOwner {
		owner = r.Header.Get("Lock-Owner")
		if owner == "" {
			writeJSON(w, http.StatusBadRequest, errorResponse{Error: "missing Lock-Owner header"})
			return "", "", false
		}
		if err := checkLockdString("Lock-Owner", owner); err != nil {
			writeJSON(w, http.StatusBadRequest, errorResponse{Error: err.Error()})
			return "", "", false
		}
	}
	return name, owner, true
}

func checkLockdString(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("empty %s", what)
	case len(s) > lockdMaxName:
		return fmt.Errorf("%s is %d bytes, over %d", what, len(s), lockdMaxName)
	case !utf8.ValidString(s):
		return fmt.Errorf("%s is not valid UTF-8", what)
	}
	for _, c := range s {
		if !unicode.IsPrint(c) {
			return fmt.Errorf("%s has a non-printable character %U", what, c)
		}
	}
	return nil
}

func lockdTTL(r *http.Request) (int, error) {
	vals, present := r.URL.Query()["ttl"]
	if !present {
		return lockdDefaultTTL, nil
	}
	if len(vals) != 1 {
		return 0, errors.New("ttl given more than once")
	}
	n, err := strconv.Atoi(vals[0])
	if err != nil || n < 1 || n > lockdMaxTTL {
		return 0, fmt.Errorf("ttl %q: want whole seconds from 1 to %d", vals[0], lockdMaxTTL)
	}
	return n, nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// runLockd is `lockcheck lockd --listen ADDR [--hosts H1,H2]`: the REST lock
// service over lease-fenced, on the cluster of `lockcheck cluster up` unless
// --hosts names contact points. It stops gracefully when ctx ends (SIGTERM).
func runLockd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lockd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", defaultListen, "address to serve on")
	hosts := fs.String("hosts", "", "Cassandra contact points, comma-separated (default: the cluster of lockcheck cluster up)")
	keyspace := fs.String("keyspace", cluster.DefaultKeyspace, "keyspace of the lease table")
	clusterName := fs.String("cluster", cluster.DefaultName, "name of the cluster started by lockcheck cluster up (used without --hosts)")
	rf := fs.Int("rf", 0, "with --hosts: replication factor if the keyspace must be created (default: hosts, at most 3)")
	lockName := fs.String("lock", "lease-fenced", "the lease served: lease-fenced (tokens) or lease (seed 004 as published: IF NOT EXISTS and a TTL, no fencing)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitValid
		}
		return exitError
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "lockcheck lockd: unexpected arguments %q\n", fs.Args())
		return exitError
	}
	newLease, ok := lockdLeases[*lockName]
	if !ok {
		fmt.Fprintf(stderr, "lockcheck lockd: --lock %q: want lease-fenced or lease\n", *lockName)
		return exitError
	}
	log := slog.Default()
	if _, err := recipe.Ident(*keyspace); err != nil {
		fmt.Fprintf(stderr, "lockcheck lockd: --keyspace: %v\n", err)
		return exitError
	}
	connectCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	s, err := lockdSession(connectCtx, *clusterName, *hosts, *keyspace, *rf)
	if err == nil {
		err = lease.CreateSchema(connectCtx, s, *keyspace)
	}
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "lockcheck lockd: %v\n", err)
		if s != nil {
			s.Close()
		}
		return exitError
	}
	defer s.Close()
	lk, err := newLease(s, recipe.WithKeyspace(*keyspace), recipe.WithLogger(log))
	if err != nil {
		fmt.Fprintf(stderr, "lockcheck lockd: %v\n", err)
		return exitError
	}

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "lockcheck lockd: %v\n", err)
		return exitError
	}
	srv := &http.Server{Handler: lockdHandler(lk, log), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "lockd: serving %s locks on http://%s/v1/locks/{name}\n", *lockName, ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		fmt.Fprintf(stderr, "lockcheck lockd: %v\n", err)
		return exitError
	case <-ctx.Done():
	}
	// Let requests in flight finish: an acquire cut off mid-Paxos would
	// leave its client with no answer at all.
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		fmt.Fprintf(stderr, "lockcheck lockd: shutdown: %v\n", err)
		return exitError
	}
	fmt.Fprintln(stdout, "lockd: stopped")
	return exitValid
}

// lockdSession connects to --hosts (creating the keyspace if needed) or to
// the cluster of `lockcheck cluster up`.
func lockdSession(ctx context.Context, clusterName, hosts, keyspace string, rf int) (*gocql.Session, error) {
	if hosts == "" {
		s, ks, err := attachSession(ctx, clusterName)
		if err == nil && keyspace != ks {
			err = fmt.Errorf("--keyspace %s: the cluster's keyspace is %s", keyspace, ks)
			s.Close()
			s = nil
		}
		return s, err
	}
	var hs []string
	for h := range strings.SplitSeq(hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hs = append(hs, h)
		}
	}
	if len(hs) == 0 {
		return nil, errors.New("--hosts: no host given")
	}
	if !keyspaceRE.MatchString(keyspace) {
		return nil, fmt.Errorf("--keyspace %q: want a plain CQL identifier", keyspace)
	}
	if rf <= 0 {
		rf = min(len(hs), 3)
	}
	cc := gocql.NewCluster(hs...)
	cc.Consistency = gocql.Quorum
	cc.SerialConsistency = gocql.Serial
	cc.Timeout = 5 * time.Second
	cc.ConnectTimeout = 10 * time.Second
	s, err := cc.CreateSession()
	if err != nil {
		return nil, fmt.Errorf("connect to %v: %w", hs, err)
	}
	q := fmt.Sprintf(`CREATE KEYSPACE IF NOT EXISTS %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': %d}`,
		keyspace, rf)
	if err := s.Query(q).ExecContext(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("create keyspace %s: %w", keyspace, err)
	}
	return s, nil
}

var keyspaceRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,47}$`)

// lockdLeases are the leases lockd can serve: the fenced one, and seed
// 004's as published, so that its flaw can be shown through --lock-url.
var lockdLeases = map[string]func(*gocql.Session, ...recipe.Option) (*lease.Lease, error){
	"lease-fenced": lease.NewFenced,
	"lease":        lease.New,
}

// attachSession opens a session on the cluster of `lockcheck cluster up`.
func attachSession(ctx context.Context, name string) (*gocql.Session, string, error) {
	c, err := cluster.Attach(ctx, cluster.WithName(name))
	if err != nil {
		return nil, "", fmt.Errorf("no --hosts given and no cluster to attach to: %w", err)
	}
	if err := healLeftovers(ctx, c, slog.Default()); err != nil {
		return nil, "", fmt.Errorf("cluster %s: %w", name, err)
	}
	s, err := c.Session(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("cluster %s: %w", name, err)
	}
	return s, c.Keyspace(), nil
}
