package cluster

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Version is one Cassandra release line a cluster can run: the jars Maven
// resolves, and the Debian root filesystem and Java that run them. The image
// tag hashes every field, so a new patch release is a one-line change here.
type Version struct {
	// Name is what `cluster up --version` takes: a release line ("4.0",
	// "4.1", "5.0"), which runs the line's latest patch release, or a
	// pinned patch release of a line ("4.1.5", from its Pinned).
	Name string
	// Cassandra is the cassandra-all release on Maven Central.
	Cassandra string
	// Pinned are earlier patch releases of the line a cluster may run in
	// place of Cassandra (`--version 4.1.5`), each checked to resolve with
	// its dependencies from Maven Central: a known bug is shown on the
	// release that has it and the one that fixed it, with the same seed
	// and schedule. A pinned release runs with every other field of its
	// line (suite, Java, variants), so only releases that share them are
	// listed. The pinned releases are in no axis of their own.
	Pinned []string
	// line is the release line a pinned release belongs to ("" for a line).
	line string
	// Suite is the Debian release the node image is debootstrapped from;
	// JRE is its Java package. 4.0 and 4.1 run on Java 8 or 11, not 17, and
	// only bullseye among Debian's suites here has an 11.
	Suite, JRE string
	// Paxos are the paxos_variant values the release takes (4.0 has no
	// such setting: its Paxos is v1).
	Paxos []string
	// Unsafe are the variants that switch off the fix of CASSANDRA-12126
	// (SERIAL reads and rejected conditional writes linearizable when a
	// round was accepted by a minority and not committed): the register
	// workload's known-unsafe controls. Each maps to the JVM flag it needs,
	// "" when paxos_variant alone sets it (4.1 and later). 4.0 has no
	// paxos_variant: its switch is a system property, which covers SERIAL
	// reads only, so its name here says so.
	Unsafe map[string]string
	// LegacyYAML: the release reads only the old cassandra.yaml names
	// (commitlog_sync_period_in_ms, ...). 4.1 reads both.
	LegacyYAML bool
	// Experimental releases are not in `all` of anything and say so when a
	// cluster starts (an alpha's behaviour is not a finding about Cassandra).
	Experimental bool
	// ResumesBootstrap: `nodetool bootstrap resume` completes a bootstrap
	// whose streaming failed on a node that stayed up, as it does on 4.0
	// and 4.1. 5.0 (CASSANDRA-17679, seen here on 5.0.9 with a source
	// killed mid-stream) refuses it twice over: nodetool itself ("'nodetool
	// bootstrap resume' is disabled.", exit 2) unless its own JVM has
	// -Dcassandra.reset_bootstrap_progress=false or it is given --force,
	// and then the node ("Discovered existing bootstrap data and
	// cassandra.reset_bootstrap_progress is not configured; aborting
	// bootstrap. Please clean up local files manually and try again", from
	// RangeStreamer) when any range had streamed in full, unless the node's
	// own JVM started with that property. A node started without it can
	// only bootstrap again from empty data, as the message says.
	ResumesBootstrap bool
	// ThrottlesEntireSSTables: the release caps entire-SSTable (zero-copy)
	// streams apart from the others (`nodetool setstreamthroughput -e`,
	// CASSANDRA-17065, 4.1). 4.0 has no such cap: its nodetool refuses -e
	// and streams whole SSTables unthrottled.
	ThrottlesEntireSSTables bool
	// Accord: the release has Accord (CEP-15), switched on by cassandra.yaml's
	// accord.enabled, with a table's transactional_mode saying which of its
	// statements Accord executes (WithAccord).
	Accord bool
}

// versions lists every release line lockcheck builds nodes for, newest
// last; DefaultVersion names the one a cluster runs without WithVersion.
var versions = []Version{
	{Name: "4.0", Cassandra: "4.0.19", Suite: "bullseye", JRE: "openjdk-11-jre-headless", Paxos: []string{"v1"}, LegacyYAML: true,
		Unsafe: map[string]string{PaxosV1UnsafeReads: "-Dcassandra.unsafe.disable-serial-reads-linearizability=true"}, ResumesBootstrap: true},
	// 4.1.5 has CASSANDRA-19617 (a stale Paxos commit re-applied after the
	// tombstone that superseded it was purged, under paxos_state_purging
	// gc_grace or repaired); 4.1.6 has its fix.
	{Name: "4.1", Cassandra: "4.1.10", Pinned: []string{"4.1.5", "4.1.6"}, Suite: "bullseye", JRE: "openjdk-11-jre-headless", Paxos: []string{"v1", "v2"}, Unsafe: unsafeVariants,
		ResumesBootstrap: true, ThrottlesEntireSSTables: true},
	{Name: "5.0", Cassandra: "5.0.9", Suite: "bookworm", JRE: "openjdk-17-jre-headless", Paxos: []string{"v1", "v2"}, Unsafe: unsafeVariants,
		ThrottlesEntireSSTables: true},
	{Name: "6.0-alpha", Cassandra: "6.0-alpha2", Suite: "bookworm", JRE: "openjdk-17-jre-headless", Paxos: []string{"v1", "v2"}, Unsafe: unsafeVariants, Experimental: true,
		ThrottlesEntireSSTables: true, Accord: true},
}

// The variants that switch off CASSANDRA-12126's fix, as Config.PaxosVariant
// names them in the 4.1, 5.0 and 6.0-alpha2 jars; PaxosV1UnsafeReads is
// lockcheck's name for 4.0's -Dcassandra.unsafe.disable-serial-reads-linearizability.
const (
	PaxosV1Unsafe      = "v1_without_linearizable_reads_or_rejected_writes"
	PaxosV2UnsafeReads = "v2_without_linearizable_reads"
	PaxosV2Unsafe      = "v2_without_linearizable_reads_or_rejected_writes"
	PaxosV1UnsafeReads = "v1_without_linearizable_reads"
)

var unsafeVariants = map[string]string{PaxosV1Unsafe: "", PaxosV2UnsafeReads: "", PaxosV2Unsafe: ""}

// DefaultVersion is the release line of a cluster started without
// WithVersion.
const DefaultVersion = "5.0"

// Versions are the release lines WithVersion takes, oldest first (each
// runs its latest patch release).
func Versions() []string {
	out := make([]string, len(versions))
	for i, v := range versions {
		out[i] = v.Name
	}
	return out
}

// PinnedVersions are the earlier patch releases WithVersion also takes,
// oldest line first.
func PinnedVersions() []string {
	var out []string
	for _, v := range versions {
		out = append(out, v.Pinned...)
	}
	return out
}

// VersionsHelp names every version WithVersion takes, for a flag's help.
func VersionsHelp() string {
	return strings.Join(Versions(), ", ") + " (the latest patch release of each), or a pinned release: " + strings.Join(PinnedVersions(), ", ")
}

// LookupVersion finds a release line by name ("4.1"), or by its latest
// release ("4.1.10"), or a pinned patch release ("4.1.5"): that line with
// the release in place of its latest.
func LookupVersion(name string) (Version, error) {
	for _, v := range versions {
		if v.Name == name || v.Cassandra == name {
			return v, nil
		}
		if slices.Contains(v.Pinned, name) {
			p := v
			p.line, p.Name, p.Cassandra, p.Pinned = v.Name, name, name, nil
			return p, nil
		}
	}
	return Version{}, fmt.Errorf("version %q: want a release line, %s (the latest patch release of each), or a pinned release, %s",
		name, strings.Join(Versions(), ", "), strings.Join(PinnedVersions(), ", "))
}

// Line is the release line of the version: its Name, or for a pinned
// release the line it belongs to ("4.1" for "4.1.5").
func (v Version) Line() string {
	if v.line != "" {
		return v.line
	}
	return v.Name
}

// takesPaxos says whether the release has that paxos_variant (or, on 4.0,
// the unsafe switch lockcheck names as one).
func (v Version) takesPaxos(variant string) bool {
	_, unsafe := v.Unsafe[variant]
	return slices.Contains(v.Paxos, variant) || unsafe
}

// PaxosVariants are every variant the release takes, the safe ones first.
func (v Version) PaxosVariants() []string {
	out := slices.Clone(v.Paxos)
	unsafe := slices.Sorted(maps.Keys(v.Unsafe))
	return append(out, unsafe...)
}

// UnsafePaxos says whether variant switches off CASSANDRA-12126's fix.
func UnsafePaxos(variant string) bool {
	for _, v := range versions {
		if _, ok := v.Unsafe[variant]; ok {
			return true
		}
	}
	return false
}

// knownPaxos says whether any release takes variant.
func knownPaxos(variant string) bool {
	for _, v := range versions {
		if v.takesPaxos(variant) {
			return true
		}
	}
	return false
}

// allPaxos are the variants of every release, safe ones first.
func allPaxos() []string {
	var out []string
	for _, v := range versions {
		for _, p := range v.PaxosVariants() {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// jvmFlag is the system property the variant needs on this release, if any.
func (v Version) jvmFlag(variant string) string { return v.Unsafe[variant] }

// rootfsSpec identifies the debootstrapped root filesystem of the version's
// image: a change to it makes a new base image.
func (v Version) rootfsSpec() string {
	return fmt.Sprintf("debootstrap --variant=%s --include=%s %s %s",
		debianVariant, strings.Join(v.debianPackages(), ","), v.Suite, debianMirror)
}

func (v Version) debianPackages() []string {
	return append([]string{v.JRE}, debianTools...)
}
