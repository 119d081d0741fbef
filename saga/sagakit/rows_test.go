package sagakit_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/saga/sagakit"
)

var errNoBlock = errors.New("no such block")

type blockRow struct {
	ID     int64  `db:"id"`
	Status string `db:"status"`
}

// One reads the one row a statement returns by column name; none is the
// saga's not-found error; the query's error, or a second row, is an error.
func TestOneReadsTheOneRowByName(t *testing.T) {
	ctx := context.Background()
	pool := dbtest.New(t).Pool()
	const rows = `SELECT * FROM (VALUES (1::bigint, 'active'), (2, 'released')) AS b (id, status) WHERE id <= $1 ORDER BY id DESC`

	one := func(query string, args ...any) (blockRow, error) {
		rs, err := pool.Query(ctx, query, args...)
		return sagakit.One[blockRow](rs, err, errNoBlock)
	}

	r, err := one(rows, 1)
	require.NoError(t, err)
	require.Equal(t, blockRow{ID: 1, Status: "active"}, r)

	_, err = one(rows, 0)
	require.ErrorIs(t, err, errNoBlock)
	_, err = one(rows, 2)
	require.Error(t, err)
	require.NotErrorIs(t, err, errNoBlock, "two rows are no row")
	_, err = one(`SELECT * FROM no_such_table`)
	require.Error(t, err)
	require.NotErrorIs(t, err, errNoBlock)
}
