package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/lockcheck/lockcheck/reports"
	"github.com/lockcheck/lockcheck/runner"
)

// defaultListen is where serve and lockd listen unless --listen says otherwise.
const defaultListen = "127.0.0.1:8080"

// serveFlags are `lockcheck serve`'s flags.
type serveFlags struct{ listen, store string }

func newServeFlags() (*flag.FlagSet, *serveFlags) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	f := &serveFlags{}
	fs.StringVar(&f.listen, "listen", defaultListen, "address to serve on")
	// --addr was this flag's name before lockd and serve agreed on --listen.
	fs.StringVar(&f.listen, "addr", defaultListen, "deprecated: --listen")
	fs.StringVar(&f.store, "store", runner.Defaults().Store, "the store of runs")
	return fs, f
}

// runServe: lockcheck serve [--listen 127.0.0.1:8080] [--store DIR]
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, f := newServeFlags()
	fs.SetOutput(stderr)
	if _, err := parseInterspersed(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitValid
		}
		return exitError
	}
	srv := &http.Server{Handler: reports.Handler(f.store)}
	err := serveUntil(ctx, srv, f.listen, 5*time.Second, func(addr string) {
		fmt.Fprintf(stdout, "serving %s on http://%s/\n", f.store, addr)
	})
	if err != nil {
		fmt.Fprintf(stderr, "lockcheck serve: %v\n", err)
		return exitError
	}
	return exitValid
}

// serveUntil serves srv on addr until ctx ends, then shuts it down,
// letting requests in flight finish for up to grace. ready is told the
// address listened on (a port 0 resolved). An error is one from listening
// or serving, or a shutdown that outlasted grace.
func serveUntil(ctx context.Context, srv *http.Server, addr string, grace time.Duration, ready func(addr string)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if srv.ReadHeaderTimeout == 0 {
		srv.ReadHeaderTimeout = 10 * time.Second
	}
	ready(ln.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
