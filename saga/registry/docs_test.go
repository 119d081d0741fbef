package registry_test

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/internal/durable"
	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/saga/registry"
	"github.com/pixbank/pix/saga/scheduled"
)

// The docs' tables that list the sagas, or what each saga has (its
// workflows, queue, versioning, metrics, events), are checked here against
// registry.All, so that a saga added, changed or removed without its rows
// fails under -short: docs/operations.md's table of the sagas (generated:
// go generate ./saga/registry), its versioning table, its metrics table,
// docs/events.md's events, and docs/extending.md's worked example. The
// alerts table of docs/operations.md is tools/deploycheck's (the rules
// files are read there).

// updateDocsEnv, set, makes TestTheSagasTableIsGenerated write the table
// rather than compare it (go generate ./saga/registry).
const updateDocsEnv = "PIX_UPDATE_DOCS"

const (
	operationsMD = "../../docs/operations.md"
	eventsMD     = "../../docs/events.md"
	extendingMD  = "../../docs/extending.md"
	beginSagas   = "<!-- sagas: generated from registry.All by go generate ./saga/registry; do not edit -->\n"
	endSagas     = "<!-- sagas: end -->\n"
)

// behaviour is how docs name a versioning behaviour.
func behaviour(v workflow.VersioningBehavior) string {
	switch v {
	case workflow.VersioningBehaviorPinned:
		return "pinned"
	case workflow.VersioningBehaviorAutoUpgrade:
		return "auto-upgrade"
	}
	return fmt.Sprintf("behaviour %d", v)
}

// sagasTable is docs/operations.md's table of the sagas all: each saga's
// workflow types, its task queue (the default names) and the older queues
// it is also registered on, what starts its runs, and how they follow a
// new build.
func sagasTable(e saga.Env, all []saga.Descriptor) string {
	var b strings.Builder
	b.WriteString("| saga | workflow types | task queue | runs started by | versioning |\n|---|---|---|---|---|\n")
	for _, d := range all {
		queue := "`" + e.Queues.Of(d.Family) + "`"
		for _, f := range d.AlsoOn {
			queue += ", also `" + e.Queues.Of(f) + "`"
		}
		started := "Schedules"
		if d.Source != nil {
			started = "its durable queue (`" + d.Source(e, e.Queues.Of(d.Family)).Kind + "`)"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", d.Name, ticked(slices.Sorted(maps.Keys(d.Workflows))), queue, started, behaviour(d.Versioning))
	}
	return b.String()
}

// ticked is names, each in backticks, comma-separated.
func ticked(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "`" + n + "`"
	}
	return strings.Join(out, ", ")
}

// sagasSection cuts docs/operations.md's text around its table of the
// sagas.
func sagasSection(t *testing.T) (before, table, after []byte) {
	t.Helper()
	text, err := os.ReadFile(operationsMD)
	require.NoError(t, err)
	before, rest, found := bytes.Cut(text, []byte(beginSagas))
	require.True(t, found, "docs/operations.md has no line %q", beginSagas)
	table, after, found = bytes.Cut(rest, []byte(endSagas))
	require.True(t, found, "docs/operations.md has no line %q after the table", endSagas)
	return before, table, after
}

// docs/operations.md's table of the sagas is registry.All's: written by go
// generate ./saga/registry (PIX_UPDATE_DOCS=1), compared here.
func TestTheSagasTableIsGenerated(t *testing.T) {
	before, current, after := sagasSection(t)
	want := sagasTable(env(t), registry.All)
	if os.Getenv(updateDocsEnv) != "" {
		updated := slices.Concat(before, []byte(beginSagas), []byte(want), []byte(endSagas), after)
		require.NoError(t, os.WriteFile(operationsMD, updated, 0o644))
		t.Logf("docs/operations.md: the table of the sagas written")
		return
	}
	require.Equal(t, want, string(current), "docs/operations.md's table of the sagas is not registry.All's: go generate ./saga/registry")
}

// versioningProblems are what docs/operations.md's versioning table
// ("Upgrading the workers") gets wrong of the sagas all: each saga is named
// once, by its descriptor's name in the first cell, with the behaviour its
// descriptor has; the reasons are the table's own.
func versioningProblems(t *testing.T, all []saga.Descriptor) []string {
	var problems []string
	named := map[string]string{}
	for _, row := range tableAfter(t, operationsMD, "### Upgrading the workers", "| saga | behaviour |") {
		names := backticked(row[0])
		if len(names) == 0 {
			problems = append(problems, fmt.Sprintf("row %q names no saga (its names in backticks)", row[0]))
		}
		for _, name := range names {
			if _, twice := named[name]; twice {
				problems = append(problems, fmt.Sprintf("saga %s in two rows", name))
			}
			named[name] = row[1]
		}
	}
	for _, d := range all {
		cell, ok := named[d.Name]
		delete(named, d.Name)
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("saga %s has no row", d.Name))
		case !regexp.MustCompile(`^(\*\*)?` + regexp.QuoteMeta(behaviour(d.Versioning)) + `\b`).MatchString(cell):
			problems = append(problems, fmt.Sprintf("saga %s is %s, its row says %q", d.Name, behaviour(d.Versioning), cell))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(named)) {
		problems = append(problems, fmt.Sprintf("a row of saga %s, which registry.All does not have", name))
	}
	return problems
}

// metricsProblems are what docs/operations.md's metrics table gets wrong
// of the sagas all: it names every saga's own metrics
// (saga.Descriptor.Collectors), and pix_dispatch_lag_seconds's rows every
// kind of durable queue their dispatchers start runs from, and no other.
func metricsProblems(t *testing.T, e saga.Env, all []saga.Descriptor) []string {
	var problems []string
	documented := map[string]bool{}
	var kinds []string
	for _, row := range tableAfter(t, operationsMD, "## Metrics and the dashboard", "| metric | where | what |") {
		for _, name := range backticked(row[0]) {
			name, _, _ = strings.Cut(name, "{")
			documented[name] = true
			if name == "pix_dispatch_lag_seconds" {
				_, listed, _ := strings.Cut(row[2], "`kind`")
				listed, _, _ = strings.Cut(listed, ")")
				// A saga may add a row of its own for its kind: rows
				// inserted, none edited (TestASagaFirstCommitEditsOnlyItsOwnFiles).
				kinds = append(kinds, backticked(listed)...)
			}
		}
	}
	var sources []string
	for _, d := range all {
		if d.Source != nil {
			sources = append(sources, d.Source(e, e.Queues.Of(d.Family)).Kind)
		}
		if d.Collectors == nil {
			continue
		}
		for _, name := range metricNames(t, d.Collectors(e)) {
			if !documented[name] {
				problems = append(problems, fmt.Sprintf("saga %s: metric %s has no row", d.Name, name))
			}
		}
	}
	slices.Sort(sources)
	slices.Sort(kinds)
	if !slices.Equal(sources, kinds) {
		problems = append(problems, fmt.Sprintf("pix_dispatch_lag_seconds's row names the kinds %v, the sagas' durable queues are %v", kinds, sources))
	}
	return problems
}

// fqName reads a metric's name from its description.
var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// metricNames are the names of the metrics cs describe.
func metricNames(t *testing.T, cs []prometheus.Collector) []string {
	t.Helper()
	var names []string
	for _, c := range cs {
		ch := make(chan *prometheus.Desc, 64)
		c.Describe(ch)
		close(ch)
		for desc := range ch {
			m := fqName.FindStringSubmatch(desc.String())
			require.NotNil(t, m, "a description without a name: %s", desc)
			names = append(names, m[1])
		}
	}
	return names
}

// eventsProblems are what docs/events.md's table of the events gets
// wrong of the sagas all: it lists every saga's event types
// (saga.Descriptor.Events), and only those.
func eventsProblems(t *testing.T, all []saga.Descriptor) []string {
	documented := map[string]bool{}
	for _, row := range tableAfter(t, eventsMD, "# Events: the transactional outbox", "| event ") {
		for _, typ := range backticked(row[0]) {
			documented[typ] = true
		}
	}
	var problems []string
	for _, d := range all {
		for _, typ := range slices.Sorted(maps.Keys(d.Events)) {
			if !documented[typ] {
				problems = append(problems, fmt.Sprintf("saga %s: event type %s has no row", d.Name, typ))
			}
			delete(documented, typ)
		}
	}
	for _, typ := range slices.Sorted(maps.Keys(documented)) {
		problems = append(problems, fmt.Sprintf("a row of event type %s, which no saga declares", typ))
	}
	return problems
}

// The hand-written tables that list the sagas, or what each has, list
// registry.All's: docs/operations.md's versioning and metrics tables,
// docs/events.md's events.
func TestTheDocsTablesListEverySaga(t *testing.T) {
	e := env(t)
	require.Empty(t, versioningProblems(t, registry.All), "docs/operations.md's versioning table (### Upgrading the workers)")
	require.Empty(t, metricsProblems(t, e, registry.All), "docs/operations.md's metrics table (## Metrics and the dashboard)")
	require.Empty(t, eventsProblems(t, registry.All), "docs/events.md's table of the events")
}

// A saga added to registry.All without its rows fails every check above:
// here a cautionary block, declared like the scheduled PIX, with a
// workflow, a durable queue, a metric and an event of its own.
func TestASagaWithoutItsRowsFailsTheDocsChecks(t *testing.T) {
	e := env(t)
	block := scheduled.Saga
	block.Name = "block"
	block.Versioning = workflow.VersioningBehaviorPinned
	block.Workflows = map[string]any{"PixBlock": scheduled.Workflow}
	block.Source = func(env saga.Env, taskQueue string) durable.Source {
		src := scheduled.Saga.Source(env, taskQueue)
		src.Kind = "block"
		return src
	}
	block.Collectors = func(saga.Env) []prometheus.Collector {
		return []prometheus.Collector{prometheus.NewGauge(prometheus.GaugeOpts{Name: "pix_block_open", Help: "Blocks open."})}
	}
	block.Events = map[string]string{"pix.block.created": "pix_block"}
	all := append(slices.Clone(registry.All), block)

	_, current, _ := sagasSection(t)
	require.NotEqual(t, sagasTable(e, all), string(current), "the generated table")
	for what, problems := range map[string][]string{
		"versioning": versioningProblems(t, all),
		"metrics":    metricsProblems(t, e, all),
		"events":     eventsProblems(t, all),
	} {
		require.NotEmpty(t, problems, what)
		require.Contains(t, strings.Join(problems, "\n"), "block", what)
	}
}

// docs/extending.md's table of the descriptor's fields shows the scheduled
// PIX's as they are.
func TestTheWorkedExampleIsTheScheduledPIX(t *testing.T) {
	example := map[string]string{}
	for _, row := range tableAfter(t, extendingMD, "## The descriptor", "| field | the scheduled PIX's |") {
		example[row[0]] = row[1]
	}
	d := scheduled.Saga
	require.Equal(t, fmt.Sprintf("`%q`", d.Name), example["`Name`"])
	require.Contains(t, example["`Versioning`"], map[workflow.VersioningBehavior]string{
		workflow.VersioningBehaviorPinned: "VersioningBehaviorPinned", workflow.VersioningBehaviorAutoUpgrade: "VersioningBehaviorAutoUpgrade"}[d.Versioning])
	require.Equal(t, []string{scheduled.WorkflowName}, slices.Collect(maps.Keys(d.Workflows)))
	require.Equal(t, "`{WorkflowName: Workflow}`", example["`Workflows`"])
	require.True(t, slices.ContainsFunc(registry.All, func(r saga.Descriptor) bool { return r.Name == d.Name }), "the worked example is not in registry.All")
}

// tableAfter is the first markdown table of file after the line heading
// whose header row starts with header: its rows' cells, trimmed, the
// header and separator rows left out.
func tableAfter(t *testing.T, file, heading, header string) [][]string {
	t.Helper()
	text, err := os.ReadFile(file)
	require.NoError(t, err)
	lines := strings.Split(string(text), "\n")
	at := slices.Index(lines, heading)
	require.NotEqual(t, -1, at, "%s: no line %q", file, heading)
	start := slices.IndexFunc(lines[at:], func(l string) bool { return strings.HasPrefix(l, header) })
	require.NotEqual(t, -1, start, "%s: no table %q after %q", file, header, heading)
	var rows [][]string
	for _, line := range lines[at+start+2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		rows = append(rows, cells(line))
	}
	require.NotEmpty(t, rows, "%s: table %q has no row", file, header)
	width := len(cells(lines[at+start]))
	for _, row := range rows {
		require.Len(t, row, width, "%s: a row of %d cells in a table of %d: %q", file, len(row), width, row)
	}
	return rows
}

// cells splits a table row on its unescaped pipes.
func cells(line string) []string {
	var out []string
	var cell strings.Builder
	escaped := false
	for _, r := range strings.TrimSpace(line) {
		switch {
		case escaped:
			cell.WriteRune(r)
			escaped = false
		case r == '\\':
			cell.WriteRune(r)
			escaped = true
		case r == '|':
			out = append(out, strings.TrimSpace(cell.String()))
			cell.Reset()
		default:
			cell.WriteRune(r)
		}
	}
	return out[1:] // before the row's first pipe: nothing
}

// backticked are the strings in backticks of s.
func backticked(s string) []string {
	var out []string
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}
