package main

import (
	"context"
	"fmt"
	"io"
)

// runServe is not built yet: see the issue that owns `lockcheck serve`.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "lockcheck serve: not built yet")
	return exitError
}
