package sourcecheck

import (
	"errors"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// modulePath is the service's module, as its go.mod names it.
const modulePath = "github.com/pixbank/pix"

// ImportRules are the directions the service's packages never import in,
// directly or through another of the module's packages (their product
// files, as go list -deps follows them): a lower layer does not reach up
// into what it serves. Each is a package and the package it must not reach,
// both relative to the module; a package ending in "/..." is that package
// and every package under it (saga/... is package saga and each saga's).
// One that stays is named, with why, in docs/architecture.md's "Import
// directions" (stayingImports reads it).
var ImportRules = [][2]string{
	// The process's configuration is read below what it configures.
	{"internal/config", "workflows"},
	// The metrics count what the store did; they don't read it.
	{"internal/metrics", "db"},
	// A saga's descriptor is served by the API; it does not build on it.
	{"saga/...", "api"},
}

// rulePackages are the packages of graph that rule's from names: itself,
// or with "/...", it and every package under it, sorted.
func rulePackages(graph map[string][]string, from string) []string {
	base, tree := strings.CutSuffix(from, "/...")
	var pkgs []string
	for p := range graph {
		if p == base || tree && strings.HasPrefix(p, base+"/") {
			pkgs = append(pkgs, p)
		}
	}
	slices.Sort(pkgs)
	return pkgs
}

// importGraph is the module's packages (relative to the module: "db",
// "saga/scheduled") by the module's packages their product files import,
// read as go/build reads them (build constraints of this platform, no test
// files): the graph go list -deps walks, without running the go command.
func importGraph(t *testing.T) map[string][]string {
	t.Helper()
	graph := map[string][]string{}
	err := filepath.WalkDir(moduleRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != moduleRoot && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || name == "node_modules") {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != moduleRoot {
			return filepath.SkipDir
		}
		pkg, err := build.Default.ImportDir(path, 0)
		if err != nil {
			var none *build.NoGoError
			if errors.As(err, &none) {
				return nil
			}
			return err
		}
		rel, err := filepath.Rel(moduleRoot, path)
		if err != nil {
			return err
		}
		var deps []string
		for _, imp := range pkg.Imports {
			if dep, ok := strings.CutPrefix(imp, modulePath+"/"); ok {
				deps = append(deps, dep)
			}
		}
		graph[filepath.ToSlash(rel)] = deps
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return graph
}

// importChain is a shortest chain of imports from from to to in graph
// (from first, to last), nil when from does not reach to.
func importChain(graph map[string][]string, from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == to {
			var chain []string
			for ; p != ""; p = prev[p] {
				chain = append(chain, p)
			}
			slices.Reverse(chain)
			return chain
		}
		for _, dep := range graph[p] {
			if _, seen := prev[dep]; !seen {
				prev[dep] = p
				queue = append(queue, dep)
			}
		}
	}
	return nil
}

// stayingLine is a line of docs/architecture.md's "Import directions"
// that names a direction which stays: "- `internal/config` → `workflows`
// stays: why".
var stayingLine = regexp.MustCompile("^- `([^`]+)` → `([^`]+)` stays:")

// stayingImports are the directions of ImportRules that docs/architecture.md
// says stay, and why (its section "Import directions").
func stayingImports(t *testing.T) map[[2]string]bool {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(moduleRoot, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, found := strings.Cut(string(doc), "\n## Import directions\n")
	if !found {
		t.Fatal(`docs/architecture.md has no section "## Import directions"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	staying := map[[2]string]bool{}
	for line := range strings.SplitSeq(section, "\n") {
		if m := stayingLine.FindStringSubmatch(line); m != nil {
			staying[[2]string{m[1], m[2]}] = true
		}
	}
	return staying
}

// No package reaches a package ImportRules keeps it from, unless
// docs/architecture.md says why that direction stays; and a direction the
// docs say stays is still there (else the docs are stale) and is a rule's.
func TestImportDirections(t *testing.T) {
	graph := importGraph(t)
	if len(graph) < 30 {
		t.Fatalf("only %d packages read from %s: the walk missed the module", len(graph), moduleRoot)
	}
	staying := stayingImports(t)
	for _, rule := range ImportRules {
		from, to := rule[0], rule[1]
		pkgs := rulePackages(graph, from)
		if len(pkgs) == 0 {
			t.Errorf("rule %s → %s: no package %s in the module", from, to, from)
			continue
		}
		reached := false
		for _, p := range pkgs {
			chain := importChain(graph, p, to)
			switch {
			case chain != nil && staying[rule]:
				t.Logf("stays (docs/architecture.md says why): %s", strings.Join(chain, " → "))
			case chain != nil:
				t.Errorf("%s imports %s, which it must not (%s): cut the import, or say in docs/architecture.md's \"Import directions\" why %s → %s stays",
					p, to, strings.Join(chain, " → "), from, to)
			}
			reached = reached || chain != nil
		}
		if !reached && staying[rule] {
			t.Errorf("docs/architecture.md says %s → %s stays, but %s no longer reaches %s: drop its line", from, to, from, to)
		}
		delete(staying, rule)
	}
	for rule := range staying {
		t.Errorf("docs/architecture.md says %s → %s stays, which is no rule of ImportRules", rule[0], rule[1])
	}
}

// A rule's package is itself, or with "/..." itself and the packages under
// it, not those that only share its prefix.
func TestRulePackages(t *testing.T) {
	graph := map[string][]string{"saga": nil, "saga/med": nil, "saga/med/x": nil, "sagas": nil, "api": nil}
	if got := rulePackages(graph, "saga"); !slices.Equal(got, []string{"saga"}) {
		t.Fatalf("saga: %v", got)
	}
	if got := rulePackages(graph, "saga/..."); !slices.Equal(got, []string{"saga", "saga/med", "saga/med/x"}) {
		t.Fatalf("saga/...: %v", got)
	}
	if got := rulePackages(graph, "saga/transfer"); got != nil {
		t.Fatalf("saga/transfer: %v", got)
	}
}

// The chain is found through another package, and only in its direction.
func TestImportChain(t *testing.T) {
	graph := map[string][]string{"a": {"b"}, "b": {"c", "d"}, "c": {"d"}, "d": nil}
	if got := importChain(graph, "a", "d"); !slices.Equal(got, []string{"a", "b", "d"}) {
		t.Fatalf("a → d: %v", got)
	}
	if got := importChain(graph, "d", "a"); got != nil {
		t.Fatalf("d → a: %v", got)
	}
}
