package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// The node actions of the slowness faults (nemesis: slow-node, gc-stall,
// slow-disk).

// cpuPeriod is the CFS period a CPU quota is a share of; a share under
// 1 % takes a longer one, up to maxCPUPeriod, since the kernel takes no
// quota under 1 ms (cfsQuota).
const (
	cpuPeriod    = 100 * time.Millisecond
	maxCPUPeriod = time.Second
)

// cfsQuota is the CFS period and quota, in microseconds, of share of one
// core: share of a 100 ms period, or, for a share under 1 %, 1 ms of CPU per
// a period long enough (0.5 %: 1 ms every 200 ms). The node then runs in
// bursts of 1 ms that far apart, as a coordinator starved by its neighbours
// is scheduled.
func cfsQuota(share float64) (period, quota int64) {
	p := cpuPeriod
	if need := time.Duration(float64(time.Millisecond) / share); need > p {
		p = min(need, maxCPUPeriod)
	}
	return p.Microseconds(), int64(share * float64(p.Microseconds()))
}

// SetCPUQuota limits the node's processes together to share of one core
// (a CFS quota on its cgroup, as `docker update --cpu-quota` sets it);
// 0 lifts the limit. Quota and period rather than Docker's --cpus: the
// daemon takes a quota of -1 as "no limit" and ignores NanoCPUs of 0, so
// only a quota can be lifted again.
func (n *Node) SetCPUQuota(ctx context.Context, share float64) error {
	res := &container.Resources{CPUQuota: -1}
	if share > 0 {
		period, quota := cfsQuota(share)
		res = &container.Resources{CPUPeriod: period, CPUQuota: quota}
	}
	if _, err := n.c.d.ContainerUpdate(ctx, n.ContainerID, client.ContainerUpdateOptions{Resources: res}); err != nil {
		return fmt.Errorf("cpu quota %s: %w", n.Name, err)
	}
	return nil
}

// CPUQuota is the node's CPU limit as Docker holds it, a share of one core
// (0: none).
func (n *Node) CPUQuota(ctx context.Context) (float64, error) {
	ins, err := n.c.d.ContainerInspect(ctx, n.ContainerID, client.ContainerInspectOptions{})
	if err != nil {
		return 0, fmt.Errorf("inspect %s: %w", n.Name, err)
	}
	hc := ins.Container.HostConfig
	if hc == nil || hc.CPUQuota <= 0 {
		return 0, nil
	}
	period := hc.CPUPeriod
	if period <= 0 {
		period = cpuPeriod.Microseconds() // the kernel's default
	}
	return float64(hc.CPUQuota) / float64(period), nil
}

// StallJVM stops the Cassandra JVM (SIGSTOP) and returns once it is
// stopped; the node itself sends SIGCONT d later, so that the stall ends
// on time whatever becomes of the caller (a harness killed mid-stall
// leaves no JVM frozen). Its length is the node's sleep, not two docker
// execs' round trips: tens of milliseconds mean something.
func (n *Node) StallJVM(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("stall %s: %v: want a positive stall", n.Name, d)
	}
	secs := strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
	// The resume is detached from the exec's streams, or the exec would
	// wait for it.
	script := `p=$(cat ` + pidFile + `) && kill -STOP "$p" && { (sleep ` + secs + `; kill -CONT "$p") </dev/null >/dev/null 2>&1 & }`
	if _, err := n.Exec(ctx, "sh", "-c", script); err != nil {
		return fmt.Errorf("stall %s: %w", n.Name, err)
	}
	return nil
}

// lazyFSLatency is the file the lazy filesystem reads its latency from
// (lockcheck-lazyfs --latency-file): it survives a restart of the node.
const lazyFSLatency = "/run/lockcheck-lazyfs.latency"

// SetDiskLatency makes every write and fsync of the node's lazy filesystem
// wait d (0: none) and returns once the filesystem reports it in effect.
func (n *Node) SetDiskLatency(ctx context.Context, d time.Duration) error {
	if !n.c.LazyFS() {
		return fmt.Errorf("%s: no lazy filesystem", n.Name)
	}
	if _, err := n.Exec(ctx, "sh", "-c", "printf '%s\\n' "+d.String()+" > "+lazyFSLatency+".tmp && mv "+lazyFSLatency+".tmp "+lazyFSLatency); err != nil {
		return fmt.Errorf("disk latency %s: %w", n.Name, err)
	}
	// The filesystem reads the file every quarter second and reports what
	// it applies in its status.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		got, err := n.DiskLatency(ctx)
		if err == nil && got == d {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("disk latency %s: not in effect (last: %v, %v): %w", n.Name, got, err, ctx.Err())
		case <-tick.C:
		}
	}
}

// DiskLatency is the latency the node's lazy filesystem applies now, from
// its status.
func (n *Node) DiskLatency(ctx context.Context) (time.Duration, error) {
	if !n.c.LazyFS() {
		return 0, nil
	}
	out, err := n.Exec(ctx, "cat", lazyFSStatus)
	if err != nil {
		return 0, err
	}
	var st struct {
		LatencyMS float64 `json:"latency_ms"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		return 0, fmt.Errorf("%s: lazy filesystem status %q: %w", n.Name, strings.TrimSpace(out), err)
	}
	return time.Duration(st.LatencyMS * float64(time.Millisecond)), nil
}
