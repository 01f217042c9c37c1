package history

// The slowness kinds (issue 48): a node starved of CPU, a JVM or a client's
// process stalled as a GC pause stalls it, a node's disk slow to write and
// sync. Each stall is a window of its own (a start and a stop line), so
// that a replay deals it again at its moment and a shrink can drop it.
const (
	KindSlowNode      = "slow-node"
	KindCoordSlowNode = "coord-slow-node"
	KindGCStall       = "gc-stall"
	KindCoordGCStall  = "coord-gc-stall"
	KindClientGCStall = "client-gc-stall"
	KindSlowDisk      = "slow-disk"
)

// SlowNodeStart is the value of a start-slow-node line.
type SlowNodeStart struct {
	CPU float64 `json:"cpu" doc:"the share of one core the node's processes may use together (its cgroup's CPU quota over its period)"`
}

// SlowNodeStop is the value of a stop-slow-node and a stop-coord-slow-node
// line.
type SlowNodeStop struct {
	CPU float64 `json:"cpu" doc:"as at the start (the quota is lifted)"`
}

// CoordSlowNodeStart is the value of a start-coord-slow-node line.
type CoordSlowNodeStart struct {
	Clients []int   `json:"clients" doc:"the clients pinned to node"`
	CPU     float64 `json:"cpu" doc:"the share of one core the coordinator may use"`
	Node    string  `json:"node" doc:"the coordinator starved"`
}

// GCStallStart is the value of a start-gc-stall line: the node's JVM
// stopped (SIGSTOP) for ms.
type GCStallStart struct {
	Clients []int `json:"clients,omitempty" doc:"coord-gc-stall: the clients pinned to the node"`
	MS      int64 `json:"ms" doc:"the stall planned, in milliseconds (the node sends itself SIGCONT after it)"`
}

// GCStallStop is the value of a stop-gc-stall and a stop-coord-gc-stall
// line.
type GCStallStop struct {
	MS        int64 `json:"ms" doc:"as at the start"`
	StalledMS int64 `json:"stalled_ms" doc:"from the stop taking effect to the resume confirmed, as the harness saw it"`
}

// ClientStallStart is the value of a start-client-gc-stall line: a client
// (and its plug-in process) stalled between its read and its write.
type ClientStallStart struct {
	Client  int    `json:"client" doc:"the client stalled"`
	Lock    string `json:"lock" doc:"the lock it held"`
	MS      int64  `json:"ms" doc:"the stall, in milliseconds"`
	Process int    `json:"process" doc:"its process number in the history"`
}

// ClientStallStop is the value of a stop-client-gc-stall line.
type ClientStallStop struct {
	Client    int   `json:"client" doc:"as at the start"`
	Process   int   `json:"process" doc:"as at the start"`
	StalledMS int64 `json:"stalled_ms" doc:"how long the client stood still (the line is written at the resume)"`
}

// SlowDiskValue is the value of the start-slow-disk and stop-slow-disk
// lines.
type SlowDiskValue struct {
	LatencyMS int64 `json:"latency_ms" doc:"the latency added to every write and fsync of the node's lazy filesystem, in milliseconds"`
}
