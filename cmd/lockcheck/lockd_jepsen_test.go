//go:build jepsen

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/cluster/clustertest"
	"github.com/lockcheck/lockcheck/lease"
	"github.com/lockcheck/lockcheck/lockd"
	"github.com/lockcheck/lockcheck/recipe"
	"github.com/lockcheck/lockcheck/workload/locktest"
)

// TestMain gives the package's jepsen tests the shared cluster. Other
// jepsen tests of package main use it too (one TestMain per package).
func TestMain(m *testing.M) { clustertest.Main(m) }

type lockdClient struct {
	t    *testing.T
	base string
}

// do sends a request and returns the status and the decoded JSON body (nil
// when empty).
func (c lockdClient) do(method, path, owner string) (int, map[string]any) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	if owner != "" {
		req.Header.Set("Lock-Owner", owner)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var body map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &body); err != nil {
			c.t.Fatalf("%s %s: body %q: %v", method, path, raw, err)
		}
	}
	return resp.StatusCode, body
}

func (c lockdClient) expect(method, path, owner string, code int) map[string]any {
	c.t.Helper()
	got, body := c.do(method, path, owner)
	if got != code {
		c.t.Fatalf("%s %s (owner %q): %d %v, want %d", method, path, owner, got, body, code)
	}
	return body
}

// lockd's answers end to end, over lease-fenced on the shared cluster.
func TestLockdEndToEnd(t *testing.T) {
	s, ks, _ := locktest.Setup(t, lease.CreateSchema)
	srv := httptest.NewServer(lockd.Handler(locktest.New(t, lease.NewFenced, s, recipe.WithKeyspace(ks)), slog.Default()))
	defer srv.Close()
	c := lockdClient{t, srv.URL}
	name := fmt.Sprintf("/v1/locks/e2e-%d", time.Now().UnixNano())

	b := c.expect("PUT", name+"?ttl=30", "a", 201)
	t1 := b["token"].(float64)
	if b["owner"] != "a" || b["ttl_seconds"] != 30.0 || t1 <= 0 {
		t.Fatalf("201 body %v", b)
	}
	if b := c.expect("PUT", name, "b", 409); b["holder"] != "a" {
		t.Fatalf("409 body %v", b)
	}
	if b := c.expect("PUT", name+"?ttl=30", "a", 200); b["token"] != t1 {
		t.Fatalf("renewal must keep the token: %v", b)
	}
	if b := c.expect("GET", name, "", 200); b["owner"] != "a" || b["ttl_seconds"].(float64) < 25 {
		t.Fatalf("GET body %v", b)
	}
	c.expect("DELETE", name, "b", 409)
	c.expect("DELETE", name, "a", 204)
	c.expect("DELETE", name, "a", 404)
	c.expect("GET", name, "", 404)

	b = c.expect("PUT", name+"?ttl=2", "b", 201)
	t2 := b["token"].(float64)
	if t2 <= t1 {
		t.Fatalf("token %v after %v", t2, t1)
	}
	// An abandoned lock frees itself after its TTL.
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, _ := c.do("GET", name, "")
		if code == 404 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("lock with ttl=2 still held after 10 s")
		}
		time.Sleep(250 * time.Millisecond)
	}
	if b := c.expect("PUT", name, "a", 201); b["token"].(float64) <= t2 {
		t.Fatalf("token %v after %v", b["token"], t2)
	}
	c.expect("PUT", "/v1/locks/x", "", 400)
}

// The command itself: serves on --hosts, stops cleanly when its context ends
// (what SIGTERM does through main's signal.NotifyContext).
func TestLockdCommandGracefulStop(t *testing.T) {
	cl := clustertest.Get(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	var stderr strings.Builder
	done := make(chan int, 1)
	go func() {
		done <- runLockd(ctx, []string{"--listen", "127.0.0.1:0", "--hosts", strings.Join(cl.Hosts(), ","),
			"--keyspace", cl.Keyspace()}, pw, &stderr)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	var base string
	for lines.Scan() {
		if i := strings.Index(lines.Text(), "http://"); i >= 0 {
			base = strings.TrimSuffix(strings.Fields(lines.Text()[i:])[0], "/v1/locks/{name}")
			break
		}
	}
	if base == "" {
		t.Fatalf("lockd did not start: %s", stderr.String())
	}
	go io.Copy(io.Discard, pr)
	c := lockdClient{t, base}
	c.expect("PUT", fmt.Sprintf("/v1/locks/cmd-%d?ttl=5", time.Now().UnixNano()), "a", 201)
	cancel()
	select {
	case code := <-done:
		if code != exitValid {
			t.Fatalf("exit %d after a graceful stop: %s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("lockd did not stop within 30 s")
	}
}
