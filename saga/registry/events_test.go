package registry_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	_ "github.com/pixbank/pix/saga/registry" // every saga linked: its statements bound, its events declared
)

// Every statement of every saga (db.Statements: db's own and those of the
// sagas of their own packages, all linked here) that writes an outbox
// event writes it for an aggregate and an event type declared
// (db.EventTypes; or computed from a prefix of declared ones), with the
// schema version when it builds the payload
// there (a saga may build it in a function of its migration, as the
// scheduled PIX does), and every event type declared is written by some
// statement. (db's own test checks its own statements' events; only here
// is every writer linked.)
func TestEventsAreWrittenAsDeclared(t *testing.T) {
	// traceparent: the trace the relay's publish continues (see outbox.sql).
	insert := regexp.MustCompile(`INSERT INTO outbox_events \(aggregate_type, aggregate_id, event_type, payload, traceparent\) ` +
		`SELECT '([^']*)', [^,]+, '([^']*)', (?:jsonb_build_object\('schema_version', (\d+),)?`)
	// An event type the statement computes from a declared prefix ('pix.block.' ||
	// status: the block's end): it writes the prefix's declared types.
	computed := regexp.MustCompile(`INSERT INTO outbox_events \(aggregate_type, aggregate_id, event_type, payload, traceparent\) ` +
		`SELECT '([^']*)', [^,]+, '([^']*)' \|\| `)
	written := map[string]bool{}
	for _, st := range db.Statements() {
		sql := withoutComments(st.SQL)
		matches := insert.FindAllStringSubmatch(sql, -1)
		prefixed := computed.FindAllStringSubmatch(sql, -1)
		require.Equal(t, strings.Count(sql, "INSERT INTO outbox_events"), len(matches)+len(prefixed), "%s: an event written otherwise", st.Name)
		for _, m := range prefixed {
			n := 0
			for typ, aggregate := range db.EventTypes {
				if strings.HasPrefix(typ, m[2]) && aggregate == m[1] {
					written[typ] = true
					n++
				}
			}
			require.NotZero(t, n, "%s: no event type of %s declared for %s", st.Name, m[2], m[1])
		}
		for _, m := range matches {
			require.Contains(t, db.EventTypes, m[2], "%s: an event type not in EventTypes", st.Name)
			require.Equal(t, db.EventTypes[m[2]], m[1], "%s: %s written for another aggregate", st.Name, m[2])
			if m[3] != "" {
				require.Equal(t, strconv.Itoa(db.EventSchemaVersion), m[3], "%s", st.Name)
			}
			written[m[2]] = true
		}
	}
	for typ := range db.EventTypes {
		require.True(t, written[typ], "no statement writes %s", typ)
	}
}

// withoutComments is sql without its comment lines, its white space
// collapsed.
func withoutComments(sql string) string {
	var b strings.Builder
	for line := range strings.Lines(sql) {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			b.WriteString(line)
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}
