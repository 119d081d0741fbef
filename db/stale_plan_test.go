package db_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
)

// A column a migration adds while the build serves makes stale every
// statement a connection prepared that reads the table whole (SELECT *):
// PostgreSQL fails each once with 0A000 "cached plan must not change result
// type" and pgx drops it. InTx runs the transaction again until its
// statements are prepared afresh, however many it meets (more than
// txAttempts here), and a statement outside a transaction fails as
// unavailable (503, the caller's retry), once (review r25 MED-1).
func TestInTxRunsAgainOnStatementsAColumnAddedMadeStale(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	s := dbtest.New(t)
	ctx := context.Background()
	// One connection, so that each statement is prepared once and stale there.
	pool, err := db.Open(ctx, s.Pool().Config().ConnString(), 1)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = pool.Exec(ctx, `CREATE TABLE stale_plan (id int PRIMARY KEY, a text NOT NULL)`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO stale_plan VALUES (1, 'x')`)
	require.NoError(t, err)
	const statements = 5
	runs := 0
	reads := func(tx pgx.Tx) error {
		runs++
		for i := range statements {
			rows, err := tx.Query(ctx, fmt.Sprintf(`SELECT * FROM stale_plan WHERE id = $1 AND %d = %d`, i, i), 1)
			if err != nil {
				return err
			}
			if _, err := pgx.CollectRows(rows, pgx.RowToMap); err != nil {
				return err
			}
		}
		return nil
	}
	require.NoError(t, db.InTx(ctx, pool, reads))
	outside := func() error {
		_, err := pool.Exec(ctx, `SELECT * FROM stale_plan WHERE id = $1`, 1)
		return db.Classify(err)
	}
	require.NoError(t, outside())

	_, err = pool.Exec(ctx, `ALTER TABLE stale_plan ADD COLUMN b int`)
	require.NoError(t, err)

	runs = 0
	require.NoError(t, db.InTx(ctx, pool, reads))
	require.Equal(t, statements+1, runs, "a run per stale statement, then the one that succeeds")
	require.ErrorIs(t, outside(), pix.ErrUnavailable)
	require.NoError(t, outside())
}
