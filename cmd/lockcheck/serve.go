package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/lockcheck/lockcheck/reports"
	"github.com/lockcheck/lockcheck/runner"
)

// defaultListen is where serve and lockd listen unless --listen says otherwise.
const defaultListen = "127.0.0.1:8080"

// runServe: lockcheck serve [--listen 127.0.0.1:8080] [--store DIR]
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("listen", defaultListen, "address to serve on")
	// --addr was this flag's name before lockd and serve agreed on --listen.
	fs.StringVar(addr, "addr", defaultListen, "deprecated: --listen")
	store := fs.String("store", runner.Defaults().Store, "the store of runs")
	if _, err := parseInterspersed(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitValid
		}
		return exitError
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "lockcheck serve: %v\n", err)
		return exitError
	}
	srv := &http.Server{Handler: reports.Handler(*store), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "serving %s on http://%s/\n", *store, ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		fmt.Fprintf(stderr, "lockcheck serve: %v\n", err)
		return exitError
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			slog.Warn("serve: shutdown", "err", err)
		}
		return exitValid
	}
}
