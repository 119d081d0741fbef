package db

import (
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
