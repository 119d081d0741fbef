package dbtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
)

// AddLaterColumns adds to each table columns no build reads, as a
// migration after the build under test would (docs/operations.md: the
// migrations run while the build before serves, and stay after a
// rollback): a jsonb and a numeric, filled on every row, so that reading
// the table whole meets them. The stores must read on, ignoring them.
func AddLaterColumns(t testing.TB, s *db.Store, tables ...string) {
	t.Helper()
	for _, table := range tables {
		_, err := s.Pool().Exec(context.Background(), `ALTER TABLE `+pgx.Identifier{table}.Sanitize()+`
			ADD COLUMN later_doc jsonb NOT NULL DEFAULT '{"k": [1]}',
			ADD COLUMN later_amount numeric DEFAULT 12345678901234567890.5`)
		require.NoError(t, err)
	}
}
