package cluster

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

// Labels on everything a cluster creates. labelCluster carries the cluster's
// name: Down, Attach and the next Start find a cluster's containers and
// network by it. The other labels record the cluster's settings so that
// Attach can rebuild the handle of a cluster another process started.
const (
	labelCluster  = "io.lockcheck.cluster"
	labelNode     = "io.lockcheck.node"
	labelKeyspace = "io.lockcheck.keyspace"
	labelRF       = "io.lockcheck.rf"
	labelPaxos    = "io.lockcheck.paxos"
	labelVersion  = "io.lockcheck.version"
	labelCommit   = "io.lockcheck.commitlog-sync"
	labelHeap     = "io.lockcheck.heap"
	labelNodes    = "io.lockcheck.nodes"
	labelImage    = "io.lockcheck.image"
	labelLazyFS   = "io.lockcheck.lazyfs"
	labelDC       = "io.lockcheck.dc"
	labelDCs      = "io.lockcheck.dcs"
	labelSpares   = "io.lockcheck.spares"
	labelSpare    = "io.lockcheck.spare"
	labelSkip     = "io.lockcheck.skip-paxos-repair"
	labelPurging  = "io.lockcheck.paxos-state-purging"
	labelNoCache  = "io.lockcheck.no-paxos-cache"
	labelUpgrade  = "io.lockcheck.paxos-upgrade"
	labelAccord   = "io.lockcheck.accord"
	labelAccordSM = "io.lockcheck.accord-stop-marker"
	// labelHelper marks a short-lived container that is not a node.
	labelHelper = "io.lockcheck.helper"
)

// docker is the Docker client testcontainers-go provides (it finds the
// engine the way testcontainers does and negotiates the API version).
type docker struct {
	*client.Client
}

// quietTestcontainers stops testcontainers-go from printing its banner on
// every connection; lockcheck logs through slog.
var quietTestcontainers = sync.OnceFunc(func() { tclog.SetDefault(tclog.NewNoopLogger()) })

func newDocker(ctx context.Context) (*docker, error) {
	quietTestcontainers()
	tc, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w answers (run `make setup` as root to install and start one): %w", ErrNoDocker, err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := tc.Ping(pctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return nil, fmt.Errorf("%w answers (run `make setup` as root to install and start one): %w", ErrNoDocker, err)
	}
	return &docker{Client: tc.Client}, nil
}

func clusterFilter(name string) client.Filters {
	return make(client.Filters).Add("label", labelCluster+"="+name)
}

// containers lists the cluster's containers, running or not.
func (d *docker) containers(ctx context.Context, name string) ([]container.Summary, error) {
	res, err := d.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: clusterFilter(name)})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	return res.Items, nil
}

// networks lists the cluster's networks.
func (d *docker) networks(ctx context.Context, name string) ([]network.Summary, error) {
	res, err := d.NetworkList(ctx, client.NetworkListOptions{Filters: clusterFilter(name)})
	if err != nil {
		return nil, fmt.Errorf("list networks: %w", err)
	}
	return res.Items, nil
}

// removeAll removes every container and network labelled with the cluster's
// name: what a finished, stopped or crashed run left.
func (d *docker) removeAll(ctx context.Context, name string) error {
	var errs []error
	cs, err := d.containers(ctx, name)
	if err != nil {
		return err
	}
	for _, c := range cs {
		if _, err := d.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("remove container %s: %w", strings.Join(c.Names, ","), err))
		}
	}
	ns, err := d.networks(ctx, name)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, n := range ns {
		if _, err := d.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("remove network %s: %w", n.Name, err))
		}
	}
	return errors.Join(errs...)
}

func isNotFound(err error) bool {
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "no such")
}

// checkSubnet fails with ErrNetworkClash when subnet overlaps a Docker
// network or an address of a host interface: a clash would make the nodes
// unreachable or hijack the machine's own traffic.
func (d *docker) checkSubnet(ctx context.Context, subnet netip.Prefix) error {
	res, err := d.NetworkList(ctx, client.NetworkListOptions{})
	if err != nil {
		return fmt.Errorf("list networks: %w", err)
	}
	for _, n := range res.Items {
		for _, c := range n.IPAM.Config {
			if c.Subnet.IsValid() && c.Subnet.Overlaps(subnet) {
				return fmt.Errorf("%w: subnet %s overlaps %s of docker network %q (pick another with --subnet, or remove that network)", ErrNetworkClash, subnet, c.Subnet, n.Name)
			}
		}
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil // no interface list: Docker will still refuse a true clash
	}
	for _, ifc := range ifaces {
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			p, err := netip.ParsePrefix(ipn.String())
			if err != nil {
				continue
			}
			if p.Masked().Overlaps(subnet) {
				return fmt.Errorf("%w: subnet %s overlaps %s of host interface %s (pick another with --subnet)", ErrNetworkClash, subnet, p, ifc.Name)
			}
		}
	}
	return nil
}

// createNetwork makes the cluster's bridge network on the layout's subnet.
func (d *docker) createNetwork(ctx context.Context, netName, cluster string, l layout) (string, error) {
	res, err := d.NetworkCreate(ctx, netName, client.NetworkCreateOptions{
		Driver: "bridge",
		IPAM: &network.IPAM{
			Driver: "default",
			Config: []network.IPAMConfig{{Subnet: l.subnet, Gateway: l.gateway}},
		},
		Labels: map[string]string{labelCluster: cluster},
	})
	if err != nil {
		if strings.Contains(err.Error(), "overlap") {
			return "", fmt.Errorf("%w: subnet %s: %w", ErrNetworkClash, l.subnet, err)
		}
		return "", fmt.Errorf("create network %s: %w", netName, err)
	}
	return res.ID, nil
}

// execResult runs cmd in a container and returns its combined output and
// exit code.
func (d *docker) execResult(ctx context.Context, id string, cmd []string) (string, int, error) {
	cr, err := d.ExecCreate(ctx, id, client.ExecCreateOptions{Cmd: cmd, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return "", -1, fmt.Errorf("exec %q: %w", cmd, err)
	}
	ar, err := d.ExecAttach(ctx, cr.ID, client.ExecAttachOptions{})
	if err != nil {
		return "", -1, fmt.Errorf("exec %q: %w", cmd, err)
	}
	defer ar.Close()
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(&out, &out, ar.Reader)
		done <- err
	}()
	select {
	case err = <-done:
	case <-ctx.Done():
		ar.Close()
		<-done
		return out.String(), -1, fmt.Errorf("exec %q: %w", cmd, ctx.Err())
	}
	if err != nil {
		return out.String(), -1, fmt.Errorf("exec %q: read output: %w", cmd, err)
	}
	ins, err := d.ExecInspect(ctx, cr.ID, client.ExecInspectOptions{})
	if err != nil {
		return out.String(), -1, fmt.Errorf("exec %q: %w", cmd, err)
	}
	return out.String(), ins.ExitCode, nil
}

// runBeside runs cmd in a new container of image that shares the network
// namespace of container id (and may change its rules), waits for it and
// removes it; it returns the command's combined output and exit code. The
// helper carries the cluster's label, so that Down removes one a harness
// killed meanwhile left, its owner's, so that the next leftover heal does
// (RemoveStrayHelpers), and no node label, so that Attach does not take it
// for a node.
func (d *docker) runBeside(ctx context.Context, log *slog.Logger, cluster, id, image string, cmd []string) (string, int, error) {
	if len(cmd) == 0 {
		return "", -1, errors.New("run beside: no command")
	}
	res, err := d.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{
			Image:      image,
			Entrypoint: cmd[:1],
			Cmd:        cmd[1:],
			Labels:     map[string]string{labelCluster: cluster, labelHelper: "netns", labelOwner: owner()},
		},
		HostConfig: &container.HostConfig{
			CapAdd:      []string{"NET_ADMIN"},
			NetworkMode: container.NetworkMode("container:" + id),
		},
	})
	if err != nil {
		return "", -1, fmt.Errorf("run %q beside: %w", cmd, err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if _, err := d.ContainerRemove(rctx, res.ID, client.ContainerRemoveOptions{Force: true}); err != nil {
			// The command's answer stands; the next leftover heal or
			// Down removes the helper.
			log.Warn("helper container left", "id", res.ID[:12], "err", err)
		}
	}()
	w := d.ContainerWait(ctx, res.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	if _, err := d.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		return "", -1, fmt.Errorf("run %q beside: %w", cmd, err)
	}
	var code int
	select {
	case r := <-w.Result:
		code = int(r.StatusCode)
	case err := <-w.Error:
		return "", -1, fmt.Errorf("run %q beside: wait: %w", cmd, err)
	case <-ctx.Done():
		return "", -1, fmt.Errorf("run %q beside: %w", cmd, ctx.Err())
	}
	// Its output is the answer (`iptables -S`): one that cannot be read
	// is an error, never "no rules".
	rc, err := d.ContainerLogs(ctx, res.ID, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		return "", -1, fmt.Errorf("run %q beside: output: %w", cmd, err)
	}
	defer rc.Close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &out, io.LimitReader(rc, 4<<20)); err != nil {
		return out.String(), -1, fmt.Errorf("run %q beside: output: %w", cmd, err)
	}
	return out.String(), code, nil
}

// readFile reads one regular file out of a container, running, paused or
// stopped (Docker's archive API), at most 1 MiB of it.
func (d *docker) readFile(ctx context.Context, id, path string) ([]byte, error) {
	res, err := d.CopyFromContainer(ctx, id, client.CopyFromContainerOptions{SourcePath: path})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer res.Content.Close()
	tr := tar.NewReader(res.Content)
	h, err := tr.Next()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if h.Typeflag != tar.TypeReg {
		return nil, fmt.Errorf("read %s: not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(tr, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return b, nil
}

// file is one file copied into a container before it starts.
type file struct {
	path string
	mode int64
	body []byte
}

// copyFiles writes files into a container (created or running) as a tar
// stream unpacked at /; missing directories are created.
func (d *docker) copyFiles(ctx context.Context, id string, files []file) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	now := time.Now()
	for _, f := range files {
		p := strings.TrimPrefix(f.path, "/")
		for i := 0; i < len(p); i++ {
			if p[i] == '/' && !dirs[p[:i]] {
				dirs[p[:i]] = true
				if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: p[:i] + "/", Mode: 0o755, ModTime: now}); err != nil {
					return err
				}
			}
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: p, Mode: f.mode, Size: int64(len(f.body)), ModTime: now}); err != nil {
			return err
		}
		if _, err := tw.Write(f.body); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if _, err := d.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: "/", Content: &buf}); err != nil {
		return fmt.Errorf("copy files into container: %w", err)
	}
	return nil
}

// logsSince returns a container's output since a time (RFC 3339, as
// docker inspect gives a container's start), at most 4 MiB of it.
func (d *docker) logsSince(ctx context.Context, id, since string) string {
	rc, err := d.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Since: since})
	if err != nil {
		return ""
	}
	defer rc.Close()
	var out bytes.Buffer
	stdcopy.StdCopy(&out, &out, io.LimitReader(rc, 4<<20))
	return out.String()
}

// logsTail returns the last lines of a container's output, for errors.
func (d *docker) logsTail(ctx context.Context, id string, lines int) string {
	rc, err := d.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Tail: fmt.Sprint(lines)})
	if err != nil {
		return ""
	}
	defer rc.Close()
	var out bytes.Buffer
	stdcopy.StdCopy(&out, &out, io.LimitReader(rc, 1<<16))
	return strings.TrimSpace(out.String())
}
