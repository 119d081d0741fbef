// Package rowscan reads a row into a struct by column name, tolerating
// columns the struct does not know. The stores read their tables' rows
// whole (SELECT *, RETURNING *); during a rolling upgrade the migrations
// run while the older build still serves, and after a rollback they stay,
// so a build must read a row that has columns added after it was built.
// pgx's by-name scanners (RowToStructByName and its Lax form) refuse such
// a row ("struct doesn't have corresponding row field"); ByName reads it
// and discards the columns it does not know.
//
// A struct field with no column is an error, as with pgx's strict
// scanner: the migrations run before a build serves and are never undone,
// and a column is never dropped or renamed while a build reads it
// (docs/extending.md), so a field without its column is a mistake (a
// mistyped db tag, a statement that leaves the column out) that would
// otherwise read as a silent zero, an amount or a generation fence among
// them.
//
// It is apart from db and the sagas so that both import it, and neither
// the other.
package rowscan

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ByName returns a T read from row by column name, as pgx's
// RowToStructByName matches them: a field's db tag (up to a comma), else
// its name, case-insensitive and without underscores; a field tagged
// db:"-" and an unexported one are skipped; an embedded struct's fields
// are T's. A column no field matches is read and discarded (its value is
// not decoded: any type, one pgx does not know too). Use it with
// pgx.CollectRows and its kin, as pgx's scanners are used.
func ByName[T any](row pgx.CollectableRow) (T, error) {
	var value T
	p, err := planOf(reflect.TypeFor[T](), row.FieldDescriptions())
	if err != nil {
		return value, err
	}
	v := reflect.ValueOf(&value).Elem()
	targets := make([]any, len(p))
	for i, path := range p {
		if path != nil {
			targets[i] = v.FieldByIndex(path).Addr().Interface()
		}
	}
	return value, row.Scan(targets...)
}

// plan is, for each column of a result, the index path of the field it is
// read into, nil for a column discarded.
type plan [][]int

// planKey is a struct type and a result's columns (their names joined by
// NUL, which no column name holds).
type planKey struct {
	t    reflect.Type
	cols string
}

// plans caches each type's plan for each set of columns: reflection once
// per type and statement shape, not per row (these reads are on each
// PIX's path).
var plans sync.Map

func planOf(t reflect.Type, cols []pgconn.FieldDescription) (plan, error) {
	var names strings.Builder
	size := len(cols)
	for _, c := range cols {
		size += len(c.Name)
	}
	names.Grow(size)
	for i, c := range cols {
		if i > 0 {
			names.WriteByte(0)
		}
		names.WriteString(c.Name)
	}
	key := planKey{t, names.String()}
	if p, ok := plans.Load(key); ok {
		return p.(plan), nil
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("rowscan: %s is not a struct", t)
	}
	p := make(plan, len(cols))
	if err := fill(p, t, cols, nil); err != nil {
		return nil, fmt.Errorf("rowscan: %s: %w", t, err)
	}
	plans.Store(key, p)
	return p, nil
}

// fill sets, in p, the path of each of t's fields (below prefix) at its
// column, as pgx's computeNamedStructFields does; a field without its
// column is an error (see the package's comment).
func fill(p plan, t reflect.Type, cols []pgconn.FieldDescription, prefix []int) error {
	for i := range t.NumField() {
		sf := t.Field(i)
		path := append(append([]int(nil), prefix...), i)
		if sf.PkgPath != "" && !sf.Anonymous {
			continue
		}
		if sf.Anonymous && sf.Type.Kind() == reflect.Struct {
			if err := fill(p, sf.Type, cols, path); err != nil {
				return err
			}
			continue
		}
		tag, tagged := sf.Tag.Lookup("db")
		tag, _, _ = strings.Cut(tag, ",")
		if tag == "-" {
			continue
		}
		name := tag
		if !tagged {
			name = sf.Name
		}
		at := column(cols, name, !tagged)
		if at < 0 {
			return fmt.Errorf("no column %s in the row for field %s", name, sf.Name)
		}
		p[at] = path
	}
	return nil
}

// column is the position of name among cols, -1 if none, as pgx's
// fieldPosByName finds it: a tag exactly first, then case-insensitively; a
// field's name (normalize) case-insensitively and without underscores.
func column(cols []pgconn.FieldDescription, name string, normalize bool) int {
	if normalize {
		name = strings.ReplaceAll(name, "_", "")
	} else {
		for i, c := range cols {
			if c.Name == name {
				return i
			}
		}
	}
	for i, c := range cols {
		col := c.Name
		if normalize {
			col = strings.ReplaceAll(col, "_", "")
		}
		if strings.EqualFold(col, name) {
			return i
		}
	}
	return -1
}
