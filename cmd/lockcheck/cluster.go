package main

import (
	"context"
	"fmt"
	"io"
)

// runCluster is not built yet: see the issue that owns `lockcheck cluster`.
func runCluster(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "lockcheck cluster: not built yet")
	return exitError
}
