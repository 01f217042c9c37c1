package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/client"
)

// A helper container (runBeside) lives about a second and is removed by the
// process that started it; a process killed meanwhile (SIGKILL, an OOM kill,
// a CI time-out) leaves it behind. Each helper is labelled with its owner,
// "host/boot id/pid namespace/pid/start time": on the owner's own machine,
// boot and pid namespace that names one process, even after its pid is
// reused, so that the next leftover heal removes exactly the helpers whose
// owner is dead, never one a live `cluster status` is reading.
const labelOwner = "io.lockcheck.helper.owner"

// strayAge is how old a helper must be to count as stray when its owner
// cannot be asked (another host, another pid namespace, no /proc, or a
// helper made before owners were labelled): no helper's command runs this
// long. It compares the engine's creation time with this host's clock.
const strayAge = 10 * time.Minute

// owner names this process for labelOwner.
var owner = sync.OnceValue(func() string {
	_, start := procStat(os.Getpid())
	return strings.Join([]string{ownerPlace(), strconv.Itoa(os.Getpid()), start}, "/")
})

// ownerPlace is where pids of this process's kind are unique: the host, its
// boot, and the pid namespace (a process in a container with the host's
// name has pids of its own). It does not change while the process runs.
var ownerPlace = sync.OnceValue(func() string {
	host, _ := os.Hostname()
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	ns, _ := os.Readlink("/proc/self/ns/pid")
	return strings.Join([]string{host, strings.TrimSpace(string(boot)), ns}, "/")
})

// procStat reads the state and the start time in clock ticks since boot
// (fields 3 and 22 of /proc/pid/stat) of process pid; empty where it cannot
// be read.
func procStat(pid int) (state, start string) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", ""
	}
	// The command name (field 2) may hold spaces and parentheses; the
	// fields after its last ')' are plain.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return "", ""
	}
	return f[0], f[19]
}

// ownerAlive says whether the process a helper's owner label names still
// runs; known is false when this process cannot tell (a label from another
// place, or a place this process cannot read whole).
func ownerAlive(label string) (alive, known bool) {
	parts := strings.Split(label, "/")
	if len(parts) != 5 || slices.Contains(parts, "") || strings.Join(parts[:3], "/") != ownerPlace() {
		return false, false
	}
	pid, err := strconv.Atoi(parts[3])
	if err != nil {
		return false, false
	}
	// A killed owner not yet reaped is a zombie: dead, its stat still there.
	state, start := procStat(pid)
	return start == parts[4] && state != "Z" && state != "X", true
}

// RemoveStrayHelpers removes the helper containers of the cluster whose
// owner is gone (or, when that cannot be told, older than strayAge) and
// returns their names. The leftover heal calls it with the cluster held,
// before the nodes: a helper left running could change a node's rules
// after the heal.
func (c *Cluster) RemoveStrayHelpers(ctx context.Context) ([]string, error) {
	cs, err := c.d.containers(ctx, c.cfg.name)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, s := range cs {
		if s.Labels[labelHelper] == "" {
			continue
		}
		alive, known := ownerAlive(s.Labels[labelOwner])
		if alive || !known && time.Since(time.Unix(s.Created, 0)) < strayAge {
			continue
		}
		name := strings.TrimPrefix(firstName(s.Names), "/")
		// Another heal (of another host's process) may be removing it too.
		if _, err := c.d.ContainerRemove(ctx, s.ID, client.ContainerRemoveOptions{Force: true}); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("remove helper %s: %w", name, err))
			continue
		}
		removed = append(removed, name)
	}
	if len(removed) > 0 {
		c.log.Warn("removed helper containers a killed process left", "containers", removed)
	}
	return removed, errors.Join(errs...)
}

func firstName(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return names[0]
}
