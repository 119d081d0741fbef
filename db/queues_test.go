package db

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/durable/rows"
)

// The statements built from each queue's declaration are the ones each saga
// once wrote by hand (testdata/due_queries_before.sql, frozen), statement
// for statement, but for the comments, the white space, the names ClaimDue
// gives its columns (which the hand copies returned by position, in the
// same order) and the rewrites listed here, each the same statement to
// PostgreSQL.
func TestDeclaredQueuesBuildTheStatementsWrittenByHand(t *testing.T) {
	body, err := os.ReadFile("testdata/due_queries_before.sql")
	require.NoError(t, err)
	before := splitNamed("due_queries_before.sql", string(body))
	// ClaimDue returns every key as text: a refund's id is text already,
	// and a cast of a text to text is no cast.
	rewrites := map[string][2]string{
		"refunds.ClaimDue": {"RETURNING m.id, 0,", "RETURNING m.id::text, 0,"},
	}

	built := map[string]string{}
	for _, q := range dueQueues {
		built[q.Name+".ClaimDue"] = q.claim
		built[q.Name+".MarkDispatched"] = q.markDispatched
		built[q.Name+".DeferDispatch"] = q.deferDispatch
	}
	// A queue declared since (none written by hand) has nothing to compare.
	require.Len(t, before, 9)
	for name, old := range before {
		want := oneLine(old)
		if r, ok := rewrites[name]; ok {
			require.Contains(t, want, r[0], name)
			want = strings.Replace(want, r[0], r[1], 1)
		}
		require.Contains(t, built, name, "every queue written by hand is declared")
		got := oneLine(built[name])
		if strings.HasSuffix(name, ".ClaimDue") {
			got = withoutColumnNames(t, got)
		}
		require.Equal(t, want, got, name)
		require.Equal(t, name, statementNames[built[name]], "traces name %s as before", name)
	}
}

func TestAQueueDeclarationIsCheckedWhenItIsBuilt(t *testing.T) {
	good := transferQueue.queue.QueueSpec
	_, err := buildQueue(good)
	require.NoError(t, err)
	for what, spoil := range map[string]func(*QueueSpec){
		"no table":              func(q *QueueSpec) { q.Table = "" },
		"a key that is SQL":     func(q *QueueSpec) { q.Key = "id; DROP TABLE x" },
		"another key type":      func(q *QueueSpec) { q.KeyType = "bigint" },
		"no open predicate":     func(q *QueueSpec) { q.Open = " " },
		"no drive":              func(q *QueueSpec) { q.Drive = "" },
		"no memo":               func(q *QueueSpec) { q.Listing.Memo = "" },
		"a signalled non-name":  func(q *QueueSpec) { q.Signalled = "n + 1" },
		"a not-before non-name": func(q *QueueSpec) { q.NotBefore = "now()" },
	} {
		spec := good
		spoil(&spec)
		_, err := buildQueue(spec)
		require.Error(t, err, what)
	}
}

// withoutColumnNames is claim (one line) less the names its RETURNING list
// gives the columns, having checked that it names each one as rows.Due's
// db tag, in rows.Due's order.
func withoutColumnNames(t *testing.T, claim string) string {
	t.Helper()
	statement, returning, ok := strings.Cut(claim, " RETURNING ")
	require.True(t, ok, claim)
	due := reflect.TypeFor[rows.Due]()
	for i := range due.NumField() {
		name := due.Field(i).Tag.Get("db")
		alias, end := " AS "+name+",", ","
		if i == due.NumField()-1 {
			alias, end = " AS "+name, ""
		}
		expr, rest, ok := strings.Cut(returning, alias)
		require.True(t, ok, "ClaimDue names rows.Due's %s next: %s", name, returning)
		require.True(t, i < due.NumField()-1 || rest == "", "nothing follows the last column: %q", rest)
		sep := " "
		if i == 0 {
			sep = " RETURNING "
		}
		statement += sep + expr + end
		returning = strings.TrimPrefix(rest, " ")
	}
	return statement
}

// Every declared queue is one exported Store method's (InboxQueue, ...),
// which the dispatchers are built from, and every such method's queue is
// declared: a queue is not declared and then left without its dispatcher's
// way in, nor built past the one list.
func TestEveryDeclaredQueueIsAStoreMethodsQueue(t *testing.T) {
	var s *Store
	byMethod := map[*dueQueue]string{}
	store := reflect.ValueOf(s)
	for i := range store.NumMethod() {
		m := store.Type().Method(i)
		if m.Type.NumIn() != 1 || m.Type.NumOut() != 1 || m.Type.Out(0) != reflect.TypeFor[DueQueue]() {
			continue
		}
		q := store.Method(i).Call(nil)[0].Interface().(DueQueue).queue
		require.True(t, slices.Contains(dueQueues, q), "Store.%s's queue %s is declared", m.Name, q.Name)
		_, twice := byMethod[q]
		require.False(t, twice, "Store.%s and Store.%s build the same queue", m.Name, byMethod[q])
		byMethod[q] = m.Name
	}
	for _, q := range dueQueues {
		_, ok := byMethod[q]
		require.True(t, ok, "queue %s is no Store method's", q.Name)
	}
}
