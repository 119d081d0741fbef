package db

import (
	"cmp"
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"reflect"
	"slices"
	"strings"
	"text/template"

	"github.com/exaring/otelpgx"
)

// queryFiles hold the package's SQL, one file per saga or mechanism: each
// statement starts with a line "-- name: Name" and runs to the next one.
// A file is a text/template, executed before it is split (composeNamed):
// a piece of SQL several of its statements share is written once, as a
// {{define}} block, and each statement includes it with {{template}}
// (holds.sql's holdEvent).
//
//go:embed queries/*.sql
var queryFiles embed.FS

// namedQueries reads the statements of queries/file by name. It panics on a
// file that is missing or malformed, or on a name given twice: the package
// does not start (nor does any test) with SQL it can't find.
func namedQueries(file string) map[string]string {
	return readNamed(queryFiles, "queries/"+file)
}

// readNamed reads the statements of files' file by name, panicking as
// namedQueries says.
func readNamed(files fs.FS, file string) map[string]string {
	body, err := fs.ReadFile(files, file)
	if err != nil {
		panic(fmt.Sprintf("db: %v", err))
	}
	composed, err := composeNamed(file, string(body))
	if err != nil {
		panic(fmt.Sprintf("db: %v", err))
	}
	return splitNamed(file, composed)
}

// composeNamed is body (the text of file) with its shared pieces
// included: body executed as a text/template, in which args "Key" "value"
// ... makes the argument of a {{template}} (a map). A file with no
// template actions comes out as it is.
func composeNamed(file, body string) (string, error) {
	t, err := template.New(file).Option("missingkey=error").Funcs(template.FuncMap{"args": templateArgs}).Parse(body)
	if err != nil {
		return "", err
	}
	var out strings.Builder
	if err := t.Execute(&out, nil); err != nil {
		return "", err
	}
	return out.String(), nil
}

// templateArgs is the map of the pairs key, value of kv: a shared piece's
// arguments.
func templateArgs(kv ...string) (map[string]string, error) {
	if len(kv)%2 != 0 {
		return nil, fmt.Errorf("args: %d strings, not pairs", len(kv))
	}
	out := make(map[string]string, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out, nil
}

// splitNamed is the statements of body (the text of file) by name.
func splitNamed(file, body string) map[string]string {
	out := map[string]string{}
	var name string
	var sql strings.Builder
	flush := func() {
		if name == "" {
			return
		}
		if _, dup := out[name]; dup {
			panic(fmt.Sprintf("db: %s names %s twice", file, name))
		}
		out[name] = strings.TrimSpace(sql.String())
		sql.Reset()
	}
	for line := range strings.Lines(body) {
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

// statementNames names every bound statement by its SQL text, for the
// spans of the pool's statements: "credits.Receive" for Receive of
// queries/credits.sql. Written only while the package's variables are
// initialised (BindQueries), read only after.
var statementNames = map[string]string{}

// NamedStatement is one statement the service runs: its name in traces
// ("credits.Receive", "transfers.ClaimDue") and its SQL.
type NamedStatement struct{ Name, SQL string }

// Statements is every statement bound in this process, by name: those of
// BindQueries (db's queries/*.sql and the queries file of every saga
// package linked in) and of every queue declared (DeclareQueue). It is the
// one registry the statements run from, so that a check of every statement
// (db/plans: each is bounded by an index) sees one added anywhere. Call it
// only after the package variables are initialised (from main or a test).
func Statements() []NamedStatement {
	out := make([]NamedStatement, 0, len(statementNames))
	for sql, name := range statementNames {
		out = append(out, NamedStatement{name, sql})
	}
	slices.SortFunc(out, func(a, b NamedStatement) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.SQL, b.SQL)) })
	return out
}

// statementName is the name of the statement sql, or, for SQL that is no
// named statement (a migration, a test's), its first keyword.
func statementName(sql string) string {
	if name, ok := statementNames[sql]; ok {
		return name
	}
	return otelpgx.SQLOperationName(context.Background(), sql)
}

// BindQueries fills the string fields of the struct dst points to with
// the statements of the same names in files' file (a saga's own queries
// file, embedded in the saga's package: "-- name: Name" starts
// each statement, which runs to the next one), and panics unless every
// field has its statement and every statement its field. Traces name each
// statement by the file's base name and its own ("transfers.GetTransfer").
// Call it only while the caller's package variables are initialised (a
// package-level variable or an init function): a misspelt or forgotten
// name then fails every test and the process before it starts, and the
// names of the statements are not written while statements run.
func BindQueries(files fs.FS, file string, dst any) {
	queries := readNamed(files, file)
	prefix := strings.TrimSuffix(path.Base(file), ".sql")
	v := reflect.ValueOf(dst).Elem()
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		q, ok := queries[name]
		if !ok || q == "" {
			panic(fmt.Sprintf("db: %s has no statement %s", file, name))
		}
		v.Field(i).SetString(q)
		statementNames[q] = prefix + "." + name
		delete(queries, name)
	}
	for name := range queries {
		panic(fmt.Sprintf("db: %s: statement %s is used nowhere", file, name))
	}
}

// bindQueries is BindQueries of the package's own queries/file.
func bindQueries(file string, dst any) { BindQueries(queryFiles, "queries/"+file, dst) }
