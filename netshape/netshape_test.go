package netshape

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	peers := []string{"10.0.0.2"}
	for _, tt := range []struct {
		name string
		s    Shape
		want string // "" valid, else a part of the one line
	}{
		{"delay", Shape{Peers: peers, Delay: 200 * time.Millisecond, Jitter: 50 * time.Millisecond}, ""},
		{"rate", Shape{Peers: peers, RateKbit: 512}, ""},
		{"both", Shape{Peers: peers, Delay: time.Millisecond, RateKbit: 1}, ""},
		{"no peers", Shape{Delay: time.Second}, "no peers"},
		{"bad peer", Shape{Peers: []string{"n2"}, Delay: time.Second}, "not an IPv4"},
		{"negative delay", Shape{Peers: peers, Delay: -time.Second}, "negative"},
		{"negative jitter", Shape{Peers: peers, Delay: time.Second, Jitter: -1}, "negative"},
		{"jitter above delay", Shape{Peers: peers, Delay: time.Second, Jitter: 2 * time.Second}, "above the delay"},
		{"negative rate", Shape{Peers: peers, RateKbit: -1}, "positive"},
		{"nothing", Shape{Peers: peers}, "nothing to shape"},
	} {
		err := tt.s.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want one with %q", tt.name, err, tt.want)
		case err != nil && strings.Contains(err.Error(), "\n"):
			t.Errorf("%s: error of more than one line: %q", tt.name, err)
		}
	}
	if err := ValidateBounds(0, 0, 0, false); err == nil || !strings.Contains(err.Error(), "rate 0") {
		t.Errorf("a rate of zero asked for: %v", err)
	}
}

// The scripts are shell the node runs: each must parse (sh -n), and each
// mechanism appears only where the backend and the shape ask for it.
func TestScripts(t *testing.T) {
	s := Shape{Peers: []string{"10.0.0.2", "10.0.0.3"}, Delay: 200 * time.Millisecond, Jitter: 20 * time.Millisecond}
	for _, tt := range []struct {
		name          string
		s             Shape
		b             Backend
		port          int
		want, notWant []string
	}{
		{"netem delay", s, Netem, 0, []string{"netem delay 200000us 20000us", "match ip dst 10.0.0.3/32"}, []string{"NFQUEUE", "sport"}},
		{"nfqueue delay", s, NFQueue, 0, []string{"-d 10.0.0.2,10.0.0.3 -j NFQUEUE --queue-num 4243 --queue-bypass", "-delay 200ms -jitter 20ms"}, []string{"tc qdisc add", "netem"}},
		{"rate on nfqueue", Shape{Peers: s.Peers, RateKbit: 256}, NFQueue, 0, []string{"htb rate 256kbit ceil 256kbit"}, []string{"NFQUEUE", "netem"}},
		{"control port exempt", s, NFQueue, 22, []string{"--sport 22 -j RETURN"}, nil},
		{"control port exempt, tc", s, Netem, 22, []string{"match ip sport 22 0xffff flowid 4c43:1"}, nil},
	} {
		script, err := ApplyScript(tt.s, tt.b, "/opt/lockcheck/bin/lockcheck-shaper", tt.port)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		for _, w := range tt.want {
			if !strings.Contains(script, w) {
				t.Errorf("%s: script lacks %q:\n%s", tt.name, w, script)
			}
		}
		for _, w := range tt.notWant {
			if strings.Contains(script, w) {
				t.Errorf("%s: script has %q:\n%s", tt.name, w, script)
			}
		}
		shellParses(t, tt.name, script)
	}
	shellParses(t, "probe", ProbeScript)
	shellParses(t, "unshape", UnshapeScript)
	shellParses(t, "state", StateScript)
	if _, err := ApplyScript(s, NFQueue, "", 0); err == nil {
		t.Error("nfqueue delay without the shaper's path accepted")
	}
	if _, err := ApplyScript(Shape{Peers: s.Peers, Jitter: time.Second}, Netem, "", 0); err == nil {
		t.Error("a jitter above the delay accepted")
	}
}

func TestParseProbe(t *testing.T) {
	if got := ParseProbe("htb\nnfqueue\n"); got != (Probed{HTB: true, NFQueue: true}) {
		t.Errorf("ParseProbe = %+v", got)
	}
	if got := ParseProbe("netem\nhtb\n"); got != (Probed{Netem: true, HTB: true}) {
		t.Errorf("ParseProbe = %+v", got)
	}
	if got := State("tc\nshaper\n"); len(got) != 2 || got[0] != "links shaped (tc)" {
		t.Errorf("State = %q", got)
	}
	if !Found("shaped\n") || Found("") {
		t.Error("Found")
	}
}

func shellParses(t *testing.T, name, script string) {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	if out, err := exec.Command(sh, "-n", "-c", script).CombinedOutput(); err != nil {
		t.Errorf("%s: sh -n: %v: %s\n%s", name, err, out, script)
	}
}
