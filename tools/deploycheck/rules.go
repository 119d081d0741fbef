package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/compose-spec/compose-go/v2/types"
	"gopkg.in/yaml.v3"
)

// severities are the alerts' severity labels: critical pages at once,
// warning waits for working hours.
var severities = []string{"critical", "warning"}

// runbooks is where every alert's runbook_url points: the alert's own
// section (a heading "## <alert>") of docs/runbooks.md, as GitHub renders
// it, so that the link in a page opens on the right section.
const runbooks = "https://github.com/pixbank/pix/blob/main/docs/runbooks.md"

// runbookParts are what every runbook section says, each in a paragraph
// that starts with it.
var runbookParts = []string{"**Symptom.**", "**Impact.**", "**Query.**", "**Fix.**", "**Verify.**"}

// runbookURLOf is the runbook_url of the alert named alert.
func runbookURLOf(alert string) string { return runbooks + "#" + anchor(alert) }

// anchor is the anchor GitHub gives a Markdown heading: lower case, spaces
// as hyphens, other punctuation dropped.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// checkRules reads every rules file in dir (parseRuleFile: unknown fields
// refused, as Prometheus loads it; promtool parses the expressions and the
// templates), then checks that each alert says how long it must hold, how
// severe it is, what it means, and where its runbook is (runbook_url, the
// conventional annotation, to its own section of docs/runbooks.md).
func checkRules(dir string) []error {
	files, err := ymlFiles(dir, "rules file")
	if err != nil {
		return []error{err}
	}
	var errs []error
	for _, file := range files {
		groups, err := parseRuleFile(file)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		alerts := 0
		for _, g := range groups.Groups {
			for _, r := range g.Rules {
				if r.Alert == "" {
					continue
				}
				alerts++
				where := fmt.Sprintf("%s: group %s: alert %s", file, g.Name, r.Alert)
				if r.For <= 0 {
					errs = append(errs, fmt.Errorf("%s: no `for`: one bad scrape would page", where))
				}
				if !slices.Contains(severities, r.Labels["severity"]) {
					errs = append(errs, fmt.Errorf("%s: label severity %q is not one of %s", where, r.Labels["severity"], strings.Join(severities, ", ")))
				}
				for _, a := range []string{"summary", "description"} {
					if strings.TrimSpace(r.Annotations[a]) == "" {
						errs = append(errs, fmt.Errorf("%s: no %s annotation", where, a))
					}
				}
				if _, ok := r.Annotations["runbook"]; ok {
					errs = append(errs, fmt.Errorf("%s: a runbook annotation: the convention is runbook_url", where))
				}
				if want := runbookURLOf(r.Alert); r.Annotations["runbook_url"] != want {
					errs = append(errs, fmt.Errorf("%s: runbook_url %q, want %q (its own section of docs/runbooks.md)", where, r.Annotations["runbook_url"], want))
				}
			}
		}
		if alerts == 0 {
			errs = append(errs, fmt.Errorf("%s: no alert", file))
		}
	}
	return errs
}

// checkPrometheus checks that the Prometheus of the compose project loads
// the rules checkRules checked: a rule_files pattern of its configuration,
// mapped through the service's mounts to this machine, matches them.
func checkPrometheus(p *types.Project, configFile, rulesDir string) []error {
	raw, err := os.ReadFile(configFile)
	if err != nil {
		return []error{err}
	}
	var cfg struct {
		RuleFiles []string `yaml:"rule_files"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		return []error{fmt.Errorf("%s: %w", configFile, err)}
	}
	svc, ok := p.Services["prometheus"]
	if !ok {
		return []error{errors.New("docker-compose.yml: no prometheus service")}
	}
	mountedConfig := false
	for _, v := range svc.Volumes {
		if v.Target == "/etc/prometheus/prometheus.yml" && v.Source == configFile {
			mountedConfig = true
		}
	}
	if !mountedConfig {
		return []error{fmt.Errorf("docker-compose.yml: service prometheus does not mount %s at /etc/prometheus/prometheus.yml", configFile)}
	}
	want, _ := filepath.Glob(filepath.Join(rulesDir, "*.yml"))
	loaded := map[string]bool{}
	for _, pattern := range cfg.RuleFiles {
		for _, v := range svc.Volumes {
			rel, err := filepath.Rel(v.Target, pattern)
			if err != nil || strings.HasPrefix(rel, "..") {
				continue
			}
			matches, _ := filepath.Glob(filepath.Join(v.Source, rel))
			for _, m := range matches {
				loaded[m] = true
			}
		}
	}
	var errs []error
	for _, file := range want {
		if !loaded[file] {
			errs = append(errs, fmt.Errorf("%s: its rule_files %q don't load %s in the compose project's prometheus", configFile, cfg.RuleFiles, file))
		}
	}
	return errs
}

// ymlFiles are the *.yml files of dir; none is an error naming what they
// would be.
func ymlFiles(dir, what string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yml"))
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("%s: no %s (*.yml)", dir, what)
	}
	return files, err
}

// ruleNames are the alerts and the recording rules of the rules files in
// dir, each with the file that holds it. Files that don't parse are
// checkRules's to report: they hold none here.
func ruleNames(dir string) (alerts, records map[string]string, files []string) {
	alerts, records = map[string]string{}, map[string]string{}
	files, _ = filepath.Glob(filepath.Join(dir, "*.yml"))
	for _, file := range files {
		groups, err := parseRuleFile(file)
		if err != nil {
			continue
		}
		for _, g := range groups.Groups {
			for _, r := range g.Rules {
				if r.Alert != "" {
					alerts[r.Alert] = file
				} else {
					records[r.Record] = file
				}
			}
		}
	}
	return alerts, records, files
}

// checkRunbooks checks docs/runbooks.md against the alerts of the rules in
// rulesDir: one section (a level-2 heading) per alert, named as the alert,
// so that each runbook_url's anchor exists; no section of an alert that is
// gone; and each section says the symptom, the impact, the query, the fix
// and how to verify it (runbookParts).
func checkRunbooks(rulesDir, file string) []error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return []error{err}
	}
	alerts, _, _ := ruleNames(rulesDir)
	sections := map[string]string{}
	var order []string
	current := ""
	for _, line := range strings.Split(string(raw), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			current = strings.TrimSpace(strings.TrimPrefix(line, "## "))
			if _, dup := sections[current]; dup {
				err = errors.Join(err, fmt.Errorf("%s: section %q twice", file, current))
			}
			sections[current] = ""
			order = append(order, current)
		case strings.HasPrefix(line, "# "):
			current = ""
		case current != "":
			sections[current] += line + "\n"
		}
	}
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, name := range order {
		if _, ok := alerts[name]; !ok {
			errs = append(errs, fmt.Errorf("%s: section %q is no alert of %s: one section per alert", file, name, rulesDir))
			continue
		}
		for _, part := range runbookParts {
			if !strings.Contains(sections[name], "\n"+part) && !strings.HasPrefix(sections[name], part) {
				errs = append(errs, fmt.Errorf("%s: section %s: no paragraph %s", file, name, part))
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(alerts)) {
		if _, ok := sections[name]; !ok {
			errs = append(errs, fmt.Errorf("%s: no section \"## %s\": the anchor of its runbook_url (#%s) does not exist", file, name, anchor(name)))
		}
	}
	return errs
}

// ruleTests is the part of a promtool unit-test file (promtool test rules)
// checkRuleTests reads.
type ruleTests struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		AlertRuleTest []struct {
			Alertname string `yaml:"alertname"`
			ExpAlerts []any  `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
		PromQLExprTest []struct {
			Expr string `yaml:"expr"`
		} `yaml:"promql_expr_test"`
	} `yaml:"tests"`
}

// metricName is a metric's or a recording rule's name in PromQL.
var metricName = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)

// checkRuleTests checks that the promtool unit tests in testsDir (*.yml,
// run by make test) cover the rules of rulesDir: every rules file loaded
// by a test file, every alert with a firing case (an alert_rule_test that
// expects it) and a quiet case (one that expects none) in a test file that
// loads its rules file, every recording rule queried by a promql_expr_test.
// promtool itself runs them; this says none is missing.
func checkRuleTests(rulesDir, testsDir string) []error {
	alerts, records, files := ruleNames(rulesDir)
	tests, err := ymlFiles(testsDir, "unit-test file of the rules")
	if err != nil {
		return []error{err}
	}
	var errs []error
	loaded := map[string]bool{}
	firing, quiet, queried := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, test := range tests {
		raw, err := os.ReadFile(test)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var t ruleTests
		if err := yaml.Unmarshal(raw, &t); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", test, err))
			continue
		}
		here := map[string]bool{}
		for _, f := range t.RuleFiles {
			abs, err := filepath.Abs(filepath.Join(filepath.Dir(test), f))
			if err == nil {
				here[abs], loaded[abs] = true, true
			}
		}
		for _, group := range t.Tests {
			for _, a := range group.AlertRuleTest {
				file, ok := alerts[a.Alertname]
				abs, _ := filepath.Abs(file)
				if !ok || !here[abs] {
					errs = append(errs, fmt.Errorf("%s: tests %q, no alert of its rule_files", test, a.Alertname))
					continue
				}
				if len(a.ExpAlerts) > 0 {
					firing[a.Alertname] = true
				} else {
					quiet[a.Alertname] = true
				}
			}
			for _, e := range group.PromQLExprTest {
				for _, name := range metricName.FindAllString(e.Expr, -1) {
					queried[name] = true
				}
			}
		}
	}
	for _, file := range files {
		if abs, _ := filepath.Abs(file); !loaded[abs] {
			errs = append(errs, fmt.Errorf("%s: no unit-test file of %s loads it", file, testsDir))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(alerts)) {
		if !firing[name] {
			errs = append(errs, fmt.Errorf("%s: alert %s has no firing case in %s (an alert_rule_test with exp_alerts)", alerts[name], name, testsDir))
		}
		if !quiet[name] {
			errs = append(errs, fmt.Errorf("%s: alert %s has no quiet case in %s (an alert_rule_test with exp_alerts: [])", alerts[name], name, testsDir))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(records)) {
		if !queried[name] {
			errs = append(errs, fmt.Errorf("%s: recording rule %s is queried by no promql_expr_test in %s", records[name], name, testsDir))
		}
	}
	return errs
}
