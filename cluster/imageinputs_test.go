package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/internal/golden"
)

// scripts/image-inputs.sh fetches the default node image's inputs (the
// Debian root filesystem, the Cassandra jars) while Go builds the CLI, before
// any of package cluster can run: it reads what to fetch from
// scripts/image-inputs.env, rendered here from the same tables the build
// uses. A stale file only costs the head start (the build fetches what is
// missing), but this test keeps it true.
func renderImageInputs(t *testing.T, v Version) []byte {
	base := BaseImageRef(v)
	pom := renderedPOM(t, v)
	var b strings.Builder
	fmt.Fprintf(&b, "# What the default node image (Cassandra %s) is built from, for scripts/image-inputs.sh.\n", v.Cassandra)
	b.WriteString("# Rendered from package cluster (versions.go, image.go, image/): do not edit; after changing\n")
	b.WriteString("# them run `go test ./cluster -run TestImageInputsFile -update`.\n")
	fmt.Fprintf(&b, "NODE_IMAGE=%s\n", NodeImageRef(v))
	fmt.Fprintf(&b, "BASE_IMAGE=%s\n", base)
	fmt.Fprintf(&b, "TARBALL=rootfs-%s.tar\n", strings.TrimPrefix(base, baseImageRepo+":"))
	fmt.Fprintf(&b, "VARIANT=%s\n", debianVariant)
	fmt.Fprintf(&b, "PACKAGES=%s\n", strings.Join(v.debianPackages(), ","))
	fmt.Fprintf(&b, "SUITE=%s\n", v.Suite)
	fmt.Fprintf(&b, "MIRROR=%s\n", debianMirror)
	fmt.Fprintf(&b, "CASSANDRA=%s\n", v.Cassandra)
	fmt.Fprintf(&b, "JARS=%s\n", jarsDir(pom))
	return []byte(b.String())
}

func TestImageInputsFile(t *testing.T) {
	v, err := LookupVersion(DefaultVersion)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("..", "scripts", "image-inputs.env"), renderImageInputs(t, v),
		"go test ./cluster -run TestImageInputsFile -update")
}

// The script renders the POM by putting the release in for the template's
// one placeholder (sed): it must give what renderPOM gives, so that the
// jars it resolves are the ones the build asks Maven for.
func TestImageInputsPOM(t *testing.T) {
	v, err := LookupVersion(DefaultVersion)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := imageFS.ReadFile("image/pom.xml.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	got := renderedPOM(t, v)
	if sub := strings.ReplaceAll(string(tmpl), "{{.Cassandra}}", v.Cassandra); sub != string(got) {
		t.Errorf("the POM template has more than the {{.Cassandra}} placeholder that scripts/image-inputs.sh substitutes:\n%s", got)
	}
}

// renderedPOM is the POM the image build gives Maven for v.
func renderedPOM(t *testing.T, v Version) []byte {
	t.Helper()
	tmpl, err := imageFS.ReadFile("image/pom.xml.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pom.xml.tmpl"), tmpl, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := renderPOM(dir, v); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "pom.xml"))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// The jars a build resolved, or the script left, serve the next build of
// the same POM without Maven; a POM that differs names another copy.
func TestCachedLib(t *testing.T) {
	cache := t.TempDir()
	work := filepath.Join(cache, "build")
	pom := []byte("<project>one</project>")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "pom.xml"), pom, 0o644); err != nil {
		t.Fatal(err)
	}
	cached := filepath.Join(cache, jarsDir(pom))
	if err := os.MkdirAll(cached, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, j := range []string{"cassandra-all-9.9.9.jar", "guava-1.jar"} {
		if err := os.WriteFile(filepath.Join(cached, j), []byte(j), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// No mvn is run: PATH holds none.
	t.Setenv("PATH", t.TempDir())
	if err := cachedLib(context.Background(), cache, work, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	for _, j := range []string{"cassandra-all-9.9.9.jar", "guava-1.jar"} {
		if b, err := os.ReadFile(filepath.Join(work, "lib", j)); err != nil || string(b) != j {
			t.Errorf("lib/%s = %q, %v; want the cached jar", j, b, err)
		}
	}
	if jarsDir([]byte("<project>two</project>")) == jarsDir(pom) {
		t.Error("two POMs name one copy of jars")
	}
	// Another POM finds no copy and goes to Maven, which is missing here.
	if err := os.WriteFile(filepath.Join(work, "pom.xml"), []byte("<project>two</project>"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(work, "lib")); err != nil {
		t.Fatal(err)
	}
	if err := cachedLib(context.Background(), cache, work, slog.New(slog.DiscardHandler)); !errors.Is(err, ErrMissingTool) {
		t.Errorf("a POM with no cached jars and no mvn: %v, want ErrMissingTool", err)
	}
}
