package cluster

import (
	"fmt"
	"slices"
	"strings"
)

// Version is one Cassandra release line a cluster can run: the jars Maven
// resolves, and the Debian root filesystem and Java that run them. The image
// tag hashes every field, so a new patch release is a one-line change here.
type Version struct {
	// Name is what `cluster up --version` takes: "4.0", "4.1", "5.0".
	Name string
	// Cassandra is the cassandra-all release on Maven Central.
	Cassandra string
	// Suite is the Debian release the node image is debootstrapped from;
	// JRE is its Java package. 4.0 and 4.1 run on Java 8 or 11, not 17, and
	// only bullseye among Debian's suites here has an 11.
	Suite, JRE string
	// Paxos are the paxos_variant values the release takes (4.0 has no
	// such setting: its Paxos is v1).
	Paxos []string
	// LegacyYAML: the release reads only the old cassandra.yaml names
	// (commitlog_sync_period_in_ms, ...). 4.1 reads both.
	LegacyYAML bool
	// Experimental releases are not in `all` of anything and say so when a
	// cluster starts (an alpha's behaviour is not a finding about Cassandra).
	Experimental bool
}

// versions lists every release line lockcheck builds nodes for, newest
// last; DefaultVersion names the one a cluster runs without WithVersion.
var versions = []Version{
	{Name: "4.0", Cassandra: "4.0.19", Suite: "bullseye", JRE: "openjdk-11-jre-headless", Paxos: []string{"v1"}, LegacyYAML: true},
	{Name: "4.1", Cassandra: "4.1.10", Suite: "bullseye", JRE: "openjdk-11-jre-headless", Paxos: []string{"v1", "v2"}},
	{Name: "5.0", Cassandra: "5.0.9", Suite: "bookworm", JRE: "openjdk-17-jre-headless", Paxos: []string{"v1", "v2"}},
	{Name: "6.0-alpha", Cassandra: "6.0-alpha2", Suite: "bookworm", JRE: "openjdk-17-jre-headless", Paxos: []string{"v1", "v2"}, Experimental: true},
}

// DefaultVersion is the release line of a cluster started without
// WithVersion.
const DefaultVersion = "5.0"

// Versions are the names WithVersion takes, oldest first.
func Versions() []string {
	out := make([]string, len(versions))
	for i, v := range versions {
		out[i] = v.Name
	}
	return out
}

// LookupVersion finds a release line by name ("4.1"), or by its full
// release ("4.1.10").
func LookupVersion(name string) (Version, error) {
	for _, v := range versions {
		if v.Name == name || v.Cassandra == name {
			return v, nil
		}
	}
	return Version{}, fmt.Errorf("version %q: want one of %s", name, strings.Join(Versions(), ", "))
}

// takesPaxos says whether the release has that paxos_variant.
func (v Version) takesPaxos(variant string) bool { return slices.Contains(v.Paxos, variant) }

// rootfsSpec identifies the debootstrapped root filesystem of the version's
// image: a change to it makes a new base image.
func (v Version) rootfsSpec() string {
	return fmt.Sprintf("debootstrap --variant=%s --include=%s %s %s",
		debianVariant, strings.Join(v.debianPackages(), ","), v.Suite, debianMirror)
}

func (v Version) debianPackages() []string {
	return append([]string{v.JRE}, debianTools...)
}
