// Package httplock drives a REST lock service with seed 004's contract as
// the lock under test (`lockcheck run --lock-url`):
//
//	PUT    /v1/locks/{name}?ttl=SECONDS   Lock-Owner: OWNER   201 acquired, 200 renewed (already held by OWNER), 409 held by another
//	DELETE /v1/locks/{name}               Lock-Owner: OWNER   204 released; 404 or 409: not held by OWNER
//
// A service hands out a fencing token and a lease in the JSON body of its
// 201 or 200 answer (lockd does): "token" (integer > 0, growing per lock)
// and "lease_ms" (how long the grant is valid, counted from when the service
// received the request; the client counts it from when it sent it, which is
// earlier, so the lease it believes in is never longer than the service's).
// Without lease_ms, "ttl_seconds" counts as a lease of that TTL minus
// lockcheck's margin (1 s + TTL/10, as for its own lease recipes); with
// neither, the grant does not expire. A release carries the token in a
// Lock-Token header when the grant had one.
//
// A time-out, a transport error or a 5xx answer leaves the outcome unknown
// (info), never failed: the service may have acted on the request.
package httplock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/spec"
	"github.com/lockcheck/lockcheck/workload"
)

// Option configures a Driver.
type Option func(*Driver)

// WithOwnerHeader names the header that carries the owner (default Lock-Owner).
func WithOwnerHeader(h string) Option { return func(d *Driver) { d.ownerHeader = h } }

// WithTTL is the ttl sent with every acquire, rounded up to whole seconds
// (default 3s, at least 1s).
func WithTTL(ttl time.Duration) Option { return func(d *Driver) { d.ttl = ttl } }

// WithPoll bounds the wait between attempts while the lock is held by
// another (default 10ms to 250ms, jittered).
func WithPoll(minPoll, maxPoll time.Duration) Option {
	return func(d *Driver) { d.minPoll, d.maxPoll = minPoll, maxPoll }
}

// WithClient sets the HTTP client (default: one with its own transport).
func WithClient(c *http.Client) Option { return func(d *Driver) { d.client = c } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(d *Driver) { d.log = l } }

// Driver is the lock service at one base URL; it is a workload.Lock that
// every client may share (it keeps no per-client state).
type Driver struct {
	base             *url.URL
	ownerHeader      string
	ttl              time.Duration
	minPoll, maxPoll time.Duration
	client           *http.Client
	log              *slog.Logger
}

var _ workload.Lock = (*Driver)(nil)

// New returns the driver of the service at base (http://HOST:PORT, with an
// optional path prefix before /v1/locks).
func New(base string, opts ...Option) (*Driver, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("httplock: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("httplock: %q: want http://HOST:PORT", base)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	d := &Driver{base: u, ownerHeader: "Lock-Owner", ttl: spec.DefaultTTL,
		minPoll: 10 * time.Millisecond, maxPoll: 250 * time.Millisecond,
		client: &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}, log: slog.Default()}
	for _, o := range opts {
		o(d)
	}
	if d.ttl < time.Second || d.minPoll <= 0 || d.maxPoll < d.minPoll || d.ownerHeader == "" {
		return nil, errors.New("httplock: ttl must be at least 1s, polls positive, the owner header named")
	}
	return d, nil
}

// Check asks the service once (GET of a lock no one uses) and says whether
// it answers HTTP at all: any status counts, a refused connection or a
// time-out does not.
func (d *Driver) Check(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.lockURL("lockcheck-probe", false), nil)
	if err != nil {
		return err
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s does not answer: %w", d.base.Redacted(), err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return nil
}

func (d *Driver) lockURL(name string, withTTL bool) string {
	u := *d.base
	u.Path = d.base.Path + "/v1/locks/" + name
	u.RawPath = d.base.EscapedPath() + "/v1/locks/" + url.PathEscape(name)
	if withTTL {
		secs := int64((d.ttl + time.Second - 1) / time.Second)
		u.RawQuery = "ttl=" + strconv.FormatInt(secs, 10)
	}
	return u.String()
}

// answer is one request's outcome.
type answer struct {
	status int
	body   []byte
}

// do sends one request; err is a transport error or a time-out.
func (d *Driver) do(ctx context.Context, method, url, owner string, token int64) (answer, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return answer{}, err
	}
	req.Header.Set(d.ownerHeader, owner)
	if token > 0 {
		req.Header.Set("Lock-Token", strconv.FormatInt(token, 10))
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		// The status came, the body did not: the service acted (or not)
		// as the status says, but a grant without its body has no token.
		return answer{}, fmt.Errorf("read %d answer: %w", resp.StatusCode, err)
	}
	return answer{status: resp.StatusCode, body: body}, nil
}

// Acquire PUTs until the service grants the lock or ctx ends, polling while
// another owner holds it. An attempt with an unknown outcome (a time-out, a
// 5xx) does not end the acquire: owners are unique, so a later 201 or 200
// settles it. When ctx ends with one unsettled, Acquire asks the service to
// delete what it may hold and returns ErrUnknown.
func (d *Driver) Acquire(ctx context.Context, name, owner string) (workload.Grant, error) {
	start := time.Now()
	poll := d.minPoll
	var pending error // the last unknown outcome, while unsettled
	var last error
	for {
		sent := time.Now()
		a, err := d.do(ctx, http.MethodPut, d.lockURL(name, true), owner, 0)
		switch {
		case err != nil && pending != nil && ctx.Err() != nil:
			// Cut off by the deadline after an earlier unknown outcome:
			// that one's reason says more than the cut.
		case err != nil:
			pending = fmt.Errorf("acquire %q: %w", name, err)
		case a.status == http.StatusCreated || a.status == http.StatusOK:
			return d.grant(name, owner, a, start, sent)
		case a.status == http.StatusConflict:
			last = fmt.Errorf("acquire %q: held by another: %s", name, brief(a.body))
		case a.status >= 500:
			pending = fmt.Errorf("acquire %q: %d %s", name, a.status, brief(a.body))
		default:
			// Refused (400, 404, ...): nothing happened; a service that
			// refuses every acquire shows as all failures in the report.
			return workload.Grant{}, fmt.Errorf("acquire %q: %d %s: %w", name, a.status, brief(a.body), workload.ErrNotAcquired)
		}
		// Stop early rather than send an attempt the deadline would cut off:
		// a request cut off is an unknown outcome, a miss is a failure.
		rtt := time.Since(sent)
		if !sleepUnless(ctx, time.Duration(rand.Int64N(int64(poll))+1), 2*rtt+10*time.Millisecond) {
			if pending != nil {
				d.cleanup(ctx, name, owner)
				return workload.Grant{}, fmt.Errorf("%w (gave up with it unsettled): %w", pending, workload.ErrUnknown)
			}
			if last == nil {
				last = ctx.Err()
			}
			return workload.Grant{}, fmt.Errorf("%w: %w", last, workload.ErrNotAcquired)
		}
		poll = min(2*poll, d.maxPoll)
	}
}

// sleepUnless sleeps d and says whether at least reserve is left of ctx
// after it; it returns false at once when that cannot be.
func sleepUnless(ctx context.Context, d, reserve time.Duration) bool {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d+reserve {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// grant makes the grant of a 201 or 200 answer.
func (d *Driver) grant(name, owner string, a answer, start, sent time.Time) (workload.Grant, error) {
	g := workload.Grant{Lock: name, Owner: owner}
	var b LockBody
	if len(strings.TrimSpace(string(a.body))) > 0 {
		if err := json.Unmarshal(a.body, &b); err != nil {
			// Granted, but what it says about the grant is unreadable: the
			// client cannot know its token or lease, so it cannot act.
			return g, fmt.Errorf("acquire %q: %d with a body that is not a grant: %q: %v: %w",
				name, a.status, brief(a.body), err, workload.ErrUnknown)
		}
	}
	if b.Token != nil {
		if *b.Token < 0 {
			return g, fmt.Errorf("acquire %q: negative token %d: %w", name, *b.Token, workload.ErrUnknown)
		}
		g.Token = *b.Token
	}
	var valid time.Duration
	switch {
	case b.LeaseMS != nil:
		valid = time.Duration(*b.LeaseMS) * time.Millisecond
	case b.TTLSeconds != nil:
		ttl := time.Duration(*b.TTLSeconds) * time.Second
		valid = ttl - time.Second - ttl/10
	}
	if b.LeaseMS != nil || b.TTLSeconds != nil {
		// Counted from this attempt's send; recorded from the invocation.
		g.Deadline = sent.Add(valid)
		g.Lease = g.Deadline.Sub(start)
		if g.Lease <= 0 {
			g.Lease = time.Millisecond // expired on arrival: the client skips its write
		}
	}
	return g, nil
}

// cleanup deletes a lock whose acquire had an unknown outcome, so that it
// does not block others for a whole TTL. It cannot make the outcome known.
func (d *Driver) cleanup(ctx context.Context, name, owner string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	if a, err := d.do(cctx, http.MethodDelete, d.lockURL(name, false), owner, 0); err != nil || a.status >= 500 {
		d.log.Debug("httplock: cleanup after an unknown acquire", "lock", name, "owner", owner, "err", err, "status", a.status)
	}
}

// Release DELETEs the lock. 204 is done; 404 or 409 is not held; a
// time-out or a 5xx is unknown.
func (d *Driver) Release(ctx context.Context, g workload.Grant) error {
	a, err := d.do(ctx, http.MethodDelete, d.lockURL(g.Lock, false), g.Owner, g.Token)
	switch {
	case err != nil:
		return fmt.Errorf("release %q: %w: %w", g.Lock, err, workload.ErrUnknown)
	case a.status == http.StatusNoContent || a.status == http.StatusOK:
		return nil
	case a.status == http.StatusNotFound || a.status == http.StatusConflict:
		return fmt.Errorf("release %q: %d %s: %w", g.Lock, a.status, brief(a.body), workload.ErrNotHeld)
	case a.status >= 500:
		return fmt.Errorf("release %q: %d %s: %w", g.Lock, a.status, brief(a.body), workload.ErrUnknown)
	}
	return fmt.Errorf("release %q: %d %s: %w", g.Lock, a.status, brief(a.body), workload.ErrNotHeld)
}

// Close closes idle connections.
func (d *Driver) Close() { d.client.CloseIdleConnections() }

func brief(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
