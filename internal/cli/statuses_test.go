package cli_test

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/pixbank/pix/internal/cli"
)

// One exit-status table: each status once, in order, each a row of
// docs/cli.md's table, which has no other.
func TestOneExitStatusTable(t *testing.T) {
	for i, s := range cli.Statuses {
		if s.Code != i {
			t.Errorf("Statuses[%d] is status %d", i, s.Code)
		}
	}
	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "## Exit status\n")
	section, _, _ = strings.Cut(section, "\n## ")
	rows := regexp.MustCompile(`(?m)^\| (\d+) \|`).FindAllStringSubmatch(section, -1)
	var documented []string
	for _, r := range rows {
		documented = append(documented, r[1])
	}
	var want []string
	for _, s := range cli.Statuses {
		want = append(want, fmt.Sprint(s.Code))
	}
	if strings.Join(documented, " ") != strings.Join(want, " ") {
		t.Errorf("docs/cli.md's exit table has the statuses %q, want %q", documented, want)
	}

	var b bytes.Buffer
	cli.PrintStatuses(&b)
	for _, s := range cli.Statuses {
		if !strings.Contains(b.String(), fmt.Sprintf("  %d  %s\n", s.Code, s.Meaning)) {
			t.Errorf("PrintStatuses lacks %d", s.Code)
		}
	}
}
