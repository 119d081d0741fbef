package db

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The statements built from each queue's declaration are the ones each saga
// once wrote by hand (testdata/due_queries_before.sql, frozen), statement
// for statement, but for the comments, the white space and the rewrites
// listed here, each the same statement to PostgreSQL.
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
	require.Len(t, before, 9)
	require.Len(t, built, len(before), "every queue written by hand is declared, and no other")
	for name, old := range before {
		want := oneLine(old)
		if r, ok := rewrites[name]; ok {
			require.Contains(t, want, r[0], name)
			want = strings.Replace(want, r[0], r[1], 1)
		}
		require.Contains(t, built, name)
		require.Equal(t, want, oneLine(built[name]), name)
		require.Equal(t, name, statementNames[built[name]], "traces name %s as before", name)
	}
}

func TestAQueueDeclarationIsCheckedWhenItIsBuilt(t *testing.T) {
	good := transferQueue.QueueSpec
	_, err := buildQueue(good)
	require.NoError(t, err)
	for what, spoil := range map[string]func(*QueueSpec){
		"no table":             func(q *QueueSpec) { q.Table = "" },
		"a key that is SQL":    func(q *QueueSpec) { q.Key = "id; DROP TABLE x" },
		"another key type":     func(q *QueueSpec) { q.KeyType = "bigint" },
		"no open predicate":    func(q *QueueSpec) { q.Open = " " },
		"no drive":             func(q *QueueSpec) { q.Drive = "" },
		"no memo":              func(q *QueueSpec) { q.Listing.Memo = "" },
		"a signalled non-name": func(q *QueueSpec) { q.Signalled = "n + 1" },
	} {
		spec := good
		spoil(&spec)
		_, err := buildQueue(spec)
		require.Error(t, err, what)
	}
}
