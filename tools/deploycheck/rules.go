package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"
	"github.com/prometheus/prometheus/model/rulefmt"
	"gopkg.in/yaml.v3"
)

// severities are the alerts' severity labels: critical pages at once,
// warning waits for working hours.
var severities = []string{"critical", "warning"}

// checkRules parses every rules file in dir as Prometheus loads it (unknown
// fields refused, every expression parsed as PromQL, every template
// parsed), then checks that each alert says how long it must hold, how
// severe it is, and what it means.
func checkRules(dir string) []error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yml"))
	if err != nil {
		return []error{err}
	}
	if len(files) == 0 {
		return []error{fmt.Errorf("%s: no rules file (*.yml)", dir)}
	}
	var errs []error
	for _, file := range files {
		groups, parseErrs := rulefmt.ParseFile(file, false)
		if len(parseErrs) > 0 {
			errs = append(errs, parseErrs...)
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
