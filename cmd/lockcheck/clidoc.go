package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/lockcheck/lockcheck/spec"
)

// flagSets are every subcommand's flags with its usage: the reference
// docs/cli.md is rendered from them (TestCLIReference), so that the page
// says what the flags are.
var flagSets = []struct {
	name, usage string
	flags       func() *flag.FlagSet
}{
	{"run", runUsage, func() *flag.FlagSet { fs, _ := newRunFlags(); return fs }},
	{"replay", replayUsage, func() *flag.FlagSet { fs, _ := newReplayFlags(); return fs }},
	{"shrink", shrinkUsage, func() *flag.FlagSet { fs, _ := newShrinkFlags(); return fs }},
	{"check", checkUsage, func() *flag.FlagSet { fs, _ := newCheckFlags(); return fs }},
	{"report", reportUsage, func() *flag.FlagSet { fs, _ := newReportFlags(); return fs }},
	{"serve", "usage: lockcheck serve [--listen 127.0.0.1:8080] [--store DIR]", func() *flag.FlagSet { fs, _ := newServeFlags(); return fs }},
	{"cluster up", "usage: lockcheck cluster up [flags]", func() *flag.FlagSet { fs, _ := newUpFlags(); return fs }},
	{"cluster status", "usage: lockcheck cluster status [--name lockcheck]", func() *flag.FlagSet { fs, _ := newNameFlags("status"); return fs }},
	{"cluster heal", "usage: lockcheck cluster heal [--name lockcheck] [--force] [--no-wait]", func() *flag.FlagSet { fs, _, _, _ := newHealFlags(); return fs }},
	{"cluster down", "usage: lockcheck cluster down [--name lockcheck] [--no-wait]", func() *flag.FlagSet { fs, _, _ := takeFlags("down"); return fs }},
	{"cluster image", "usage: lockcheck cluster image", func() *flag.FlagSet { fs, _ := newImageFlags(); return fs }},
	{"matrix", matrixUsage, func() *flag.FlagSet { fs, _ := newMatrixFlags(); return fs }},
	{"lockd", "usage: lockcheck lockd [--listen ADDR] [--hosts H1,H2 [--rf N]] [--keyspace KS] [--cluster NAME] [--lock lease-fenced|lease]", func() *flag.FlagSet { fs, _ := newLockdFlags(); return fs }},
}

// writeCLIReference renders docs/cli.md: a section per subcommand with its
// summary, usage and a table of its flags.
func writeCLIReference(w io.Writer) {
	fmt.Fprintln(w, "<!-- Generated from the flag sets by TestCLIReference: do not edit; regenerate with `go test ./cmd/lockcheck -run TestCLIReference -update`. -->")
	fmt.Fprintln(w, "# lockcheck command line")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "`lockcheck COMMAND [flags]`. Flags take one dash or two (`-time 20s`, `--time=20s`). Exit status of every command: 0 valid (or done), 1 invalid, 2 bad input or an error, 3 unknown.")
	for _, c := range flagSets {
		fmt.Fprintf(w, "\n## lockcheck %s\n\n", c.name)
		if cmd, ok := commands[c.name]; ok {
			fmt.Fprintf(w, "%s.\n\n", upperFirst(cmd.summary))
		}
		fmt.Fprintf(w, "```\n%s\n```\n", c.usage)
		var rows []string
		c.flags().VisitAll(func(f *flag.Flag) {
			name, usage := flag.UnquoteUsage(f)
			arg := "--" + f.Name
			if name != "" {
				arg += " " + name
			}
			def := f.DefValue
			switch def {
			case "", "0", "false", "0s":
				def = ""
			default:
				def = "`" + def + "`"
			}
			rows = append(rows, fmt.Sprintf("| `%s` | %s | %s |", arg, def, strings.ReplaceAll(usage, "|", `\|`)))
		})
		if len(rows) == 0 {
			fmt.Fprintln(w, "\nNo flags.")
			continue
		}
		fmt.Fprintln(w, "\n| flag | default | meaning |\n| --- | --- | --- |")
		fmt.Fprintln(w, strings.Join(rows, "\n"))
		if c.name == "run" {
			var settings []string
			for _, f := range spec.Fields {
				if !f.NoFlag {
					settings = append(settings, "`--"+f.Flag+"`")
				}
			}
			fmt.Fprintf(w, "\nThe run's settings, %s, are its Spec (package spec: their names, defaults, help and checks are its table): the history's meta line records them and `replay` and `shrink` run them again.\n",
				strings.Join(settings, ", "))
		}
	}
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
