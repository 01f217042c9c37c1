//go:build jepsen

// Package scripts holds the test of the machine set-up script.
package scripts

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/cluster"
)

// TestSetupInstallsEngineBesideClient runs scripts/setup.sh as a newcomer
// would, on a clean Debian bookworm (the node image's base) that holds only a
// docker *client* and Go: the machine on which setup.sh once took the client
// for an engine and failed. `setup.sh run` must install Docker Engine and
// start it, and install nothing only the tests need; `setup.sh test` the
// rest; a second run installs nothing.
func TestSetupInstallsEngineBesideClient(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	v, err := cluster.LookupVersion(cluster.DefaultVersion) // bookworm
	if err != nil {
		t.Fatal(err)
	}
	base := cluster.BaseImageRef(v)
	if _, err := docker(ctx, "image", "inspect", base); err != nil {
		t.Fatalf("base image %s missing (lockcheck cluster up builds it): %v", base, err)
	}
	client, err := exec.LookPath("docker")
	if err != nil {
		t.Fatal(err)
	}
	client, _ = filepath.EvalSymlinks(client)
	goroot := strings.TrimSpace(must(t, exec.CommandContext(ctx, "go", "env", "GOROOT").Output))
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}

	name := fmt.Sprintf("lockcheck-setuptest-%d", os.Getpid())
	label := "io.lockcheck.cluster=setuptest"
	if _, err := docker(ctx, "network", "create", "--label", label, name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		docker(cctx, "rm", "-f", "-v", name)
		docker(cctx, "network", "rm", name)
	})
	// dockerd in a container needs the capabilities of a privileged one
	// (--privileged itself asks for CAP_SYS_RESOURCE, which sandboxes such
	// as the one lockcheck was built in withhold), no seccomp or AppArmor
	// profile, and /var/lib/docker on a volume (overlay2 does not stack on
	// the container's own overlay).
	if _, err := docker(ctx, "run", "-d", "--name", name, "--label", label, "--network", name,
		"--cap-add", "ALL", "--cap-drop", "SYS_RESOURCE", "--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
		"-v", "/var/lib/docker", "-v", goroot+":/usr/local/go:ro", "-v", repo+":/src:ro",
		"-e", "PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		base, "sleep", "infinity"); err != nil {
		t.Fatal(err)
	}
	if _, err := docker(ctx, "cp", client, name+":/usr/local/bin/docker"); err != nil {
		t.Fatal(err)
	}
	// The machine as the newcomer had it: a client that answers, no engine.
	if _, err := docker(ctx, "exec", name, "docker", "--version"); err != nil {
		t.Fatalf("the docker client does not run in the container: %v", err)
	}
	if out, err := docker(ctx, "exec", name, "docker", "info"); err == nil {
		t.Fatalf("an engine answers before set-up; the test machine is not the newcomer's:\n%s", out)
	}
	for _, tool := range []string{"dockerd", "debootstrap", "mvn", "chromium"} {
		if _, err := docker(ctx, "exec", name, "sh", "-c", "command -v "+tool); err == nil {
			t.Fatalf("%s already in the clean container", tool)
		}
	}

	// make run installs debootstrap alone first, so that the node image's
	// root filesystem is made while the rest installs: nothing else.
	start := time.Now()
	out, err := docker(ctx, "exec", name, "/src/scripts/setup.sh", "rootfs")
	t.Logf("setup.sh rootfs took %v:\n%s", time.Since(start).Round(time.Second), out)
	if err != nil {
		t.Fatalf("setup.sh rootfs failed: %v", err)
	}
	if _, err := docker(ctx, "exec", name, "sh", "-c", "debootstrap --version"); err != nil {
		t.Errorf("after setup.sh rootfs, debootstrap does not run: %v", err)
	}
	for _, tool := range []string{"dockerd", "mvn"} {
		if _, err := docker(ctx, "exec", name, "sh", "-c", "command -v "+tool); err == nil {
			t.Errorf("setup.sh rootfs installed %s, which the rest of the run set brings", tool)
		}
	}

	// make run's set: the engine and the node image's tools, no browser
	// and no plug-in toolchains.
	start = time.Now()
	out, err = docker(ctx, "exec", name, "/src/scripts/setup.sh", "run")
	t.Logf("setup.sh run took %v:\n%s", time.Since(start).Round(time.Second), out)
	if err != nil {
		t.Fatalf("setup.sh run failed: %v", err)
	}
	if !strings.Contains(out, "installing") || !strings.Contains(out, "docker.io") {
		t.Errorf("setup.sh run did not say it installs docker.io")
	}
	if strings.Contains(out, "debootstrap maven") || strings.Contains(out, "installing debootstrap") {
		t.Errorf("setup.sh run installed debootstrap again:\n%s", out)
	}
	if info, err := docker(ctx, "exec", name, "docker", "info", "--format", "{{.ServerVersion}}"); err != nil {
		dlog, _ := docker(ctx, "exec", name, "tail", "-20", "/var/log/dockerd.log")
		t.Fatalf("no engine answers after setup.sh run: %v\n%s\ndockerd.log:\n%s", err, info, dlog)
	} else {
		t.Logf("engine %s", strings.TrimSpace(info))
	}
	runProbes := []string{"dockerd --version", "debootstrap --version", "mvn -v"}
	testProbes := []string{"chromium --version", "javac -version", "python3 -c 'import venv, ensurepip'",
		"ls /usr/lib/*/faketime/libfaketimeMT.so.1"}
	for _, probe := range runProbes {
		if _, err := docker(ctx, "exec", name, "sh", "-c", probe); err != nil {
			t.Errorf("after setup.sh run, %q fails: %v", probe, err)
		}
	}
	if _, err := docker(ctx, "exec", name, "sh", "-c", "command -v chromium"); err == nil {
		t.Errorf("setup.sh run installed chromium, which only the tests need")
	}

	// make test's set adds the rest.
	start = time.Now()
	out, err = docker(ctx, "exec", name, "/src/scripts/setup.sh", "test")
	t.Logf("setup.sh test after run took %v:\n%s", time.Since(start).Round(time.Second), out)
	if err != nil {
		t.Fatalf("setup.sh test failed: %v", err)
	}
	if strings.Contains(out, "docker.io") {
		t.Errorf("setup.sh test installed docker.io again:\n%s", out)
	}
	for _, probe := range append(runProbes, testProbes...) {
		if _, err := docker(ctx, "exec", name, "sh", "-c", probe); err != nil {
			t.Errorf("after setup.sh test, %q fails: %v", probe, err)
		}
	}

	// Idempotent: a machine that has everything is left alone.
	out, err = docker(ctx, "exec", name, "/src/scripts/setup.sh")
	if err != nil {
		t.Fatalf("second setup.sh failed: %v\n%s", err, out)
	}
	if strings.Contains(out, "installing") || strings.Contains(out, "starting") {
		t.Errorf("second setup.sh installed or started something:\n%s", out)
	}
}

func docker(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("docker %s: %w: %s", strings.Join(args[:min(len(args), 3)], " "), err, strings.TrimSpace(lastLines(string(out), 5)))
	}
	return string(out), nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func must(t *testing.T, f func() ([]byte, error)) string {
	t.Helper()
	b, err := f()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
