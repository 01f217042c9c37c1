package recipe

import (
	"fmt"
	"regexp"
)

var identRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,47}$`)

// nameRE is a recipe name: lower-case words joined by dashes.
var nameRE = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)

// Ident quotes a configurable CQL identifier (keyspace, table, column) after
// checking it, so that it can be a reserved word ("group") but never inject
// CQL. Quoted names are case-sensitive: "lockcheck" is the keyspace that an
// unquoted lockcheck names.
func Ident(name string) (string, error) {
	if !identRE.MatchString(name) {
		return "", fmt.Errorf("bad CQL identifier %q (want a letter, then up to 47 letters, digits or _)", name)
	}
	return `"` + name + `"`, nil
}

// Table is the quoted keyspace.table name.
func Table(keyspace, table string) (string, error) {
	ks, err := Ident(keyspace)
	if err != nil {
		return "", err
	}
	t, err := Ident(table)
	if err != nil {
		return "", err
	}
	return ks + "." + t, nil
}
