package cluster

import (
	"fmt"
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
func renderImageInputs(v Version) []byte {
	base := BaseImageRef(v)
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
	return []byte(b.String())
}

func TestImageInputsFile(t *testing.T) {
	v, err := LookupVersion(DefaultVersion)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("..", "scripts", "image-inputs.env"), renderImageInputs(v),
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
	if sub := strings.ReplaceAll(string(tmpl), "{{.Cassandra}}", v.Cassandra); sub != string(got) {
		t.Errorf("the POM template has more than the {{.Cassandra}} placeholder that scripts/image-inputs.sh substitutes:\n%s", got)
	}
}
