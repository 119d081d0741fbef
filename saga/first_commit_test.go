package saga_test

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// movedIntoPackages are the sagas whose package was made by moving code
// out of the core's folders (issue 36, item 3), not added as a new saga:
// their first commit edits the files they left, by design.
var movedIntoPackages = map[string]string{
	"catchup":   "moved from activities/, workflows/, db/ and internal/metrics",
	"transfer":  "moved from api/, activities/, workflows/ and db/",
	"refund":    "moved from api/, activities/, workflows/ and db/",
	"retention": "moved from activities/, workflows/, db/, saga/maintenance.go and internal/config",
	"reconcile": "moved from api/, activities/, workflows/, db/, saga/maintenance.go, internal/config and internal/metrics",
}

// addedOnly are the folders where a saga adds files of its own that are
// picked up by the folder (docs/extending.md, "The files of a saga"): any
// file its first commit adds there is its own.
var addedOnly = []string{
	"db/migrations/", "internal/broker/schemas/", "api/openapi/pix-api/", "cmd/pixctl/",
	"deploy/prometheus/rules/", "deploy/prometheus/tests/", "docs/",
}

// A saga is its own files plus one line in the registry (and its import)
// and its migrations' checksum lines (docs/extending.md): the commit that
// added each saga package edits no other shared file, but for rows
// inserted into the docs' tables that list the sagas (lines added,
// none changed or removed). Read from git: the first commit that added
// saga/<name>/saga.go.
func TestASagaFirstCommitEditsOnlyItsOwnFiles(t *testing.T) {
	if out, err := git("rev-parse", "--is-shallow-repository"); err != nil || strings.TrimSpace(string(out)) != "false" {
		t.Skip("not a full git checkout: the sagas' first commits are not here to read")
	}
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	checked := 0
	for _, e := range entries {
		name := e.Name()
		if _, err := os.Stat(path.Join(name, "saga.go")); !e.IsDir() || err != nil {
			continue
		}
		if _, moved := movedIntoPackages[name]; moved {
			continue
		}
		commit := firstCommitAdding(t, path.Join("saga", name, "saga.go"))
		if commit == "" {
			t.Logf("saga/%s: not committed yet, nothing to check", name)
			continue
		}
		checked++
		t.Run(name, func(t *testing.T) {
			require.Empty(t, sharedEdits(t, name, commit), "saga/%s's first commit %s edits shared files beyond its registry line and checksum lines", name, commit[:12])
		})
	}
	require.NotZero(t, checked, "no saga package's first commit found: the test checks nothing")
}

// git runs git at the repository's root (paths are the repository's).
func git(args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = ".."
	return cmd.Output()
}

// firstCommitAdding is the oldest commit that added file, or "".
func firstCommitAdding(t *testing.T, file string) string {
	out, err := git("log", "--diff-filter=A", "--format=%H", "--", file)
	require.NoError(t, err)
	lines := strings.Fields(string(out))
	if len(lines) == 0 {
		return ""
	}
	return lines[len(lines)-1]
}

// sharedEdits lists what commit does beyond saga name's own files.
func sharedEdits(t *testing.T, name, commit string) []string {
	out, err := git("show", "--format=", "--numstat", "--no-renames", commit)
	require.NoError(t, err)
	status, err := git("show", "--format=", "--name-status", "--no-renames", commit)
	require.NoError(t, err)
	added := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(status)), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "A" {
			added[f[1]] = true
		}
	}
	migrations := 0
	for f := range added {
		if regexp.MustCompile(`^db/migrations/\d{4}_.*\.sql$`).MatchString(f) {
			migrations++
		}
	}
	var bad []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		plus, _ := strconv.Atoi(f[0])
		minus, _ := strconv.Atoi(f[1])
		file := f[2]
		switch {
		case strings.HasPrefix(file, "saga/"+name+"/"):
		case added[file] && ownFolder(file):
		case file == "saga/registry/registry.go" && plus <= 2 && minus == 0:
		case file == "db/migrations/SHA256SUMS" && plus == migrations && minus == 0:
		case strings.HasPrefix(file, "docs/") && strings.HasSuffix(file, ".md") && minus == 0:
		default:
			bad = append(bad, fmt.Sprintf("%s (+%d −%d)", file, plus, minus))
		}
	}
	return bad
}

// ownFolder: file is directly in one of the folders of addedOnly.
func ownFolder(file string) bool {
	for _, dir := range addedOnly {
		if rest, ok := strings.CutPrefix(file, dir); ok && !strings.Contains(rest, "/") {
			return true
		}
	}
	return false
}

// The check fails on a commit that edits shared code: the catch-up's move
// into its package (3f2560c) edited config, db, activities and workflows.
func TestSharedEditsNamesTheSharedFilesACommitEdits(t *testing.T) {
	if out, err := git("rev-parse", "--is-shallow-repository"); err != nil || strings.TrimSpace(string(out)) != "false" {
		t.Skip("not a full git checkout")
	}
	edits := sharedEdits(t, "catchup", "3f2560c54dc88b3082559842bf897bbd6adb4f04")
	require.Contains(t, strings.Join(edits, "\n"), "internal/config/config.go")
	require.Contains(t, strings.Join(edits, "\n"), "saga/registry/registry.go", "the registry edited beyond a line and its import")
}
