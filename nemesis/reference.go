package nemesis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"reflect"
	"strings"

	"github.com/lockcheck/lockcheck/faultcap"
)

// Reference is the fault reference (docs/faults.md), written from the
// table: each kind's scope, what it does, what it needs, its history
// values field by field, its colour. The page is generated so that it
// cannot drift from the kinds; TestFaultReference keeps the committed copy
// equal to it.
func Reference() []byte {
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("<!-- Generated from the fault kinds table (nemesis/kinds.go); do not edit: `go test ./nemesis -run TestFaultReference -update` rewrites it. -->\n")
	p("# Fault reference\n\n")
	p("`lockcheck run --nemesis` takes `none`, `all` or a comma list of the kinds below. `all` is every kind\n")
	p("whose needs every node backend can meet and that needs no pinned clients: %s.\n", codeList(All()))
	p("A node kind runs only on nodes that declare every capability it needs: one a node lacks refuses\n")
	p("the kind before the run, with one line naming the kind, the node and the capability.\n\n")
	p("Every kind `K` writes a `start-K` line when a fault takes effect and a `stop-K` line when it has been\n")
	p("undone (docs/history.md: fault lines and windows); `node` names the nodes involved, and the value is\n")
	p("the kind's own object, listed below with an example.\n\n")

	p("## Capabilities\n\n| capability | what the node can do (and how it gets it) |\n| --- | --- |\n")
	for _, c := range faultcap.All() {
		p("| `%s` | %s |\n", c, faultcap.Doc(c))
	}

	p("\n## Kinds\n\n| kind | scope | needs | in `all` | colour |\n| --- | --- | --- | --- | --- |\n")
	for _, k := range table {
		p("| [`%s`](#%s) | %s | %s | %s | `%s` |\n", k.Name, k.Name, k.Scope, needsText(k), yesNo(k.inAll()), k.Color)
	}
	for _, k := range table {
		p("\n## %s\n\n%s\n\n", k.Name, k.Doc)
		p("- scope: %s\n- needs: %s\n", k.Scope, needsText(k))
		if k.Restarts {
			p("- its stop restarts nodes: dealt last in each round of the schedule\n")
		}
		if k.Streams {
			p("- reports its first range movement's streaming done: a schedule's step can follow it (`\"after\": {\"step\": K, \"phase\": \"streamed\"}`, [history.md](history.md#fault-lines))\n")
		}
		p("- colour: `%s`\n", k.Color)
		for _, v := range []struct {
			line  string
			value any
		}{{"start-" + k.Name, k.StartValue}, {"stop-" + k.Name, k.StopValue}} {
			t := reflect.TypeOf(v.value)
			ex, err := json.Marshal(v.value)
			if err != nil {
				ex = []byte(err.Error())
			}
			// The type's package: history for the values others read, the
			// nemesis for those a kind declares in its own file.
			p("\n`%s` value (`%s.%s`), e.g. `%s`:\n\n| field | type | meaning |\n| --- | --- | --- |\n", v.line, path.Base(t.PkgPath()), t.Name(), ex)
			for i := range t.NumField() {
				f := t.Field(i)
				name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
				doc := f.Tag.Get("doc")
				if strings.Contains(opts, "omitempty") {
					doc += " (left out when empty)"
				}
				p("| `%s` | %s | %s |\n", name, jsonType(f.Type), strings.ReplaceAll(doc, "|", "\\|"))
			}
		}
	}
	return b.Bytes()
}

func needsText(k *Kind) string {
	var parts []string
	for _, c := range k.Needs {
		parts = append(parts, "`"+string(c)+"`")
	}
	if k.Pins {
		parts = append(parts, "clients pinned to two nodes or more (`--pin-clients`)")
	}
	if k.Scope == ScopeClient {
		parts = append(parts, "the workload's clients")
	}
	return strings.Join(parts, ", ")
}

func codeList(names []string) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = "`" + n + "`"
	}
	return strings.Join(parts, ", ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// jsonType names a Go type as its JSON reads.
func jsonType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "int"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "[" + jsonType(t.Elem()) + "]"
	case reflect.Map:
		return "{node: " + jsonType(t.Elem()) + "}"
	}
	return t.String()
}
