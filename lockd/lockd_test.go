package lockd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/httplock"
	"github.com/lockcheck/lockcheck/lease"
	"github.com/lockcheck/lockcheck/recipe"
	"github.com/lockcheck/lockcheck/workload"
)

// fakeLocks is an in-memory Service: one holder per name, tokens that
// grow, and an injectable error for the next call.
type fakeLocks struct {
	mu      sync.Mutex
	holders map[string]string
	ttls    map[string]time.Duration
	token   int64
	nextErr error
	calls   int
}

func newFakeLocks() *fakeLocks {
	return &fakeLocks{holders: map[string]string{}, ttls: map[string]time.Duration{}}
}

func (f *fakeLocks) takeErr() error {
	f.calls++
	err := f.nextErr
	f.nextErr = nil
	return err
}

func (f *fakeLocks) TryAcquire(ctx context.Context, name, owner string, ttl time.Duration) (workload.Grant, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.takeErr(); err != nil {
		return workload.Grant{}, false, err
	}
	switch h := f.holders[name]; h {
	case "":
		f.token++
		f.holders[name], f.ttls[name] = owner, ttl
		return workload.Grant{Lock: name, Owner: owner, Token: f.token}, false, nil
	case owner:
		f.ttls[name] = ttl
		return workload.Grant{Lock: name, Owner: owner, Token: f.token}, true, nil
	default:
		return workload.Grant{}, false, &lease.HeldError{Lock: name, Holder: h}
	}
}

func (f *fakeLocks) ReleaseOwner(ctx context.Context, name, owner string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.takeErr(); err != nil {
		return err
	}
	switch h := f.holders[name]; h {
	case "":
		return fmt.Errorf("release: %w", workload.ErrNotHeld)
	case owner:
		delete(f.holders, name)
		return nil
	default:
		return &lease.HeldError{Lock: name, Holder: h}
	}
}

func (f *fakeLocks) Holder(ctx context.Context, name string) (lease.Holder, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.takeErr(); err != nil {
		return lease.Holder{}, err
	}
	return lease.Holder{Lock: name, Owner: f.holders[name], TTL: f.ttls[name]}, nil
}

type step struct {
	method, path, owner string
	failWith            error // the lock's next call fails with this
	wantCode            int
	wantBody            map[string]any // keys that must be in the JSON body, with these values
	wantNoCall          bool           // rejected before reaching the lock
	wantHeader          map[string]string
}

func TestLockdHandler(t *testing.T) {
	long := strings.Repeat("x", 256)
	tests := []struct {
		name  string
		steps []step
	}{
		{"acquire, renew, conflict, release", []step{
			{method: "PUT", path: "/v1/locks/db", owner: "a", wantCode: 201,
				wantBody: map[string]any{"name": "db", "owner": "a", "ttl_seconds": 60.0, "token": 1.0}},
			{method: "PUT", path: "/v1/locks/db?ttl=30", owner: "a", wantCode: 200,
				wantBody: map[string]any{"owner": "a", "ttl_seconds": 30.0, "token": 1.0}},
			{method: "PUT", path: "/v1/locks/db", owner: "b", wantCode: 409, wantBody: map[string]any{"holder": "a"}},
			{method: "GET", path: "/v1/locks/db", wantCode: 200, wantBody: map[string]any{"name": "db", "owner": "a", "ttl_seconds": 30.0}},
			{method: "DELETE", path: "/v1/locks/db", owner: "b", wantCode: 409, wantBody: map[string]any{"holder": "a"}},
			{method: "DELETE", path: "/v1/locks/db", owner: "a", wantCode: 204},
			{method: "DELETE", path: "/v1/locks/db", owner: "a", wantCode: 404},
			{method: "GET", path: "/v1/locks/db", wantCode: 404},
			{method: "PUT", path: "/v1/locks/db", owner: "b", wantCode: 201, wantBody: map[string]any{"owner": "b", "token": 2.0}},
		}},
		{"unknown outcome is 503, never 201", []step{
			{method: "PUT", path: "/v1/locks/x", owner: "a", failWith: fmt.Errorf("acquire: %w", workload.ErrUnknown),
				wantCode: 503, wantBody: map[string]any{"outcome": "unknown"}},
			{method: "DELETE", path: "/v1/locks/x", owner: "a", failWith: fmt.Errorf("release: %w", workload.ErrUnknown),
				wantCode: 503, wantBody: map[string]any{"outcome": "unknown"}},
			{method: "GET", path: "/v1/locks/x", failWith: fmt.Errorf("read: unavailable"), wantCode: 503},
			// A read has no effect: whatever went wrong, its outcome is not unknown.
			{method: "GET", path: "/v1/locks/x", failWith: workload.ClassifyRead(context.DeadlineExceeded),
				wantCode: 503, wantBody: map[string]any{"outcome": "failed"}},
		}},
		{"bad requests", []step{
			{method: "PUT", path: "/v1/locks/db", wantCode: 400, wantNoCall: true},
			{method: "DELETE", path: "/v1/locks/db", wantCode: 400, wantNoCall: true},
			{method: "PUT", path: "/v1/locks/db?ttl=0", owner: "a", wantCode: 400, wantNoCall: true},
			{method: "PUT", path: "/v1/locks/db?ttl=86401", owner: "a", wantCode: 400, wantNoCall: true},
			{method: "PUT", path: "/v1/locks/db?ttl=1.5", owner: "a", wantCode: 400, wantNoCall: true},
			{method: "PUT", path: "/v1/locks/db?ttl=", owner: "a", wantCode: 400, wantNoCall: true},
			{method: "PUT", path: "/v1/locks/db?ttl=5&ttl=6", owner: "a", wantCode: 400, wantNoCall: true},
			{method: "PUT", path: "/v1/locks/" + long, owner: "a", wantCode: 400, wantNoCall: true},
			{method: "PUT", path: "/v1/locks/a%07b", owner: "a", wantCode: 400, wantNoCall: true},
			{method: "PUT", path: "/v1/locks/a%ffb", owner: "a", wantCode: 400, wantNoCall: true},
			{method: "GET", path: "/v1/locks/a%0Ab", wantCode: 400, wantNoCall: true},
			{method: "PUT", path: "/v1/locks/db", owner: long, wantCode: 400, wantNoCall: true},
			{method: "PUT", path: "/v1/locks/" + strings.Repeat("x", 255) + "?ttl=86400", owner: "a", wantCode: 201},
			{method: "PUT", path: "/v1/locks/caf%C3%A9?ttl=1", owner: "é", wantCode: 201},
		}},
		{"unknown routes answer JSON too", []step{
			{method: "GET", path: "/v1/nothing", wantCode: 404, wantNoCall: true},
			{method: "GET", path: "/", wantCode: 404, wantNoCall: true},
			{method: "POST", path: "/v1/locks/db", owner: "a", wantCode: 405, wantNoCall: true,
				wantHeader: map[string]string{"Allow": "DELETE, GET, HEAD, PUT"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeLocks()
			srv := httptest.NewServer(Handler(f, slog.New(slog.DiscardHandler)))
			defer srv.Close()
			for i, s := range tt.steps {
				f.mu.Lock()
				f.nextErr = s.failWith
				before := f.calls
				f.mu.Unlock()
				req, err := http.NewRequest(s.method, srv.URL+s.path, nil)
				if err != nil {
					t.Fatal(err)
				}
				if s.owner != "" {
					req.Header.Set("Lock-Owner", s.owner)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != s.wantCode {
					t.Fatalf("step %d %s %s: status %d, want %d (body %s)", i, s.method, s.path, resp.StatusCode, s.wantCode, raw)
				}
				for k, v := range s.wantHeader {
					if got := resp.Header.Get(k); got != v {
						t.Errorf("step %d: header %s = %q, want %q", i, k, got, v)
					}
				}
				if s.wantCode >= 400 && !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
					t.Errorf("step %d: Content-Type %q, want application/json", i, resp.Header.Get("Content-Type"))
				}
				if s.wantCode == 503 && resp.Header.Get("Retry-After") == "" {
					t.Errorf("step %d: 503 without Retry-After", i)
				}
				if s.wantCode >= 400 {
					var e map[string]any
					if err := json.Unmarshal(raw, &e); err != nil || e["error"] == "" || e["error"] == nil {
						t.Errorf("step %d: error body %q is not a JSON error", i, raw)
					}
				}
				if s.wantBody != nil {
					var got map[string]any
					if err := json.Unmarshal(raw, &got); err != nil {
						t.Fatalf("step %d: body %q: %v", i, raw, err)
					}
					for k, v := range s.wantBody {
						if got[k] != v {
							t.Errorf("step %d: %s = %v, want %v (body %s)", i, k, got[k], v, raw)
						}
					}
				}
				f.mu.Lock()
				called := f.calls > before
				f.mu.Unlock()
				if s.wantNoCall && called {
					t.Errorf("step %d: a bad request reached the lock", i)
				}
			}
		})
	}
}

// --lock serves the constructor it names.
func TestLeases(t *testing.T) {
	for name, want := range map[string]func(*gocql.Session, ...recipe.Option) (*lease.Lease, error){
		"lease": lease.New, "lease-fenced": lease.NewFenced,
	} {
		if got := Leases[name]; got == nil || reflect.ValueOf(got).Pointer() != reflect.ValueOf(want).Pointer() {
			t.Errorf("--lock %s does not serve the %s constructor", name, name)
		}
	}
}

// lockd and httplock speak the same contract: what lockd answers is what
// the --lock-url driver understands (a grant with its token and lease, a
// conflict polled past, an unknown outcome as info).
func TestLockdServesHTTPLock(t *testing.T) {
	f := newFakeLocks()
	srv := httptest.NewServer(Handler(f, slog.Default()))
	defer srv.Close()
	d, err := httplock.New(srv.URL, httplock.WithTTL(5*time.Second), httplock.WithPoll(time.Millisecond, 5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	before := time.Now()
	g, err := d.Acquire(ctx, "a", "c0-p0")
	slack := time.Since(before)
	if err != nil {
		t.Fatal(err)
	}
	if g.Token != 1 || f.ttls["a"] != 5*time.Second {
		t.Errorf("grant %+v, ttl %v; want token 1 and the driver's ttl", g, f.ttls["a"])
	}
	// The fake grants without a lease: the body's ttl_seconds stands for it.
	// Counted from the granting attempt's send, recorded from the
	// invocation: at least the lease, at most the lease plus the call.
	if g.Lease < 3500*time.Millisecond || g.Lease > 3500*time.Millisecond+slack {
		t.Errorf("lease %v (the call took %v), want the 5 s ttl less the 1.5 s margin", g.Lease, slack)
	}
	// A conflict polled past until the deadline is a failure; but on a
	// loaded machine the last poll may still be in flight at the deadline,
	// and an attempt cut off is rightly unknown. Some attempt must end as a
	// failure, and none may be granted.
	failed := false
	for try := 0; try < 5 && !failed; try++ {
		short, cancelShort := context.WithTimeout(ctx, time.Second)
		_, err := d.Acquire(short, "a", "c1-p1")
		cancelShort()
		switch workload.DefaultClassifier(err) {
		case history.Fail:
			failed = true
		case history.OK:
			t.Fatalf("acquire of a held lock granted")
		default:
			t.Logf("acquire of a held lock, try %d: %v (cut off at the deadline)", try, err)
		}
	}
	if !failed {
		t.Error("acquire of a held lock never ended as a failure")
	}
	if err := d.Release(ctx, g); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.nextErr = fmt.Errorf("cas timeout: %w", workload.ErrUnknown)
	f.mu.Unlock()
	if err := d.Release(ctx, workload.Grant{Lock: "a", Owner: "c0-p0"}); workload.DefaultClassifier(err) != history.Info {
		t.Errorf("release answered 503: %v, want info", err)
	}
	if err := d.Release(ctx, workload.Grant{Lock: "a", Owner: "c0-p0"}); !errors.Is(err, workload.ErrNotHeld) {
		t.Errorf("release of a free lock: %v, want not held", err)
	}
}
