package cluster

import "errors"

// Errors callers tell apart with errors.Is. The CLI reports all of them as
// bad input or a failed command with one line.
var (
	// ErrNotRunning: Attach found no cluster of that name (no container).
	ErrNotRunning = errors.New("no running lockcheck cluster")
	// ErrBadOption: an option is out of range.
	ErrBadOption = errors.New("bad cluster option")
	// ErrBadImage: the image is missing or does not run a Cassandra node.
	ErrBadImage = errors.New("unusable node image")
	// ErrNetworkClash: the cluster's subnet overlaps a network of the machine.
	ErrNetworkClash = errors.New("network clash")
	// ErrNoDocker: no Docker engine answers.
	ErrNoDocker = errors.New("no Docker engine")
	// ErrMissingTool: a tool the image build needs is not installed.
	ErrMissingTool = errors.New("missing tool")
	// ErrMovementFailed: a range movement failed and Cassandra left it
	// half done (a bootstrap whose streaming failed stays joining); Finish
	// completes it.
	ErrMovementFailed = errors.New("range movement failed")
)
