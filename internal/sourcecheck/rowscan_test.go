package sourcecheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// strictByName are pgx's by-name row scanners, which refuse a row with a
// column their struct lacks (the Lax ones too): the product reads rows by
// name with internal/rowscan, which ignores it, so that a build reads on
// after a migration adds a column (docs/operations.md, "Migrations").
var strictByName = []string{"RowToStructByName", "RowToStructByNameLax", "RowToAddrOfStructByName", "RowToAddrOfStructByNameLax"}

// strictReads are the places in files that call one of strictByName, as
// "path:line".
func strictReads(t *testing.T, files []string) []string {
	t.Helper()
	var out []string
	fset := token.NewFileSet()
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok || !slices.Contains(strictByName, sel.Sel.Name) {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "pgx" {
				rel, _ := filepath.Rel(moduleRoot, path)
				out = append(out, rel+":"+strconv.Itoa(fset.Position(sel.Pos()).Line))
			}
			return true
		})
	}
	return out
}

func TestNoProductReadIsStrictByName(t *testing.T) {
	if found := strictReads(t, productFiles(t)); len(found) > 0 {
		t.Fatalf("pgx's strict by-name scanner, which fails on a column a later migration adds: use rowscan.ByName at %v", found)
	}
}

func TestTheStrictReadCheckFindsOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.go")
	src := "package store\n\nimport \"github.com/jackc/pgx/v5\"\n\nvar read = pgx.RowToStructByName[struct{ ID string }]\n"
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	if found := strictReads(t, []string{path}); len(found) != 1 {
		t.Fatalf("found %v, want the one read", found)
	}
}
