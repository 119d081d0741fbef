package main

import (
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
)

// alertsHeading and alertsHeader find the alerts' table of
// docs/operations.md: the first table after the heading whose header row
// starts so.
const (
	alertsHeading = "### Alerts"
	alertsHeader  = "| alert |"
)

// tableAlert is an alert's name in the table's first cell, in backticks.
var tableAlert = regexp.MustCompile("`(Pix[A-Za-z0-9]*)`")

// checkAlertsTable checks docs/operations.md's table of the alerts (file)
// against the rules in rulesDir: every alert has a row (its name in
// backticks in the first cell, several names to a row allowed), and every
// name there is an alert. So an alert a saga adds with its rules file
// (deploy/prometheus/rules/<saga>.yml) is listed where on-call reads them.
func checkAlertsTable(rulesDir, file string) []error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return []error{err}
	}
	lines := strings.Split(string(raw), "\n")
	at := slices.Index(lines, alertsHeading)
	if at == -1 {
		return []error{fmt.Errorf("%s: no heading %q", file, alertsHeading)}
	}
	start := slices.IndexFunc(lines[at:], func(l string) bool { return strings.HasPrefix(l, alertsHeader) })
	if start == -1 {
		return []error{fmt.Errorf("%s: no table %q after %q", file, alertsHeader, alertsHeading)}
	}
	listed := map[string]bool{}
	var errs []error
	for _, line := range lines[at+start+2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "|"), "|")
		names := tableAlert.FindAllStringSubmatch(first, -1)
		if len(names) == 0 {
			errs = append(errs, fmt.Errorf("%s: the alerts' table has a row that names no alert: %q", file, strings.TrimSpace(first)))
		}
		for _, m := range names {
			listed[m[1]] = true
		}
	}
	alerts, _, _ := ruleNames(rulesDir)
	for _, name := range slices.Sorted(maps.Keys(alerts)) {
		if !listed[name] {
			errs = append(errs, fmt.Errorf("%s: the alerts' table (%s) has no row of alert %s (%s)", file, alertsHeading, name, alerts[name]))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(listed)) {
		if _, ok := alerts[name]; !ok {
			errs = append(errs, fmt.Errorf("%s: the alerts' table (%s) lists %s, no alert of %s", file, alertsHeading, name, rulesDir))
		}
	}
	return errs
}
