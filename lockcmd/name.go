package lockcmd

import (
	"path/filepath"
	"strings"
)

// Name is the name a plug-in's runs are stored under when the user gives
// none (`run --name`): the base name of the command's program, without its
// extension, as lower-case words joined by dashes. A program called run,
// main or start (the plugins/<name>/run convention) is named by its
// directory. A command it cannot name (no program, no letter) is "plugin".
func Name(command string) string {
	var prog string
	for f := range strings.FieldsSeq(command) {
		if strings.Contains(f, "=") && !strings.ContainsAny(f, "/") {
			continue // VAR=value before the program
		}
		if f == "exec" || f == "env" {
			continue
		}
		prog = strings.Trim(f, `'"`)
		break
	}
	if prog == "" {
		return "plugin"
	}
	base := strings.TrimSuffix(filepath.Base(prog), filepath.Ext(prog))
	switch base {
	case "run", "main", "start", "plugin":
		if dir := filepath.Base(filepath.Dir(prog)); dir != "." && dir != "/" {
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
