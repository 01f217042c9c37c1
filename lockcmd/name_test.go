package lockcmd

import "testing"

func TestName(t *testing.T) {
	for _, c := range []struct{ command, want string }{
		{"plugins/python-lease/run", "python-lease"},
		{"plugins/java-lease/run --verbose", "java-lease"},
		{"./shedlock.sh", "shedlock"},
		{"node /home/me/My_Lock.js", "node"},
		{"JAVA_OPTS=-Xmx64m plugins/shedlock/run", "shedlock"},
		{"exec /opt/locks/Reaper2Lease", "reaper2lease"},
		{"'/x/y/run'", "y"},
		{"plugins/java-locks/run shedlock", "shedlock"},
		{"plugins/java-locks/run Sidecar_Lease --x", "sidecar-lease"},
		{"plugins/java-locks/run ./conf", "java-locks"},
		{"plugins/x/run 2>/dev/null", "x"},
		{"./mylock shedlock", "mylock"},
		{"run", "run"},
		{"/run", "run"},
		{"  ", "plugin"},
		{"./123", "plugin"},
		{"./__", "plugin"},
	} {
		if got := Name(c.command); got != c.want {
			t.Errorf("Name(%q) = %q, want %q", c.command, got, c.want)
		}
	}
}
