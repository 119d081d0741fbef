package saga_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The guide a new saga is built by (docs/extending.md) names the files to
// write and to read: every path it names exists, and so does every page it
// links to. A path with a placeholder (db/migrations/NNNN_what.sql) names
// a file to write, and only its folder must exist.
func TestExtendingGuideNamesOnlyPathsThatExist(t *testing.T) {
	const guide = "../docs/extending.md"
	text, err := os.ReadFile(guide)
	require.NoError(t, err)
	topLevel := []string{"activities", "api", "cmd", "db", "deploy", "docs", "e2e", "internal", "saga", "scripts", "tools", "worker", "workflows"}
	paths := regexp.MustCompile("`((?:" + strings.Join(topLevel, "|") + `)/[A-Za-z0-9_./-]*)` + "`")
	links := regexp.MustCompile(`\]\(([A-Za-z0-9_./-]+\.md)(?:#[^)]*)?\)`)
	var checked, missing []string
	for _, m := range paths.FindAllStringSubmatch(string(text), -1) {
		p := strings.TrimSuffix(m[1], "/")
		if strings.Contains(p, "NNNN") {
			p = filepath.Dir(p)
		}
		checked = append(checked, p)
		if _, err := os.Stat(filepath.Join("..", p)); err != nil {
			missing = append(missing, p)
		}
	}
	for _, m := range links.FindAllStringSubmatch(string(text), -1) {
		p := filepath.Join("docs", m[1])
		checked = append(checked, p)
		if _, err := os.Stat(filepath.Join("..", p)); err != nil {
			missing = append(missing, p)
		}
	}
	require.NotEmpty(t, checked, "the guide names no path: the pattern no longer matches its text")
	require.Empty(t, missing, "docs/extending.md names paths that do not exist")
}
