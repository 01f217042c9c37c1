package lockcmd

import (
	"path/filepath"
	"strings"
)

// Name is the name a plug-in's runs are stored under when the user gives
// none (`run --name`): the base name of the command's program, without its
// extension, as lower-case words joined by dashes. A program called run,
// main or start (the plugins/<name>/run convention) is named by its first
// argument when that is a plain word (the lock of a plug-in that holds
// several: plugins/java-locks/run shedlock is "shedlock"), else by its
// directory. A command it cannot name (no program, no letter) is "plugin".
func Name(command string) string {
	var prog, arg string
	for f := range strings.FieldsSeq(command) {
		switch {
		case prog == "" && strings.Contains(f, "=") && !strings.ContainsAny(f, "/"):
			continue // VAR=value before the program
		case prog == "" && (f == "exec" || f == "env"):
			continue
		case prog == "":
			prog = strings.Trim(f, `'"`)
			continue
		}
		arg = strings.Trim(f, `'"`)
		break
	}
	if prog == "" {
		return "plugin"
	}
	base := strings.TrimSuffix(filepath.Base(prog), filepath.Ext(prog))
	switch base {
	case "run", "main", "start", "plugin":
		if plainWord(arg) {
			base = arg
		} else if dir := filepath.Base(filepath.Dir(prog)); dir != "." && dir != "/" {
			base = dir
		}
	}
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(base) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9' && b.Len() > 0:
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		default:
			dash = true
		}
	}
	if b.Len() == 0 {
		return "plugin"
	}
	return b.String()
}

// plainWord is an argument that names something: letters, digits, - and _,
// starting with a letter (not a flag, a path or a redirection).
func plainWord(s string) bool {
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}
