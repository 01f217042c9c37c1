package scenario

import (
	"fmt"
	"regexp"
	"strings"
)

// Select picks rows by tier ("quick", "full" or "all") and by name pattern
// (Match; "" picks every row of the tier), in table order.
func Select(rows []Row, tier, pattern string) ([]Row, error) {
	switch tier {
	case string(Quick), string(Full), "all":
	default:
		return nil, fmt.Errorf("tier %q: want quick, full or all", tier)
	}
	m := NewMatcher(pattern)
	var out []Row
	for _, r := range rows {
		if (tier == "all" || string(r.Tier) == tier) && m(r.Name) {
			out = append(out, r)
		}
	}
	return out, nil
}

// NewMatcher makes a row-name filter of pattern: a name matches when the
// pattern, as a glob (* any run of characters, / included; ? one
// character), matches the whole name, or, as a regular expression,
// matches anywhere in it (as `go test -run` does; a pattern that is no
// regular expression, "*/client-pause", is a glob only). "" matches every
// name.
func NewMatcher(pattern string) func(name string) bool {
	if pattern == "" {
		return func(string) bool { return true }
	}
	glob := regexp.MustCompile("^" + globToRE(pattern) + "$") // every character quoted but * and ?
	re, err := regexp.Compile(pattern)
	return func(name string) bool {
		return glob.MatchString(name) || (err == nil && re.MatchString(name))
	}
}

func globToRE(g string) string {
	var b strings.Builder
	for _, c := range g {
		switch c {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	return b.String()
}

// Group is the rows that share a cluster configuration.
type Group struct {
	Cluster Cluster
	Rows    []Row
}

// Groups gathers rows by cluster configuration, in the order the
// configurations first appear, each group's rows in table order: one
// cluster serves every row of its group.
func Groups(rows []Row) []Group {
	var out []Group
	at := map[string]int{}
	for _, r := range rows {
		k := r.Cluster.Key()
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, Group{Cluster: r.Cluster})
		}
		out[i].Rows = append(out[i].Rows, r)
	}
	return out
}
