package runner

import (
	"context"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/nemesis"
)

func TestExternalValidate(t *testing.T) {
	good := External{Hosts: []string{"10.0.0.1", "db2"}, Keyspace: "ks"}
	for _, tc := range []struct {
		name string
		mod  func(*External)
		want string
	}{
		{"good", func(*External) {}, ""},
		{"no hosts", func(x *External) { x.Hosts = nil }, "no host"},
		{"empty host", func(x *External) { x.Hosts = []string{"a", ""} }, "not a host"},
		{"keyspace injection", func(x *External) { x.Keyspace = "ks; DROP KEYSPACE x" }, "--keyspace"},
		{"port", func(x *External) { x.Port = 70000 }, "--port"},
		{"dc", func(x *External) { x.DC = "dc1'}" }, "--dc"},
	} {
		x := good
		tc.mod(&x)
		err := x.Validate()
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}

// Node faults without node access are refused before any connection.
func TestOpenExternalRefusesNodeFaultsWithoutSSH(t *testing.T) {
	x := External{Hosts: []string{"192.0.2.1"}, Keyspace: "ks"}
	_, err := OpenExternal(context.Background(), x, []string{nemesis.ClientPause, nemesis.Kill})
	if err == nil || !strings.Contains(err.Error(), "--nemesis kill: node faults on --hosts need node access") {
		t.Errorf("got %v", err)
	}
}
