package db

import (
	"embed"
	"fmt"
	"reflect"
	"strings"
)

// queryFiles hold the package's SQL, one file per saga or mechanism: each
// statement starts with a line "-- name: Name" and runs to the next one.
//
//go:embed queries/*.sql
var queryFiles embed.FS

// namedQueries reads the statements of queries/file by name. It panics on a
// file that is missing or malformed, or on a name given twice: the package
// does not start (nor does any test) with SQL it can't find.
func namedQueries(file string) map[string]string {
	body, err := queryFiles.ReadFile("queries/" + file)
	if err != nil {
		panic(fmt.Sprintf("db: %v", err))
	}
	out := map[string]string{}
	var name string
	var sql strings.Builder
	flush := func() {
		if name == "" {
			return
		}
		if _, dup := out[name]; dup {
			panic(fmt.Sprintf("db: queries/%s names %s twice", file, name))
		}
		out[name] = strings.TrimSpace(sql.String())
		sql.Reset()
	}
	for line := range strings.Lines(string(body)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "-- name:"); ok {
			flush()
			name = strings.TrimSpace(rest)
			continue
		}
		if name != "" {
			sql.WriteString(line)
		}
	}
	flush()
	return out
}

// bindQueries fills the string fields of the struct dst points to with
// the statements of queries/file of the same names, and panics unless every
// field has its statement and every statement its field. It is called when
// the package's variables are initialised, so a misspelt or forgotten name
// fails every test.
func bindQueries(file string, dst any) {
	queries := namedQueries(file)
	v := reflect.ValueOf(dst).Elem()
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		q, ok := queries[name]
		if !ok || q == "" {
			panic(fmt.Sprintf("db: queries/%s has no statement %s", file, name))
		}
		v.Field(i).SetString(q)
		delete(queries, name)
	}
	for name := range queries {
		panic(fmt.Sprintf("db: queries/%s: statement %s is used nowhere", file, name))
	}
}
