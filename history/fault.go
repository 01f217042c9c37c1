package history

import (
	"encoding/json"
	"strings"
)

// The fault-event vocabulary: every line the nemesis writes has process
// NemesisProcess and type info, and one of these names. A fault kind "K"
// (partition, pause, loss, ...) writes "start-K" when it takes effect and
// "stop-K" when it was undone; what happened is its value, an object whose
// fields are the kind's own: its typed values below (docs/faults.md lists
// them). The line names and windows name no kind: a kind whose values are
// of a shape already here needs nothing added.
const (
	startPrefix = "start-"
	stopPrefix  = "stop-"
	failSuffix  = "-failed"

	// FHeal closes a run's faults: its value is "ok" or the errors of the
	// heal, and every node and client is back to its known state after it.
	FHeal = "heal"
	// FHealLeftover records a node that a command found still faulted by an
	// earlier process (killed before its heal) and reset; its value is a
	// HealLeftover.
	FHealLeftover = "heal-leftover"
	// FSetupFailed ends the history of a run whose set-up failed (the
	// cluster could not be healed or made healthy, the lock could not be
	// set up): its value is a SetupFailed. Nothing after the set-up ran,
	// so the history vouches for nothing: its verdict is unknown.
	FSetupFailed = "setup-failed"
)

// SetupFailed is the value of an FSetupFailed line.
type SetupFailed struct {
	Cause string `json:"cause" doc:"why the set-up failed, as the run printed it"`
}

// Foreign is state on a node that lockcheck did not make and its heal does
// not touch (Meta.Foreign): an iptables rule outside lockcheck's chains, a
// node down for a cause the heal cannot undo. A run over it records it, so
// that its report never says "no faults" over it.
type Foreign struct {
	Node string `json:"node"`
	What string `json:"what"`          // "iptables rule -A INPUT -s 10.0.0.3/32 -j DROP"
	Fix  string `json:"fix,omitempty"` // what to do about it
}

// String is the one line a run prints of it.
func (f Foreign) String() string {
	s := f.Node + ": " + f.What + " (not lockcheck's: its heal leaves it)"
	if f.Fix != "" {
		s += "; " + f.Fix
	}
	return s
}

// StartF is the name of the line that starts a fault of kind.
func StartF(kind string) string { return startPrefix + kind }

// StopF is the name of the line that stops a fault of kind.
func StopF(kind string) string { return stopPrefix + kind }

// StartFailedF is the name of the line of a fault of kind that did not
// start (value: the error); the schedule goes on.
func StartFailedF(kind string) string { return startPrefix + kind + failSuffix }

// FaultEvent parses a nemesis line's name: the kind and whether it starts or
// stops a fault. ok is false for every other line (meta, heal,
// heal-leftover, a failed start).
func FaultEvent(f string) (kind string, start, ok bool) {
	if strings.HasSuffix(f, failSuffix) {
		return "", false, false
	}
	if k, found := strings.CutPrefix(f, startPrefix); found && k != "" {
		return k, true, true
	}
	if k, found := strings.CutPrefix(f, stopPrefix); found && k != "" {
		return k, false, true
	}
	return "", false, false
}

// HealLeftover is the value of an FHealLeftover line.
type HealLeftover struct {
	Node   string   `json:"node"`
	Healed []string `json:"healed"` // the fault kinds found and undone
	// Found is what the node showed before the heal, in `lockcheck cluster
	// status` words ("container paused", "jvm stopped", "2 iptables rules",
	// "clock offset +5.000000", "container exited"), when the node can say;
	// a paused container cannot show a stopped JVM.
	Found []string `json:"found,omitempty"`
}

// FaultStyle is how reports draw a fault kind; the meta line carries one per
// kind the run may inject (Meta.Faults), so that a stored history is drawn
// the same way without the code that made it.
type FaultStyle struct {
	Color string `json:"color,omitempty"` // a CSS colour
}

// FaultWindow is the time a fault kind was in effect: from a start line to
// the stop that closes it. Faults of one kind may overlap (two nodes paused
// by two starts); their window lasts until the last of them stops.
type FaultWindow struct {
	Kind       string
	Start, End int64 // ns; End is the history's end for a fault never stopped
	Starts     int   // start lines merged into the window
	Nodes      []string
	Value      json.RawMessage // the first start line's value
	// Stop is the value of the stop line that closed the window: a
	// membership window's says when its streaming was done and the ring
	// after. Closed says whether one did (a stop line may carry no value).
	Stop   json.RawMessage
	Closed bool
}

// FaultWindows pairs the start and stop lines of ops (in history order) into
// windows, in order of their start; a window still open at the end closes
// at end.
func FaultWindows(ops []Op, end int64) []FaultWindow {
	type open struct{ at, n int }
	opened := map[string]*open{}
	var out []FaultWindow
	for i := range ops {
		op := &ops[i]
		if op.Process != NemesisProcess {
			continue
		}
		kind, start, ok := FaultEvent(op.F)
		if !ok {
			continue
		}
		o := opened[kind]
		switch {
		case start && o != nil:
			o.n++
			w := &out[o.at]
			w.Starts++
			w.Nodes = addNodes(w.Nodes, op.Node)
		case start:
			opened[kind] = &open{at: len(out), n: 1}
			out = append(out, FaultWindow{Kind: kind, Start: op.Time, End: end, Starts: 1, Nodes: addNodes(nil, op.Node), Value: op.Value})
		case o != nil:
			if o.n--; o.n == 0 {
				out[o.at].End, out[o.at].Stop, out[o.at].Closed = op.Time, op.Value, true
				delete(opened, kind)
			}
		}
	}
	return out
}

func addNodes(nodes []string, list string) []string {
	if list == "" {
		return nodes
	}
	for _, n := range strings.Split(list, ",") {
		found := false
		for _, m := range nodes {
			found = found || m == n
		}
		if !found {
			nodes = append(nodes, n)
		}
	}
	return nodes
}

// Fault values: the value of each fault kind's start and stop lines, one
// type per kind's line, shared by the nemesis (which records them) and the
// reports (which read them). Fields are declared in the order of their JSON
// names: lines written before these types existed were encoded from maps
// (keys sorted), and a stored history must read back byte for byte. A
// field's `doc` tag is its entry in the generated fault reference
// (docs/faults.md).

// The kinds whose values other packages than the nemesis read by name (the
// reports, the checker, the workload). A kind nothing else reads declares
// its name and its values in its own file of package nemesis.
const (
	KindClock          = "clock"
	KindClientPause    = "client-pause"
	KindClientClock    = "client-clock"
	KindClientKill     = "client-kill"
	KindPowerLoss      = "power-loss"
	KindRackPowerLoss  = "rack-power-loss"
	KindCoordPartition = "coord-partition"
	KindCoordClock     = "coord-clock"
	KindDCPartition    = "dc-partition"
	KindJoin           = "join"
	KindLeave          = "leave"
	KindReplace        = "replace"
	KindRemove         = "remove"
	KindNetDelay       = "net-delay"
	KindNetRate        = "net-rate"
	KindCoordNetDelay  = "coord-net-delay"
)

// Grudge maps a node's name to the names of the nodes it drops packets
// from; "clients" stands for the harness's gateway. A start line records
// it as applied: a node whose container was stopped took no rule and is
// not a key, while the kind's label (a partition's kind, a dc-partition's
// mode and data centres) stays as drawn.
type Grudge map[string][]string

// DCPartitionStart is the value of a start-dc-partition line.
type DCPartitionStart struct {
	DCs    map[string][]string `json:"dcs" doc:"the two data centres cut apart, each with its nodes"`
	Grudge Grudge              `json:"grudge" doc:"per node, the nodes it drops packets from"`
	Mode   string              `json:"mode" doc:"both (each side drops the other) or one-way (only the side whose nodes have a grudge drops)"`
}

// DCPartitionStop is the value of a stop-dc-partition line.
type DCPartitionStop struct {
	Mode string `json:"mode" doc:"as at the start"`
}

// Shaping is how a fault shapes a node's links, the one value of the
// shaping kinds (net-delay, coord-net-delay, net-rate) as Jepsen's
// net/shape! takes one: what the node sends its peers waits DelayMS plus or
// minus JitterMS (order kept per flow) and goes at most RateKbit.
type Shaping struct {
	DelayMS  int64 `json:"delay_ms,omitempty" doc:"added latency, in milliseconds, on every packet the node sends the peers"`
	JitterMS int64 `json:"jitter_ms,omitempty" doc:"uniform jitter around the delay, in milliseconds (at most the delay)"`
	RateKbit int   `json:"rate_kbit,omitempty" doc:"bandwidth limit of what the node sends the peers, in kbit/s"`
}

// ShapeStart is the value of the start line of a shaping kind.
type ShapeStart struct {
	Clients []int   `json:"clients,omitempty" doc:"coord-net-delay: the clients pinned to node"`
	Links   Grudge  `json:"links" doc:"per shaped node, the peers whose links it shapes (\"clients\": the harness's gateway)"`
	Mode    string  `json:"mode" doc:"nodes (chosen nodes' links to the others), clients (to the harness) or coord (a coordinator's links to the other nodes and its clients)"`
	Node    string  `json:"node,omitempty" doc:"coord-net-delay: the coordinator slowed"`
	Shape   Shaping `json:"shape" doc:"how the links are shaped"`
}

// ShapeStop is the value of the stop line of a shaping kind.
type ShapeStop struct {
	Mode string `json:"mode" doc:"as at the start"`
}

// PowerStart is the value of a start line of a power kind (power-loss,
// rack-power-loss): per node, what its lazy filesystem held unsynced when
// the power went (-1: unknown).
type PowerStart struct {
	How           string           `json:"how" doc:"power off"`
	UnsyncedBytes map[string]int64 `json:"unsynced_bytes" doc:"per node, the bytes written and not fsynced when the power went (-1: unknown)"`
	UnsyncedFiles map[string]int   `json:"unsynced_files" doc:"per node, the files holding them (-1: unknown)"`
}

// PowerStop is the value of a stop line of a power kind.
type PowerStop struct {
	How string `json:"how" doc:"power on"`
}

// ClockStart is the value of a start-clock line.
type ClockStart struct {
	Kind    string            `json:"kind" doc:"bump (the offsets hold) or strobe (flips between the offsets and real time)"`
	Offsets map[string]string `json:"offsets" doc:"per node, its offset as a Go duration (\"-1.5s\")"`
	Period  string            `json:"period,omitempty" doc:"strobe only: how often it flips (\"120ms\")"`
}

// ClockStop is the value of a stop-clock line.
type ClockStop struct {
	Kind string `json:"kind" doc:"as at the start"`
}

// ClientPauseStart is the value of a start-client-pause line: the holder
// stalled in its critical section.
type ClientPauseStart struct {
	Client  int    `json:"client" doc:"the client stalled"`
	Lock    string `json:"lock" doc:"the lock it held"`
	MS      int64  `json:"ms" doc:"the stall, in milliseconds: its lease plus the pause extra"`
	Process int    `json:"process" doc:"its process number in the history"`
}

// ClientPauseStop is the value of a stop-client-pause line.
type ClientPauseStop struct {
	Client  int `json:"client" doc:"as at the start"`
	Process int `json:"process" doc:"as at the start"`
	// StalledMS was added after the first histories: absent in theirs.
	StalledMS int64 `json:"stalled_ms,omitempty" doc:"how long the client stood still, from its stall to its resume (the line is written at the resume)"`
}

// ClientClockStart is the value of a start-client-clock line.
type ClientClockStart struct {
	Client int    `json:"client" doc:"the client whose clock moved"`
	Offset string `json:"offset" doc:"its offset (\"-12.3s\"), stepped between two of its operations"`
}

// ClientClockStop is the value of a stop-client-clock line.
type ClientClockStop struct {
	Client int `json:"client" doc:"as at the start"`
}

// ClientKillStart is the value of a start-client-kill line: the client
// process killed (SIGKILL; a plug-in's whole process group, an in-process
// client's session and goroutines) and what it was doing. The line is
// written before the kill lands, so that the killed operation's info
// completion, if one was in flight, comes after it.
type ClientKillStart struct {
	Client   int    `json:"client" doc:"the client whose process died"`
	InFlight string `json:"in_flight" doc:"what it was doing: hold (holding the lock between operations), acquire or release (that operation in flight)"`
	Lock     string `json:"lock" doc:"the lock it held or was acquiring or releasing"`
	Process  int    `json:"process" doc:"its process number in the history: it never completes another operation"`
	// RestartMS is how long the client stays dead before a fresh process
	// starts (run --kill-restart).
	RestartMS int64 `json:"restart_ms" doc:"how long the client stays down before a fresh process of it starts, in milliseconds"`
}

// ClientKillStop is the value of a stop-client-kill line: a fresh process of
// the client started, as a restarted application instance would.
type ClientKillStop struct {
	Client  int   `json:"client" doc:"as at the start"`
	DownMS  int64 `json:"down_ms" doc:"from the kill to the fresh process's start, in milliseconds"`
	Process int   `json:"process" doc:"the fresh process's number in the history"`
}

// CoordPartitionStart is the value of a start-coord-partition line.
type CoordPartitionStart struct {
	AtRest  bool             `json:"at_rest" doc:"whether clients were held between operations while the cut was made"`
	Clients []int            `json:"clients" doc:"the clients pinned to node"`
	Grudge  Grudge           `json:"grudge" doc:"per other node, the node whose internode traffic it drops"`
	Node    string           `json:"node" doc:"the coordinator cut off"`
	Others  map[string][]int `json:"others" doc:"the other nodes and their clients"`
	Port    int              `json:"port" doc:"the internode port dropped (7000)"`
}

// CoordPartitionStop is the value of a stop-coord-partition line.
type CoordPartitionStop struct {
	Node string `json:"node" doc:"as at the start"`
}

// CoordClockStart is the value of a start-coord-clock line.
type CoordClockStart struct {
	Clients []int  `json:"clients" doc:"the clients pinned to node"`
	Holders []int  `json:"holders" doc:"the clients that held a lock when node was chosen"`
	Lease   string `json:"lease" doc:"the lease TTL the offset exceeds"`
	Node    string `json:"node" doc:"the coordinator whose clock moved"`
	Offset  string `json:"offset" doc:"how far ahead it runs (\"+4.997s\")"`
}

// CoordClockStop is the value of a stop-coord-clock line.
type CoordClockStop struct {
	Node string `json:"node" doc:"as at the start"`
}

// MemberStart is the value of the start line of a membership kind (join,
// leave, replace, remove).
type MemberStart struct {
	How  string            `json:"how" doc:"what the window does: bootstrap then decommission (join), decommission then bootstrap (leave), kill then bootstrap in its own place (replace), kill, removenode then bootstrap (remove)"`
	Node string            `json:"node" doc:"the node that joins, leaves, is replaced or removed"`
	Ring map[string]string `json:"ring" doc:"the ring before: node -> state (UN, DN, UJ joining, UL leaving); a node out of the ring is absent"`
}

// MemberStop is the value of the stop line of a membership kind.
type MemberStop struct {
	Error      string            `json:"error,omitempty" doc:"why a movement did not complete (the heal brings the ring back)"`
	Moved      map[string]string `json:"moved" doc:"the ring when the first movement's streaming was done"`
	MS         int64             `json:"ms" doc:"from the start until the node was back where it started"`
	Node       string            `json:"node" doc:"as at the start"`
	Ring       map[string]string `json:"ring" doc:"the ring after: as before when the window ends"`
	StreamedMS int64             `json:"streamed_ms" doc:"from the start until the first movement's streaming was done (joined: UN; left: out of the ring)"`
	Resumed    []string          `json:"resumed,omitempty" doc:"each movement that failed (a node it streamed with was killed) and how it was completed: nodetool bootstrap resume, decommission again (it resumes), or a bootstrap again from empty data"`
	WaitedMS   int64             `json:"waited_ms,omitempty" doc:"how long the movements waited for the ring to be whole (every other node up: a killed one restarted) before each began"`
}

// Injected is what a run asked of the nemesis and what it dealt: a kind
// requested and never dealt (the run ended first, or its starts failed) is
// named, not hidden behind the test's name (results.json's "injected").
type Injected struct {
	Requested []string       `json:"requested"`             // the meta line's nemesis
	Dealt     map[string]int `json:"dealt"`                 // start lines by kind
	Never     []string       `json:"never_dealt,omitempty"` // requested, no start line
}

// InjectedOf reads what was requested (meta's nemesis) and dealt (the
// start lines) from a history.
func InjectedOf(meta *Meta, ops []Op) Injected {
	in := Injected{Requested: []string{}, Dealt: map[string]int{}}
	if meta != nil {
		in.Requested = append(in.Requested, meta.Nemesis...)
	}
	for i := range ops {
		if ops[i].Process != NemesisProcess {
			continue
		}
		if kind, start, ok := FaultEvent(ops[i].F); ok && start {
			in.Dealt[kind]++
		}
	}
	in.Never = NeverDealt(in.Requested, in.Dealt)
	return in
}

// NeverDealt are the kinds of requested with no count in dealt, in
// requested order.
func NeverDealt(requested []string, dealt map[string]int) []string {
	var out []string
	for _, k := range requested {
		if dealt[k] == 0 && k != "none" {
			out = append(out, k)
		}
	}
	return out
}
