package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"
)

// ruleFile is a Prometheus rules file as deploycheck reads it: every field
// of Prometheus's format (model/rulefmt, Prometheus 3.5), so that a field
// Prometheus does not know is refused here as it is there. The expressions
// and templates are promtool's to check (`promtool check rules`, which
// check_prometheus_rules runs right after deploycheck): Prometheus's parser
// would put PromQL and much of Prometheus in this module's cold build.
type ruleFile struct {
	Groups []ruleGroup `yaml:"groups"`
}

// ruleGroup is a group of a rules file.
type ruleGroup struct {
	Name        string            `yaml:"name"`
	Interval    promDuration      `yaml:"interval"`
	QueryOffset *promDuration     `yaml:"query_offset"`
	Limit       int               `yaml:"limit"`
	Rules       []rule            `yaml:"rules"`
	Labels      map[string]string `yaml:"labels"`
}

// rule is an alerting rule (Alert set) or a recording rule (Record set).
type rule struct {
	Record        string            `yaml:"record"`
	Alert         string            `yaml:"alert"`
	Expr          string            `yaml:"expr"`
	For           promDuration      `yaml:"for"`
	KeepFiringFor promDuration      `yaml:"keep_firing_for"`
	Labels        map[string]string `yaml:"labels"`
	Annotations   map[string]string `yaml:"annotations"`
}

// parseRuleFile reads and decodes the rules file, refusing unknown fields
// and what is no YAML. An empty file has no group, as for Prometheus.
func parseRuleFile(file string) (*ruleFile, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var rf ruleFile
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&rf); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return &rf, nil
}

// promDuration is a duration as Prometheus writes it (model.Duration).
type promDuration time.Duration

// UnmarshalYAML reads a duration as Prometheus does: a string, not a number.
func (d *promDuration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	v, err := parsePromDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = v
	return nil
}

// promDurationSyntax is Prometheus's duration syntax: units from the
// largest to the smallest, each at most once, each with a whole number.
var promDurationSyntax = regexp.MustCompile(`^(?:([0-9]+)y)?(?:([0-9]+)w)?(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?(?:([0-9]+)ms)?$`)

// promDurationUnits are the units of promDurationSyntax's groups, in order.
var promDurationUnits = []time.Duration{365 * 24 * time.Hour, 7 * 24 * time.Hour, 24 * time.Hour, time.Hour, time.Minute, time.Second, time.Millisecond}

// parsePromDuration parses a duration as github.com/prometheus/common's
// model.ParseDuration does (its package would bring protobuf here): "0"
// without a unit, otherwise promDurationSyntax, refusing an overflow.
func parsePromDuration(s string) (promDuration, error) {
	if s == "0" {
		return 0, nil
	}
	m := promDurationSyntax.FindStringSubmatch(s)
	if s == "" || m == nil {
		return 0, fmt.Errorf("not a valid duration string: %q", s)
	}
	var total uint64
	for i, unit := range promDurationUnits {
		if m[i+1] == "" {
			continue
		}
		v, err := strconv.ParseUint(m[i+1], 10, 63)
		if err != nil || v > 1<<63/uint64(unit) {
			return 0, fmt.Errorf("duration out of range: %q", s)
		}
		if total += v * uint64(unit); total > 1<<63-1 {
			return 0, fmt.Errorf("duration out of range: %q", s)
		}
	}
	return promDuration(total), nil
}
