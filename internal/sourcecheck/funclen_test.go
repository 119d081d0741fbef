package sourcecheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// moduleRoot is the service's module, from this package's directory.
const moduleRoot = "../.."

// justification is the doc comment's line that says why a function is
// longer than MaxFuncLines: "Length: " and the reason.
const justification = "Length: "

// longFunc is a function over MaxFuncLines lines.
type longFunc struct {
	where, name string
	lines       int
	why         string // its justification, "" for none
}

// productFiles are the non-test Go files of the service's module: not its
// testdata, not another module's (tooling/, tools/...: a directory with a
// go.mod of its own), not a generated file.
func productFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(moduleRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != moduleRoot && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || name == "node_modules") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != moduleRoot {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// longFuncs are the functions and function literals of files over
// MaxFuncLines lines, and those whose doc comment says why they are long.
func longFuncs(t *testing.T, files []string) []longFunc {
	t.Helper()
	var long []longFunc
	fset := token.NewFileSet()
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if ast.IsGenerated(f) {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var body *ast.BlockStmt
			var doc *ast.CommentGroup
			name := "a function literal"
			switch fn := n.(type) {
			case *ast.FuncDecl:
				body, doc, name = fn.Body, fn.Doc, fn.Name.Name
			case *ast.FuncLit:
				body = fn.Body
			}
			if body == nil {
				return true
			}
			start := fset.Position(n.Pos())
			lines := fset.Position(body.Rbrace).Line - start.Line + 1
			why := justificationOf(doc)
			rel, _ := filepath.Rel(moduleRoot, start.Filename)
			if lines > MaxFuncLines || why != "" {
				long = append(long, longFunc{rel + ":" + strconv.Itoa(start.Line), name, lines, why})
			}
			return true
		})
	}
	return long
}

// justificationOf is the reason a doc comment gives for a function's
// length, "" for none.
func justificationOf(doc *ast.CommentGroup) string {
	if doc == nil {
		return ""
	}
	_, why, found := strings.Cut(doc.Text(), "\n"+justification)
	if !found && strings.HasPrefix(doc.Text(), justification) {
		why, found = strings.TrimPrefix(doc.Text(), justification), true
	}
	if !found {
		return ""
	}
	why, _, _ = strings.Cut(why, "\n\n") // its paragraph
	return strings.Join(strings.Fields(why), " ")
}

// Every function of the service's module is at most MaxFuncLines lines,
// or its doc comment says why not ("Length: ..."); the exceptions are
// listed. A function literal has no doc comment: it is split.
func TestNoProductFunctionIsLongWithoutAReason(t *testing.T) {
	files := productFiles(t)
	if len(files) < 100 {
		t.Fatalf("only %d files read from %s: the walk missed the module", len(files), moduleRoot)
	}
	for _, f := range longFuncs(t, files) {
		switch {
		case f.lines <= MaxFuncLines:
			t.Errorf("%s %s: %d lines, yet its doc comment says why it is over %d: drop its %q line",
				f.where, f.name, f.lines, MaxFuncLines, strings.TrimSpace(justification))
		case f.why != "":
			t.Logf("exception: %s %s, %d lines: %s", f.where, f.name, f.lines, f.why)
		default:
			t.Errorf("%s %s: %d lines, over %d: split it by step, or say why not in its doc comment (a line %q)",
				f.where, f.name, f.lines, MaxFuncLines, justification+"<why>")
		}
	}
}

// The check finds what it is for: a long function without a reason, one
// with, a long literal, and a short function that still claims one; a
// short one without a claim is none of its business.
func TestTheLengthCheckFindsLongFunctions(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("\t_ = 1\n", MaxFuncLines)
	src := "package x\n\nfunc short() {}\n\n// Length: no longer.\nfunc stale() {}\n\n// long has no reason.\nfunc long() {\n" + long + "}\n\n" +
		"// justified is long.\n//\n// Length: one table, row by row.\nfunc justified() {\n" + long + "}\n\n" +
		"func literal() {\n\tf := func() {\n" + long + "\t}\n\tf()\n}\n"
	path := filepath.Join(dir, "x.go")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	found := map[string]longFunc{}
	for _, f := range longFuncs(t, []string{path}) {
		found[f.name] = f
	}
	if len(found) != 5 || found["stale"].why != "no longer." || found["long"].why != "" || found["justified"].why != "one table, row by row." ||
		found["a function literal"].lines != MaxFuncLines+2 || found["literal"].lines != MaxFuncLines+5 {
		t.Fatalf("found %+v", found)
	}
}
