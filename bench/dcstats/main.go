// Command dcstats prints, for each stored run on two data centres, how each
// data centre's clients fared inside the dc-partition windows and outside:
// acquires granted (ok), refused (fail) and of unknown outcome (info), by
// the data centre the meta line's client-dcs places each client in. It is
// how a cut's availability is measured: with SERIAL, the side holding a
// quorum of all the replicas should go on granting, the other not.
//
// Usage: go run ./bench/dcstats RUN_DIR...   (store/<test>/<timestamp>)
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/lockcheck/lockcheck/bench/internal/perrun"
	"github.com/lockcheck/lockcheck/history"
)

func main() { perrun.Main("dcstats", summary) }

// outcomes counts acquire completions by type.
type outcomes struct{ ok, fail, unknown int }

func (o outcomes) String() string {
	return fmt.Sprintf("ok=%d fail=%d unknown=%d", o.ok, o.fail, o.unknown)
}

func summary(dir string, ops []history.Op) (string, error) {
	var meta history.Meta
	for _, op := range ops {
		if op.Process == history.NemesisProcess && op.F == history.FMeta {
			if err := json.Unmarshal(op.Value, &meta); err != nil {
				return "", fmt.Errorf("meta line: %w", err)
			}
			break
		}
	}
	dcOf, err := clientDCs(meta.Config["client-dcs"])
	if err != nil {
		return "", err
	}
	// Each cut's label: both ways, or which data centre was deaf.
	type cut struct {
		w     history.FaultWindow
		label string
	}
	var cuts []cut
	for _, w := range history.FaultWindows(ops, ops[len(ops)-1].Time) {
		if w.Kind != history.KindDCPartition {
			continue
		}
		var v history.DCPartitionStart
		if err := json.Unmarshal(w.Value, &v); err != nil {
			return "", fmt.Errorf("dc-partition at %d ns: %w", w.Start, err)
		}
		cuts = append(cuts, cut{w, cutLabel(v)})
	}
	// counts[label][dc]; label "outside" for completions in no cut.
	counts := map[string]map[string]*outcomes{}
	for _, op := range ops {
		if op.F != history.FAcquire || op.Type == history.Invoke {
			continue
		}
		client, ok := meta.ClientOf(op.Process)
		if !ok {
			continue
		}
		label := "outside"
		if i := slices.IndexFunc(cuts, func(c cut) bool { return c.w.Start <= op.Time && op.Time <= c.w.End }); i >= 0 {
			label = cuts[i].label
		}
		if counts[label] == nil {
			counts[label] = map[string]*outcomes{}
		}
		o := counts[label][dcOf[client]]
		if o == nil {
			o = &outcomes{}
			counts[label][dcOf[client]] = o
		}
		switch op.Type {
		case history.OK:
			o.ok++
		case history.Fail:
			o.fail++
		default:
			o.unknown++
		}
	}
	dcs := map[string]bool{}
	for _, dc := range dcOf {
		dcs[dc] = true
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\tcuts=%d", dir, len(cuts))
	for _, label := range slices.Sorted(maps.Keys(counts)) {
		fmt.Fprintf(&b, "\t%s:", label)
		for _, dc := range slices.Sorted(maps.Keys(dcs)) {
			fmt.Fprintf(&b, " %s %s;", dc, value(counts[label][dc]))
		}
	}
	return b.String(), nil
}

// cutLabel names a cut: "cut both ways", or "cut one way, dcX deaf" (the
// data centre whose nodes drop what the other sends).
func cutLabel(v history.DCPartitionStart) string {
	if v.Mode == "both" {
		return "cut both ways"
	}
	for dc, nodes := range v.DCs {
		if len(nodes) > 0 && len(v.Grudge[nodes[0]]) > 0 {
			return "cut one way, " + dc + " deaf"
		}
	}
	return "cut " + v.Mode
}

func value(o *outcomes) string {
	if o == nil {
		return outcomes{}.String()
	}
	return o.String()
}

// clientDCs parses the meta's client-dcs ("0=dc1 1=dc2 ...").
func clientDCs(s string) (map[int]string, error) {
	if s == "" {
		return nil, errors.New("no client-dcs in the meta line: not a run on two data centres")
	}
	out := map[int]string{}
	for _, part := range strings.Fields(s) {
		k, v, ok := strings.Cut(part, "=")
		i, err := strconv.Atoi(k)
		if !ok || err != nil || v == "" {
			return nil, fmt.Errorf("client-dcs %q: want CLIENT=DC pairs", s)
		}
		out[i] = v
	}
	return out, nil
}
