package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestServeIndexAndShutdown(t *testing.T) {
	store := t.TempDir()
	run := filepath.Join(store, "lease", "20261121T230000")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, "history.jsonl"), []byte(
		`{"index":0,"time":0,"process":0,"type":"invoke","f":"acquire","lock":"l"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb syncBuffer
	if code := runReport(context.Background(), []string{run}, io.Discard, &errb); code != exitValid {
		t.Fatalf("report: %d %s", code, errb.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() { done <- runServe(ctx, []string{"--listen", "127.0.0.1:0", "--store", store}, &out, &errb) }()
	var url string
	for deadline := time.Now().Add(10 * time.Second); url == ""; time.Sleep(20 * time.Millisecond) {
		if m := regexp.MustCompile(`http://\S+/`).FindString(out.String()); m != "" {
			url = m
		} else if time.Now().After(deadline) {
			t.Fatalf("serve did not start: %q %q", out.String(), errb.String())
		}
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "lease/20261121T230000/report.html") || !strings.Contains(string(body), "VALID") {
		t.Fatalf("index: %s", body)
	}
	cancel()
	select {
	case code := <-done:
		if code != exitValid {
			t.Fatalf("serve exit %d: %s", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop when its context ended")
	}
}

// serve and lockd share --listen; serve's old --addr still works.
func TestServeListenFlags(t *testing.T) {
	for _, flagName := range []string{"--listen", "--addr"} {
		var errb syncBuffer
		code := runServe(context.Background(), []string{flagName, "bad-address"}, io.Discard, &errb)
		if code != exitError || !strings.Contains(errb.String(), "bad-address") {
			t.Errorf("%s bad-address: exit %d, stderr %q; want the address refused", flagName, code, errb.String())
		}
	}
}
