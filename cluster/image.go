package cluster

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"text/template"
	"time"

	"github.com/moby/moby/client"
)

// imageFS holds the node image's inputs: the Dockerfile, the pom.xml that
// names the Cassandra version, the entrypoint, nodetool wrapper, JVM options,
// logback configurations and the cassandra.yaml template.
//
//go:embed image
var imageFS embed.FS

// The Debian root filesystem of the node image (the suite and Java are the
// Version's). Changing any of these changes the image tag.
const (
	debianVariant = "minbase"
	debianMirror  = "http://deb.debian.org/debian"
)

// debianTools are what the entrypoint and the faults need beside Java.
var debianTools = []string{"libfaketime", "iptables", "iproute2", "procps", "openssh-server"}

// scripts are the image inputs that must be executable.
var scripts = []string{"entrypoint.sh", "nodetool"}

// Image repositories of what the build creates.
const (
	nodeImageRepo = "lockcheck-node"
	baseImageRepo = "lockcheck-base"
)

// inputsHash is the hex SHA-256 of everything the image is built from: the
// root filesystem's spec and every file of fsys (names and contents, in
// name order).
func inputsHash(fsys fs.FS, spec string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "rootfs %q\n", spec)
	var names []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			names = append(names, p)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	slices.Sort(names)
	for _, n := range names {
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "file %q %d\n", n, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// NodeImageRef is the tag of lockcheck's own node image of a Cassandra
// version for the inputs in this build of the package, e.g.
// "lockcheck-node:5.0-3f2a9c01d4e5".
func NodeImageRef(v Version) string {
	sub, err := fs.Sub(imageFS, "image")
	if err != nil {
		panic(err) // embedded at build time
	}
	h, err := inputsHash(sub, v.rootfsSpec()+"\ncassandra-all "+v.Cassandra)
	if err != nil {
		panic(err)
	}
	return nodeImageRepo + ":" + v.Name + "-" + h[:12]
}

// BaseImageRef is the tag of the imported Debian root filesystem a
// version's node image is built on (it has no Cassandra: starting a node
// from it fails with ErrBadImage).
func BaseImageRef(v Version) string {
	s := sha256.Sum256([]byte(v.rootfsSpec()))
	return baseImageRepo + ":" + hex.EncodeToString(s[:])[:12]
}

// defaultCacheDir is $XDG_CACHE_HOME/lockcheck, else ~/.cache/lockcheck.
func defaultCacheDir() (string, error) {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "lockcheck"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cache directory: %w", err)
	}
	return filepath.Join(home, ".cache", "lockcheck"), nil
}

// BuildImage builds lockcheck's node image unless an image of the same
// inputs exists, and returns its tag. Start calls it when no WithImage is
// given; `lockcheck cluster up` and the image benchmark call it directly.
func BuildImage(ctx context.Context, opts ...Option) (string, error) {
	c := defaultConfig()
	for _, o := range opts {
		o(&c)
	}
	if err := c.validate(); err != nil {
		return "", err
	}
	d, err := newDocker(ctx)
	if err != nil {
		return "", err
	}
	defer d.Close()
	return ensureNodeImage(ctx, d, &c)
}

// ensureNodeImage returns the node image to run: the user's (which must
// exist locally: lockcheck never pulls) or lockcheck's own, built when
// missing.
func ensureNodeImage(ctx context.Context, d *docker, c *config) (string, error) {
	if c.image != "" {
		if _, err := d.ImageInspect(ctx, c.image); err != nil {
			if isNotFound(err) {
				return "", fmt.Errorf("%w: %q is not a local image (lockcheck never pulls; build or load it first)", ErrBadImage, c.image)
			}
			return "", fmt.Errorf("%w: %q: %w", ErrBadImage, c.image, err)
		}
		return c.image, nil
	}
	ref := NodeImageRef(c.release())
	if _, err := d.ImageInspect(ctx, ref); err == nil {
		return ref, nil
	}
	dir := c.cacheDir
	if dir == "" {
		var err error
		if dir, err = defaultCacheDir(); err != nil {
			return "", err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("cache directory: %w", err)
	}
	// Two processes starting clusters at once build the image once: the
	// second waits for the first, then finds the image.
	unlock, err := lockFile(ctx, filepath.Join(dir, "build.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := d.ImageInspect(ctx, ref); err == nil {
		return ref, nil
	}
	log := c.logger
	start := time.Now()
	log.Info("building the node image (first run: a few minutes)", "image", ref, "cassandra", c.release().Cassandra)
	work, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", fmt.Errorf("build directory: %w", err)
	}
	defer os.RemoveAll(work)
	if err := os.CopyFS(work, mustSub(imageFS, "image")); err != nil {
		return "", fmt.Errorf("build context: %w", err)
	}
	for _, script := range scripts {
		if err := os.Chmod(filepath.Join(work, script), 0o755); err != nil {
			return "", fmt.Errorf("build context: %w", err)
		}
	}
	if err := renderPOM(work, c.release()); err != nil {
		return "", err
	}
	// The base image (debootstrap, one to three minutes from nothing on 2
	// cores) and the Cassandra jars (Maven, 30-60 s into an empty ~/.m2)
	// need nothing of each other: they run side by side, and the first to
	// fail stops the other.
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu    sync.Mutex
		first error // the cause, not the other's cancellation
	)
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
		cancel()
	}
	jars := make(chan struct{})
	go func() {
		defer close(jars)
		if err := cachedLib(bctx, dir, work, log); err != nil {
			fail(err)
		}
	}()
	base, err := ensureBaseImage(bctx, d, dir, c.release(), log)
	if err != nil {
		fail(err)
	}
	<-jars
	if first != nil {
		return "", first
	}
	if err := d.build(ctx, work, base, ref, log); err != nil {
		return "", err
	}
	log.Info("node image built", "image", ref, "took", time.Since(start).Round(time.Second))
	return ref, nil
}

func mustSub(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err)
	}
	return sub
}

// ensureBaseImage imports the Debian root filesystem as an image, running
// debootstrap when its tarball is not in the cache yet.
func ensureBaseImage(ctx context.Context, d *docker, cacheDir string, v Version, log *slog.Logger) (string, error) {
	ref := BaseImageRef(v)
	if _, err := d.ImageInspect(ctx, ref); err == nil {
		return ref, nil
	}
	tarball := filepath.Join(cacheDir, "rootfs-"+strings.TrimPrefix(ref, baseImageRepo+":")+".tar")
	if _, err := os.Stat(tarball); err != nil {
		if err := debootstrap(ctx, cacheDir, tarball, v, log); err != nil {
			return "", err
		}
	}
	log.Info("importing the root filesystem", "tarball", tarball, "image", ref)
	start := time.Now()
	f, err := os.Open(tarball)
	if err != nil {
		return "", fmt.Errorf("import root filesystem: %w", err)
	}
	defer f.Close()
	rc, err := d.ImageImport(ctx, client.ImageImportSource{Source: f, SourceName: "-"}, ref, client.ImageImportOptions{})
	if err != nil {
		return "", fmt.Errorf("import root filesystem: %w", err)
	}
	defer rc.Close()
	if err := readJSONMessages(rc, log); err != nil {
		return "", fmt.Errorf("import root filesystem: %w", err)
	}
	log.Info("root filesystem imported", "image", ref, "took", time.Since(start).Round(100*time.Millisecond))
	return ref, nil
}

// debootstrap makes the root filesystem and stores it as a tarball in the
// cache, so that a lost image is re-imported in seconds.
func debootstrap(ctx context.Context, cacheDir, tarball string, v Version, log *slog.Logger) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: building the node image runs debootstrap, which needs root (run as root, or pass an image of your own with --image)", ErrMissingTool)
	}
	for _, tool := range []string{"debootstrap", "tar"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%w: %s is not installed (run `make setup` as root, or apt-get install %s)", ErrMissingTool, tool, tool)
		}
	}
	root, err := os.MkdirTemp(cacheDir, "rootfs-")
	if err != nil {
		return fmt.Errorf("debootstrap: %w", err)
	}
	defer os.RemoveAll(root)
	log.Info("debootstrap: making the Debian root filesystem (about a minute)", "dir", root, "suite", v.Suite, "java", v.JRE)
	start := time.Now()
	args := []string{"--variant=" + debianVariant, "--include=" + strings.Join(v.debianPackages(), ","), v.Suite, root, debianMirror}
	if err := run(ctx, "debootstrap", args...); err != nil {
		return fmt.Errorf("debootstrap: %w", err)
	}
	// apt's caches are of no use in the image.
	for _, g := range []string{"var/cache/apt/archives/*.deb", "var/lib/apt/lists/*"} {
		matches, _ := filepath.Glob(filepath.Join(root, g))
		for _, m := range matches {
			os.RemoveAll(m)
		}
	}
	tmp := tarball + ".tmp"
	if err := run(ctx, "tar", "-C", root, "--numeric-owner", "-cf", tmp, "."); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("tar root filesystem: %w", err)
	}
	log.Info("debootstrap: done", "took", time.Since(start).Round(100*time.Millisecond))
	return os.Rename(tmp, tarball)
}

// renderPOM writes dir/pom.xml for the version from the copied template.
func renderPOM(dir string, v Version) error {
	tmpl := filepath.Join(dir, "pom.xml.tmpl")
	t, err := template.New("pom.xml.tmpl").Option("missingkey=error").ParseFiles(tmpl)
	if err != nil {
		return fmt.Errorf("pom.xml: %w", err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, v); err != nil {
		return fmt.Errorf("pom.xml: %w", err)
	}
	if err := os.Remove(tmpl); err != nil {
		return fmt.Errorf("pom.xml: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, "pom.xml"), b.Bytes(), 0o644)
}

// jarsDir is the cache's copy of the jars Maven resolved for a rendered
// POM: "jars-" and 12 hex digits of the POM's SHA-256 (what Maven was
// asked is what names the answer).
func jarsDir(pom []byte) string {
	s := sha256.Sum256(pom)
	return "jars-" + hex.EncodeToString(s[:])[:12]
}

// cachedLib fills work/lib with the jars of work/pom.xml: from the cache
// when an earlier build, or scripts/image-inputs.sh while Go built the
// CLI, resolved them, else by Maven, keeping a copy in the cache (hard
// links: the build directory is in the cache). Resolved once, a release's
// jars serve every image built on them (a changed entrypoint rebuilds the
// image, not the jars).
func cachedLib(ctx context.Context, cacheDir, work string, log *slog.Logger) error {
	pom, err := os.ReadFile(filepath.Join(work, "pom.xml"))
	if err != nil {
		return fmt.Errorf("pom.xml: %w", err)
	}
	cached := filepath.Join(cacheDir, jarsDir(pom))
	lib := filepath.Join(work, "lib")
	if _, err := os.Stat(cached); err == nil {
		if err := linkDir(cached, lib); err != nil {
			return fmt.Errorf("jars from the cache: %w", err)
		}
		log.Info("maven: the Cassandra server jars from the cache", "dir", cached)
		return nil
	}
	if err := mavenLib(ctx, work, log); err != nil {
		return err
	}
	// A copy that fails costs the next build its head start, not this one.
	tmp := cached + ".tmp"
	os.RemoveAll(tmp)
	if err := linkDir(lib, tmp); err != nil || os.Rename(tmp, cached) != nil {
		os.RemoveAll(tmp)
	}
	return nil
}

// linkDir makes dst with the regular files of src, hard-linked where it
// can, copied where it cannot.
func linkDir(src, dst string) error {
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		from, to := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		if os.Link(from, to) == nil {
			continue
		}
		if err := copyFile(from, to); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// mavenLib resolves cassandra-all and its runtime dependencies into dir/lib.
func mavenLib(ctx context.Context, dir string, log *slog.Logger) error {
	if _, err := exec.LookPath("mvn"); err != nil {
		return fmt.Errorf("%w: mvn (Maven) is not installed (run `make setup` as root, or apt-get install maven)", ErrMissingTool)
	}
	log.Info("maven: resolving the Cassandra server jars", "pom", filepath.Join(dir, "pom.xml"))
	start := time.Now()
	err := run(ctx, "mvn", "-B", "-q", "-f", filepath.Join(dir, "pom.xml"),
		"dependency:copy-dependencies", "-DincludeScope=runtime", "-DoutputDirectory="+filepath.Join(dir, "lib"))
	if err != nil {
		return fmt.Errorf("maven: %w", err)
	}
	jars, _ := filepath.Glob(filepath.Join(dir, "lib", "cassandra-all-*.jar"))
	if len(jars) == 0 {
		return errors.New("maven: no cassandra-all jar in lib/")
	}
	all, _ := filepath.Glob(filepath.Join(dir, "lib", "*.jar"))
	log.Info("maven: done", "jars", len(all), "took", time.Since(start).Round(100*time.Millisecond))
	return nil
}

// run runs a command, returning its output's tail in the error when it fails.
func run(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	var out tailBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(out.String()))
	}
	return nil
}

// tailBuffer keeps the last 4 KiB written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}
func (t *tailBuffer) String() string { return string(t.b) }

// build runs `docker build` on dir with BASE set to base.
func (d *docker) build(ctx context.Context, dir, base, ref string, log *slog.Logger) error {
	var buf bytes.Buffer
	if err := tarDir(&buf, dir); err != nil {
		return fmt.Errorf("build context: %w", err)
	}
	log.Info("docker build", "image", ref, "context_mb", buf.Len()>>20)
	res, err := d.ImageBuild(ctx, &buf, client.ImageBuildOptions{
		Tags:        []string{ref},
		Remove:      true,
		ForceRemove: true,
		BuildArgs:   map[string]*string{"BASE": &base},
		Labels:      map[string]string{labelImage: ref},
	})
	if err != nil {
		return fmt.Errorf("docker build: %w", err)
	}
	defer res.Body.Close()
	if err := readJSONMessages(res.Body, log); err != nil {
		return fmt.Errorf("docker build: %w", err)
	}
	if _, err := d.ImageInspect(ctx, ref); err != nil {
		return fmt.Errorf("docker build: image missing afterwards: %w", err)
	}
	return nil
}

// tarDir writes dir as a tar stream (the docker build context).
func tarDir(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		info, err := de.Info()
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if de.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if de.Type().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(tw, f)
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// readJSONMessages drains a docker build/import progress stream, logging its
// lines at debug level and returning the error it reports.
func readJSONMessages(r io.Reader, log *slog.Logger) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m struct {
			Stream      string `json:"stream"`
			Status      string `json:"status"`
			Error       string `json:"error"`
			ErrorDetail struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		if m.Error != "" || m.ErrorDetail.Message != "" {
			return errors.New(strings.TrimSpace(m.Error + " " + m.ErrorDetail.Message))
		}
		if s := strings.TrimSpace(m.Stream + m.Status); s != "" {
			log.Debug(s)
		}
	}
	return sc.Err()
}

// lockFile takes an exclusive flock on path, waiting until ctx ends.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("build lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("build lock: %w", err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for another image build: %w", ctx.Err())
		case <-time.After(time.Second):
		}
	}
}
