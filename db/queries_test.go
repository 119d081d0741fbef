package db

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNamedQueriesSplitsOnNameLines(t *testing.T) {
	q := namedQueries("refunds.sql")
	require.NotEmpty(t, q)
	for name, sql := range q {
		require.NotEmpty(t, sql, name)
		require.NotContains(t, sql, "-- name:", name)
	}
}

func TestBindQueriesPanicsOnAMissingStatement(t *testing.T) {
	var dst struct{ NoSuchStatement string }
	require.Panics(t, func() { bindQueries("refunds.sql", &dst) })
}

// oneLine is sql with its comments dropped and its white space collapsed.
func oneLine(sql string) string {
	var b strings.Builder
	for line := range strings.Lines(sql) {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			b.WriteString(line)
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// A redelivery of a failed PIX re-drives it as RedriveFailed does: Receive
// writes RedriveFailed's SET list again, as CASEs on the row's status (an
// ON CONFLICT branch can't run another statement), and this keeps the two
// alike. A listing of the PSP catch-up ($11) never re-drives.
func TestReceiveRedrivesAsRedriveFailedDoes(t *testing.T) {
	const failedDelivery = "CASE WHEN inbox_messages.status = 'failed' AND NOT $11::boolean"
	redrive := oneLine(creditSQL.RedriveFailed)
	_, set, ok := strings.Cut(redrive, " SET ")
	require.True(t, ok)
	set, _, ok = strings.Cut(set, " FROM locked ")
	require.True(t, ok)
	receive := oneLine(creditSQL.Receive)
	assignments := strings.Split(set, ", ")
	require.Len(t, assignments, 5, set)
	for _, a := range assignments {
		column, value, ok := strings.Cut(a, " = ")
		require.True(t, ok, a)
		value = strings.ReplaceAll(value, "m.", "inbox_messages.")
		want := fmt.Sprintf("%s = %s THEN %s ELSE inbox_messages.%s END", column, failedDelivery, value, column)
		require.Contains(t, receive, want, "Receive re-drives a failed row as RedriveFailed does")
	}
	require.Equal(t, len(assignments), strings.Count(receive, "CASE WHEN inbox_messages.status = 'failed'"),
		"every re-drive CASE spares a listing")
	require.Equal(t, len(assignments), strings.Count(receive, failedDelivery),
		"Receive's re-drive sets what RedriveFailed's does, no more")
}

// Every statement of this package that writes an outbox event writes it
// with the schema version, an aggregate and an event type the package
// declares.
func TestEventsAreWrittenAsDeclared(t *testing.T) {
	// traceparent: the trace the relay's publish continues (see outbox.sql).
	insert := regexp.MustCompile(`INSERT INTO outbox_events \(aggregate_type, aggregate_id, event_type, payload, traceparent\) ` +
		`SELECT '([^']*)', [^,]+, '([^']*)', (?:jsonb_build_object\('schema_version', (\d+),|pix_hold_event\()`)
	files, err := fs.Glob(queryFiles, "queries/*.sql")
	require.NoError(t, err)
	written := map[string]bool{}
	for _, file := range files {
		for name, sql := range namedQueries(path.Base(file)) {
			sql = oneLine(sql)
			matches := insert.FindAllStringSubmatch(sql, -1)
			require.Equal(t, strings.Count(sql, "INSERT INTO outbox_events"), len(matches), "%s %s: an event written otherwise", file, name)
			for _, m := range matches {
				require.Contains(t, EventTypes, m[2], "%s %s: an event type not in EventTypes", file, name)
				require.Equal(t, EventTypes[m[2]], m[1], "%s %s: %s written for another aggregate", file, name, m[2])
				version := m[3]
				if version == "" { // the hold events' payload: pix_hold_event's
					version = holdEventSchemaVersion(t)
				}
				require.Equal(t, strconv.Itoa(EventSchemaVersion), version, "%s %s", file, name)
				written[m[2]] = true
			}
		}
	}
	// Every event type is written somewhere: checked over every saga's
	// statements where every saga is linked (saga/registry's
	// TestEventsAreWrittenAsDeclared), a saga of its own package writing
	// some of this package's (the transfer's settled and refunded).
	require.NotEmpty(t, written)
}

// holdEventSchemaVersion is the schema version of the payloads
// pix_hold_event builds (the hold statements' events), as the last
// migration that defines it writes it.
func holdEventSchemaVersion(t *testing.T) string {
	t.Helper()
	files, err := fs.Glob(migrationFiles, "migrations/*.sql")
	require.NoError(t, err)
	var def string
	for _, f := range files { // in the order of their numbers
		b, err := fs.ReadFile(migrationFiles, f)
		require.NoError(t, err)
		if strings.Contains(string(b), "FUNCTION pix_hold_event(") {
			def = oneLine(string(b))
		}
	}
	m := regexp.MustCompile(`FUNCTION pix_hold_event\(.*jsonb_build_object\('schema_version', (\d+),`).FindStringSubmatch(def)
	require.NotNil(t, m, "no migration defines pix_hold_event with its schema_version")
	return m[1]
}
