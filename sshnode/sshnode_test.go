package sshnode

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/netshape"
)

// Quoting is what keeps an argument one word on the host: run through a
// real sh, every argument comes back as it went in.
func TestQuoteRoundTrip(t *testing.T) {
	args := []string{"plain", "with space", "it's", `a"b`, "$HOME", "`id`", "[o]rg.x", "", "a\nb", `\`}
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = quote(a)
	}
	out, err := exec.Command("sh", "-c", `for a in `+strings.Join(q, " ")+`; do printf '%s\0' "$a"; done`).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if strings.Join(got, "|") != strings.Join(args, "|") {
		t.Errorf("round trip: got %q, want %q", got, args)
	}
}

func TestFaketimeOf(t *testing.T) {
	for _, tc := range []struct {
		name, environ, want string
	}{
		{"preloaded", "PATH=/bin\nLD_PRELOAD=/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1\nFAKETIME_TIMESTAMP_FILE=/etc/lockcheck/faketime\n", "/etc/lockcheck/faketime"},
		{"file but no preload", "FAKETIME_TIMESTAMP_FILE=/etc/f\n", ""},
		{"another preload", "LD_PRELOAD=/usr/lib/libjemalloc.so\nFAKETIME_TIMESTAMP_FILE=/etc/f\n", ""},
		{"none", "PATH=/bin\n", ""},
	} {
		if got := faketimeOf(tc.environ); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestOffsetRoundTrip(t *testing.T) {
	for _, d := range []time.Duration{0, 1500 * time.Millisecond, -4720 * time.Millisecond, 3 * time.Minute} {
		got, err := parseOffset(offsetLine(d) + "\n")
		if err != nil || got != d {
			t.Errorf("%v: got %v, %v", d, got, err)
		}
	}
	if _, err := parseOffset("+x"); err == nil {
		t.Error("a garbled offset parsed")
	}
}

func TestNewDialerBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no key", Config{}, "--ssh-key"},
		{"missing key", Config{KeyFile: filepath.Join(dir, "nope")}, "no such file"},
		{"public key given", Config{KeyFile: "testdata/id.pub", InsecureIgnoreHostKey: true}, "no key found"},
		{"missing known hosts", Config{KeyFile: "testdata/id", KnownHosts: filepath.Join(dir, "nope")}, "known hosts"},
	} {
		_, err := NewDialer(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	if _, err := NewDialer(Config{KeyFile: "testdata/id", InsecureIgnoreHostKey: true}); err != nil {
		t.Errorf("a good key: %v", err)
	}
}

// A host declares what its configuration and its probe give it: restart
// only with a start command, the clock only with libfaketime or clock
// steps, never power nor membership; the nemesis refuses what it lacks.
func TestCapabilities(t *testing.T) {
	// refusedOn are the kinds CheckNode refuses on a host of cfg whose
	// probe found iptables, libfaketime and shaping as given.
	refusedOn := func(cfg Config, iptables, faketime bool, shaping netshape.Probed) (refused []string, caps []nemesis.Capability) {
		n := &Node{Name: "h1", cfg: cfg, shaping: shaping}
		caps = n.static(iptables, faketime)
		if err := nemesis.CheckNode(n.Name, caps, nemesis.Kinds); err != nil {
			for _, l := range strings.Split(err.Error(), "\n") {
				for _, k := range nemesis.Kinds {
					if strings.HasPrefix(l, "nemesis: "+k+" cannot run on node h1,") {
						refused = append(refused, k)
					}
				}
			}
		}
		slices.Sort(refused)
		return slices.Compact(refused), caps // a kind lacking two capabilities has two lines
	}
	// A user's hosts, however equipped, never change the ring's
	// membership, cut their power, throttle their CPU, stall their JVM on
	// their own timer, slow their disk, swap their data directories for
	// a snapshot or switch their Paxos for good (a Docker node's kinds): what the
	// best-equipped host is refused, which a kind added for Docker nodes
	// only joins by itself.
	never, _ := refusedOn(Config{StartCmd: "x"}, true, true, netshape.Probed{Netem: true, HTB: true, NFQueue: true})
	for _, k := range []string{nemesis.Join, nemesis.Leave, nemesis.Replace, nemesis.Remove, nemesis.PowerLoss, nemesis.RackPowerLoss,
		nemesis.SlowNode, nemesis.CoordSlowNode, nemesis.GCStall, nemesis.CoordGCStall, nemesis.SlowDisk, nemesis.Restore, nemesis.PaxosUpgrade} {
		if !slices.Contains(never, k) {
			t.Errorf("the best-equipped host serves %s", k)
		}
	}
	for _, k := range []string{nemesis.Kill, nemesis.Clock, nemesis.Partition, nemesis.Loss, nemesis.Pause, nemesis.NetDelay, nemesis.NetRate} {
		if slices.Contains(never, k) {
			t.Errorf("the best-equipped host refuses %s", k)
		}
	}
	// A host whose probe found no netem nor htb cannot shape its links.
	membership := append(slices.Clone(never), nemesis.NetDelay, nemesis.NetRate, nemesis.CoordNetDelay)
	tests := []struct {
		name               string
		cfg                Config
		iptables, faketime bool
		refused            []string // kinds CheckNode refuses
		shaping            netshape.Probed
	}{
		{"bare host", Config{}, false, false, append([]string{nemesis.Kill, nemesis.Clock, nemesis.Partition, nemesis.Loss, nemesis.CoordPartition, nemesis.CoordClock, nemesis.DCPartition}, membership...), netshape.Probed{}},
		{"start command, iptables", Config{StartCmd: "systemctl start cassandra"}, true, false, append([]string{nemesis.Clock, nemesis.CoordClock}, membership...), netshape.Probed{}},
		{"libfaketime", Config{StartCmd: "x"}, true, true, membership, netshape.Probed{}},
		{"clock steps", Config{ClockStep: true}, true, false, append([]string{nemesis.Kill}, membership...), netshape.Probed{}},
		{"netem and htb", Config{StartCmd: "x"}, true, true, never, netshape.Probed{Netem: true, HTB: true}},
		{"htb without netem", Config{StartCmd: "x"}, true, true, append([]string{nemesis.NetDelay, nemesis.CoordNetDelay}, never...), netshape.Probed{HTB: true, NFQueue: true}},
	}
	for _, tt := range tests {
		refused, caps := refusedOn(tt.cfg, tt.iptables, tt.faketime, tt.shaping)
		want := slices.Compact(slices.Sorted(slices.Values(tt.refused)))
		if !slices.Equal(refused, want) {
			t.Errorf("%s (caps %v): refused %v, want %v", tt.name, caps, refused, want)
		}
		if !slices.Contains(caps, nemesis.CapSignals) {
			t.Errorf("%s: a host always signals its JVM", tt.name)
		}
	}
}
