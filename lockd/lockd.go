// Package lockd is a REST lock service over lockcheck's lease recipes
// (`lockcheck lockd`): seed 004's contract, the one package httplock drives
// as the lock under test (`lockcheck run --lock-url`), with the wire types
// httplock defines.
package lockd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/httplock"
	"github.com/lockcheck/lockcheck/lease"
	"github.com/lockcheck/lockcheck/recipe"
	"github.com/lockcheck/lockcheck/workload"
)

// Service is what the REST service needs of a lock: lease-fenced's richer
// API (*lease.Lease). Tests put a fake behind the handler.
type Service interface {
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

// holding is the body of a held lock: lease_ms is how long a grant is valid
// from the request's arrival (the TTL less lease-fenced's margin), what
// httplock counts on; a lease without tokens sends none.
func holding(name, owner string, ttlSeconds int, token int64, lease time.Duration) httplock.LockBody {
	b := httplock.LockBody{Name: name, Owner: owner, TTLSeconds: ptr(int64(ttlSeconds))}
	if token != 0 {
		b.Token = ptr(token)
	}
	if ms := lease.Milliseconds(); ms != 0 {
		b.LeaseMS = ptr(ms)
	}
	return b
}

func ptr[T any](v T) *T { return &v }

type errorResponse = httplock.ErrorBody

// Handler serves /v1/locks/{name}:
//
//	PUT    Lock-Owner: ID [?ttl=1..86400, default 60]  201 acquired, 200 renewed (same owner), 409 held by another, 503 unknown/unavailable
//	       201/200 body: {name, owner, ttl_seconds, token, lease_ms} (httplock's grant)
//	DELETE Lock-Owner: ID                              204 released, 409 held by another, 404 not held, 503
//	GET                                                200 {name, owner, ttl_seconds (left)}, 404 free
//
// 400 with a JSON error for a missing owner, a bad name (empty, over 255
// bytes, not valid UTF-8 or not printable) or a bad ttl. An unknown outcome
// is never answered 201: the client cannot tell whether it holds the lock.
func Handler(svc Service, log *slog.Logger) http.Handler {
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
			writeJSON(w, code, holding(name, owner, ttl, g.Token, g.Lease))
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
			writeJSON(w, http.StatusOK, holding(name, h.Owner, int(h.TTL/time.Second), 0, 0))
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

// Leases are the leases lockd can serve, by name: the fenced one, and seed
// 004's as published, so that its flaw can be shown through --lock-url.
var Leases = map[string]func(*gocql.Session, ...recipe.Option) (*lease.Lease, error){
	"lease-fenced": lease.NewFenced,
	"lease":        lease.New,
}

// Connect opens a session on the contact points hosts (the connection code
// every way in shares, cluster.ConnectHosts) and creates keyspace there if
// it is missing, with rf replicas (0: hosts, at most 3).
func Connect(ctx context.Context, hosts []string, keyspace string, rf int, log *slog.Logger) (*gocql.Session, error) {
	if len(hosts) == 0 {
		return nil, errors.New("--hosts: no host given")
	}
	if rf <= 0 {
		rf = min(len(hosts), 3)
	}
	s, err := cluster.ConnectHosts(ctx, cluster.HostsConfig{Hosts: hosts, Log: log})
	if err != nil {
		return nil, fmt.Errorf("connect to %v: %w", hosts, err)
	}
	if err := cluster.CreateKeyspace(ctx, s, keyspace, rf, ""); err != nil {
		s.Close()
		return nil, fmt.Errorf("--keyspace: %w", err)
	}
	return s, nil
}
