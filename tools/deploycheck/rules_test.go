package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// brokenRules copies the rules, their unit tests and docs/runbooks.md into
// a temporary tree, with each old string of the file rel (one of them)
// replaced by its new one, and returns the copies' rules directory,
// runbooks file and tests directory.
func brokenRules(t *testing.T, rel string, oldNew ...string) (rulesDir, runbooksFile, testsDir string) {
	t.Helper()
	tmp := t.TempDir()
	copied := false
	for _, pattern := range []string{"deploy/prometheus/rules/*.yml", "deploy/prometheus/tests/*.yml", "docs/runbooks.md"} {
		files, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: %v, %d files", pattern, err, len(files))
		}
		for _, file := range files {
			name, err := filepath.Rel(root, file)
			if err != nil {
				t.Fatal(err)
			}
			src := file
			if name == rel {
				src, copied = broken(t, rel, oldNew...), true
			}
			raw, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			dst := filepath.Join(tmp, name)
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, raw, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !copied {
		t.Fatalf("%s is none of the files copied", rel)
	}
	return filepath.Join(tmp, "deploy/prometheus/rules"), filepath.Join(tmp, "docs/runbooks.md"), filepath.Join(tmp, "deploy/prometheus/tests")
}

// allRulesErrors runs the checks of the rules, their runbooks and their
// unit tests on a broken copy.
func allRulesErrors(t *testing.T, rel string, oldNew ...string) []error {
	t.Helper()
	rules, runbooks, tests := brokenRules(t, rel, oldNew...)
	errs := checkRules(rules)
	errs = append(errs, checkRunbooks(rules, runbooks)...)
	return append(errs, checkRuleTests(rules, tests)...)
}

// Every alert links its own runbook section, which exists and says what
// a runbook says; every section is an alert's; every alert is unit-tested
// firing and quiet, every recording rule queried, every rules file loaded
// by a test file.
func TestRunbooksAndRuleTests(t *testing.T) {
	if errs := allRulesErrors(t, "docs/runbooks.md"); len(errs) > 0 {
		t.Fatalf("the repository's copy fails: %v", errs)
	}
	const rules, pixTests, webhookTests, runbooksMD = "deploy/prometheus/rules/pix.yml", "deploy/prometheus/tests/pix_test.yml",
		"deploy/prometheus/tests/webhooks_test.yml", "docs/runbooks.md"
	for _, c := range []struct {
		name, rel string
		oldNew    []string
		message   string
	}{
		{"the old runbook annotation", rules, []string{"runbook_url: https://github.com/pixbank/pix/blob/main/docs/runbooks.md#pixoutboxstalled", "runbook: docs/events.md"},
			"alert PixOutboxStalled: a runbook annotation: the convention is runbook_url"},
		{"a runbook_url to another alert's section", rules, []string{"runbooks.md#pixprocessdown", "runbooks.md#pixcreditswaiting"},
			`alert PixProcessDown: runbook_url "https://github.com/pixbank/pix/blob/main/docs/runbooks.md#pixcreditswaiting"`},
		{"an alert without its section", runbooksMD, []string{"## PixCreditFailed\n", "## Credits that failed\n"},
			`no section "## PixCreditFailed": the anchor of its runbook_url (#pixcreditfailed) does not exist`},
		{"a section of no alert", runbooksMD, []string{"## PixProcessDown\n", "## PixProcessDown\n\n**Symptom.** x\n\n## PixProcessGone\n"},
			`section "PixProcessGone" is no alert`},
		{"a section twice", runbooksMD, []string{"## PixOutboxStalled\n", "## PixOutboxStalled\n\n## PixOutboxStalled\n"},
			`section "PixOutboxStalled" twice`},
		{"a section that does not say how to verify", runbooksMD, []string{"**Verify.** `pix_outbox_unpublished_events` falls", "Then `pix_outbox_unpublished_events` falls"},
			"section PixOutboxStalled: no paragraph **Verify.**"},
		{"an alert without a firing case", pixTests, []string{"        alertname: PixCreditsWaiting\n        exp_alerts:\n          - exp_labels:", "        alertname: PixCreditsWaiting\n        exp_alerts: []\n        x_alerts:\n          - exp_labels:"},
			"alert PixCreditsWaiting has no firing case"},
		{"an alert without a quiet case", pixTests, []string{"      - eval_time: 3m\n        alertname: PixCreditsWaiting\n        exp_alerts: []\n", ""},
			"alert PixCreditsWaiting has no quiet case"},
		{"a test of an alert its rule_files don't load", webhookTests, []string{"alertname: PixWebhooksRefused\n        exp_alerts: []", "alertname: PixCreditsWaiting\n        exp_alerts: []"},
			`tests "PixCreditsWaiting", no alert of its rule_files`},
		{"a recording rule nobody queries", webhookTests, []string{"      - {expr: 'round(pix:webhook_ack_slow:ratio_rate3d", "      - {expr: 'round(pix:webhook_ack_slow:ratio_rate2h"},
			"recording rule pix:webhook_ack_slow:ratio_rate3d is queried by no promql_expr_test"},
		{"a rules file that is no YAML: reported, not skipped", rules, []string{"  - name: pix\n    rules:\n", "  - name: pix\n   rules:\n"},
			"pix.yml: yaml: line"},
		{"a rules file no test loads", pixTests, []string{"  - ../rules/pix.yml\n", "  - ../rules/scheduled.yml\n"},
			"pix.yml: no unit-test file of"},
	} {
		t.Run(c.name, func(t *testing.T) { wantError(t, allRulesErrors(t, c.rel, c.oldNew...), c.message) })
	}
	if errs := checkRuleTests(filepath.Join(root, "deploy/prometheus/rules"), t.TempDir()); len(errs) == 0 ||
		!strings.Contains(errs[0].Error(), "no unit-test file") {
		t.Errorf("rules without unit tests: %v", errs)
	}
}

// anchor is GitHub's: the runbook_url of an alert opens its section.
func TestAnchor(t *testing.T) {
	for heading, want := range map[string]string{
		"PixPSPNeedsAttention":        "pixpspneedsattention",
		"2. The OAuth 2.0 client":     "2-the-oauth-20-client",
		"On call: a scheduled PIX":    "on-call-a-scheduled-pix",
		"snake_case and-hyphen Words": "snake_case-and-hyphen-words",
	} {
		if got := anchor(heading); got != want {
			t.Errorf("anchor(%q) = %q, want %q", heading, got, want)
		}
	}
}

// Durations as Prometheus reads them (model.ParseDuration): units from the
// largest down, each once, whole numbers, "0" alone without a unit.
func TestParsePromDuration(t *testing.T) {
	for s, want := range map[string]time.Duration{
		"0": 0, "0s": 0, "2m": 2 * time.Minute, "1h30m": 90 * time.Minute, "5ms": 5 * time.Millisecond, "1m5ms": time.Minute + 5*time.Millisecond,
		"1y2w3d4h5m6s7ms": 365*24*time.Hour + 17*24*time.Hour + 4*time.Hour + 5*time.Minute + 6*time.Second + 7*time.Millisecond,
		"090s":            90 * time.Second, "292y": 292 * 365 * 24 * time.Hour,
	} {
		if got, err := parsePromDuration(s); err != nil || time.Duration(got) != want {
			t.Errorf("parsePromDuration(%q) = %v, %v; want %v", s, time.Duration(got), err, want)
		}
	}
	for _, s := range []string{"", "1", "120", "1.5m", "30m1h", "1m1m", "-1m", "1M", "1 m", "m", "2 minutes", "1h ", "293y", "99999999999999999999s"} {
		if got, err := parsePromDuration(s); err == nil {
			t.Errorf("parsePromDuration(%q) = %v, want an error", s, time.Duration(got))
		}
	}
}
