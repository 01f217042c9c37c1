package httplock

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/workload"
)

// script answers the requests of a test in order, one handler per request,
// recording what it was sent.
type script struct {
	mu    sync.Mutex
	steps []http.HandlerFunc
	reqs  []string // "METHOD path?query owner token"
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.reqs = append(s.reqs, fmt.Sprintf("%s %s %s %s", r.Method, r.URL.RequestURI(), r.Header.Get("Lock-Owner"), r.Header.Get("Lock-Token")))
	var h http.HandlerFunc
	if len(s.steps) > 0 {
		h, s.steps = s.steps[0], s.steps[1:]
	}
	s.mu.Unlock()
	if h == nil {
		http.Error(w, "script over", http.StatusTeapot)
		return
	}
	h(w, r)
}

func (s *script) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.reqs...)
}

func reply(code int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(code)
		fmt.Fprint(w, body)
	}
}

func serve(t *testing.T, steps ...http.HandlerFunc) (*Driver, *script) {
	t.Helper()
	s := &script{steps: steps}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	d, err := New(srv.URL, WithTTL(3*time.Second), WithPoll(time.Millisecond, 5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d, s
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestAcquireGrants(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []http.HandlerFunc
		token int64
		lease time.Duration // 0: does not expire
		puts  int
	}{
		{"token and lease", []http.HandlerFunc{reply(201, `{"token":7,"lease_ms":1800,"ttl_seconds":3}`)}, 7, 1800 * time.Millisecond, 1},
		{"renewed", []http.HandlerFunc{reply(200, `{"token":7,"lease_ms":1800}`)}, 7, 1800 * time.Millisecond, 1},
		{"ttl only", []http.HandlerFunc{reply(201, `{"ttl_seconds":10}`)}, 0, 8 * time.Second, 1},
		{"seed 004: empty body", []http.HandlerFunc{reply(201, ``)}, 0, 0, 1},
		{"polls past 409", []http.HandlerFunc{reply(409, `{"error":"held"}`), reply(409, ``), reply(201, `{"token":2,"lease_ms":1000}`)}, 2, time.Second, 3},
		{"503 then granted", []http.HandlerFunc{reply(503, `{"outcome":"unknown"}`), reply(200, `{"token":3,"lease_ms":1000}`)}, 3, time.Second, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, s := serve(t, tc.steps...)
			before := time.Now()
			g, err := d.Acquire(ctxFor(t, 5*time.Second), "a/b", "c0-p1")
			if err != nil {
				t.Fatal(err)
			}
			if g.Token != tc.token || g.Owner != "c0-p1" || g.Lock != "a/b" {
				t.Errorf("grant %+v, want token %d", g, tc.token)
			}
			slack := time.Since(before)
			// Counted from the granting attempt's send, recorded from the invocation.
			if g.Lease < tc.lease || (tc.lease > 0 && g.Lease > tc.lease+slack) {
				t.Errorf("lease %v, want %v plus the earlier attempts", g.Lease, tc.lease)
			}
			if (tc.lease == 0) != g.Deadline.IsZero() {
				t.Errorf("deadline %v with lease %v", g.Deadline, tc.lease)
			}
			reqs := s.requests()
			if len(reqs) != tc.puts || reqs[0] != "PUT /v1/locks/a%2Fb?ttl=3 c0-p1 " {
				t.Errorf("requests %q, want %d PUTs with the owner and the ttl", reqs, tc.puts)
			}
		})
	}
}

func TestAcquireFailsOrUnknown(t *testing.T) {
	slow := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(2 * time.Second):
		}
	}
	held := reply(409, `{"error":"held by another owner","holder":"x"}`)
	// retried: long enough for a loaded machine's first answers.
	const answered, retried = 30 * time.Second, 3 * time.Second
	for _, tc := range []struct {
		name  string
		steps []http.HandlerFunc
		want  history.Type
		text  string
		// deadline ends the retries of the cases that retry to the end;
		// one answered at once gets a long one, so that a loaded machine
		// never turns its answer into a time-out.
		deadline time.Duration
	}{
		{"held to the end", repeat(held, 1000), history.Fail, "held by another", retried},
		{"refused", []http.HandlerFunc{reply(400, `{"error":"bad ttl"}`)}, history.Fail, "bad ttl", answered},
		{"5xx", repeat(reply(500, `oops`), 1000), history.Info, "500 oops", retried},
		{"time-out", []http.HandlerFunc{slow}, history.Info, "deadline exceeded", time.Second},
		{"5xx then held", append([]http.HandlerFunc{reply(503, ``)}, repeat(held, 1000)...), history.Info, "503", retried},
		{"granted, body unreadable", []http.HandlerFunc{reply(201, `{"token":"seven"}`)}, history.Info, "not a grant", answered},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := serve(t, tc.steps...)
			_, err := d.Acquire(ctxFor(t, tc.deadline), "a", "o")
			if err == nil || workload.DefaultClassifier(err) != tc.want || !strings.Contains(err.Error(), tc.text) {
				t.Errorf("acquire: %v, want %s saying %q", err, tc.want, tc.text)
			}
		})
	}
}

func TestRelease(t *testing.T) {
	for _, tc := range []struct {
		name string
		step http.HandlerFunc
		want history.Type // "" = ok
	}{
		{"204", reply(204, ``), ""},
		{"404 not held", reply(404, `{"error":"not held"}`), history.Fail},
		{"409 held by another", reply(409, `{"error":"held"}`), history.Fail},
		{"503", reply(503, `{"outcome":"failed"}`), history.Info},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, s := serve(t, tc.step)
			err := d.Release(ctxFor(t, time.Second), workload.Grant{Lock: "a", Owner: "o", Token: 4})
			got := history.Type("")
			if err != nil {
				got = workload.DefaultClassifier(err)
			}
			if got != tc.want {
				t.Errorf("release: %v (%s), want %q", err, got, tc.want)
			}
			if r := s.requests(); len(r) != 1 || r[0] != "DELETE /v1/locks/a o 4" {
				t.Errorf("requests %q, want one DELETE with owner and token", r)
			}
		})
	}
}

func TestNewAndCheck(t *testing.T) {
	for _, bad := range []string{"", "localhost:8080", "ftp://h/", "http://h:1/?x=1"} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%q) accepted", bad)
		}
	}
	d, _ := serve(t)
	if err := d.Check(ctxFor(t, time.Second)); err != nil {
		t.Errorf("a server that answers 418: %v", err)
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	d, err := New(url)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Check(ctxFor(t, time.Second)); err == nil || !strings.Contains(err.Error(), "does not answer") {
		t.Errorf("a closed port: %v, want does not answer", err)
	}
}

func repeat(h http.HandlerFunc, n int) []http.HandlerFunc {
	hs := make([]http.HandlerFunc, n)
	for i := range hs {
		hs[i] = h
	}
	return hs
}
