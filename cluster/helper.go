package cluster

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/client"
)

// A helper container (runBeside) lives about a second and is removed by the
// process that started it; a process killed meanwhile (SIGKILL, an OOM kill,
// a CI time-out) leaves it behind. Each helper is labelled with its owner,
// "host/pid/start time", so that the next leftover heal removes exactly the
// helpers whose owner is dead, never one a live `cluster status` is reading.
const labelOwner = "io.lockcheck.helper.owner"

// strayAge is how old a helper of another host's process must be to count
// as stray: its owner cannot be asked, and no helper's command runs this long.
const strayAge = 10 * time.Minute

// owner names this process for labelOwner.
var owner = sync.OnceValue(func() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), processStart(os.Getpid()))
})

// processStart is the start time of process pid in clock ticks since boot
// (field 22 of /proc/pid/stat): with the pid it names one process, even
// after the pid is reused. Empty where it cannot be read.
func processStart(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command name (field 2) may hold spaces and parentheses; the
	// fields after its last ')' are plain.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// ownerAlive says whether the process a helper's owner label names still
// runs; known is false when this host cannot tell (another host, no /proc).
func ownerAlive(label string) (alive, known bool) {
	host, _ := os.Hostname()
	parts := strings.Split(label, "/")
	if len(parts) != 3 || parts[0] != host || parts[2] == "" {
		return false, false
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil {
		return false, false
	}
	return processStart(pid) == parts[2], true
}

// RemoveStrayHelpers removes the helper containers of the cluster whose
// owner is gone (or, owned on another host, older than strayAge) and returns
// their names. The leftover heal calls it with the cluster held, before the
// nodes: a helper left running could change a node's rules after the heal.
func (c *Cluster) RemoveStrayHelpers(ctx context.Context) ([]string, error) {
	cs, err := c.d.containers(ctx, c.cfg.name)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, s := range cs {
		if s.Labels[labelHelper] == "" {
			continue
		}
		alive, known := ownerAlive(s.Labels[labelOwner])
		if alive || !known && time.Since(time.Unix(s.Created, 0)) < strayAge {
			continue
		}
		if _, err := c.d.ContainerRemove(ctx, s.ID, client.ContainerRemoveOptions{Force: true}); err != nil {
			return removed, fmt.Errorf("remove helper %s: %w", strings.TrimPrefix(firstName(s.Names), "/"), err)
		}
		removed = append(removed, strings.TrimPrefix(firstName(s.Names), "/"))
	}
	if len(removed) > 0 {
		c.log.Warn("removed helper containers a killed process left", "containers", removed)
	}
	return removed, nil
}

func firstName(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return names[0]
}
