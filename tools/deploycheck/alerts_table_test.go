package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docs/operations.md's alerts' table lists every alert of the rules files,
// and only those: a row removed, or one of an alert that is gone, fails.
func TestAlertsTableListsEveryAlert(t *testing.T) {
	rules, operations := filepath.Join(root, "deploy/prometheus/rules"), filepath.Join(root, "docs/operations.md")
	if errs := checkAlertsTable(rules, operations); len(errs) > 0 {
		t.Fatalf("the repository's docs/operations.md fails: %v", errs)
	}
	raw, err := os.ReadFile(operations)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	for _, c := range []struct {
		name, old, new, want string
	}{
		{"a saga's alert without its row", "| `PixScheduledOverdue` |", "| `PixScheduledLate` |",
			"has no row of alert PixScheduledOverdue"},
		{"a row of an alert that is gone", "| `PixScheduledOverdue` |", "| `PixScheduledOverdue`, `PixScheduledGone` |",
			"lists PixScheduledGone, no alert"},
		{"an alert named short", "`PixWebhookAckErrorsSlowBurn`", "`...SlowBurn`",
			"has no row of alert PixWebhookAckErrorsSlowBurn"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(text, c.old) {
				t.Fatalf("docs/operations.md has no %q", c.old)
			}
			broken := filepath.Join(t.TempDir(), "operations.md")
			if err := os.WriteFile(broken, []byte(strings.Replace(text, c.old, c.new, 1)), 0o600); err != nil {
				t.Fatal(err)
			}
			errs := checkAlertsTable(rules, broken)
			found := false
			for _, err := range errs {
				found = found || strings.Contains(err.Error(), c.want)
			}
			if !found {
				t.Errorf("want an error %q, got %v", c.want, errs)
			}
		})
	}
}
