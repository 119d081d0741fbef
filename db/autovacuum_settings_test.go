package db_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db/dbtest"
)

// The tables that grow with every PIX are vacuumed after a number of rows,
// not a fifth of the table (migration 0065; docs/benchmarks.md, "Autovacuum
// of the growing tables"): with the server's defaults a 100-million-row
// inbox piles up 20 million dead rows, and a credits table 20 million
// unvacuumed inserts, before autovacuum runs at all.
func TestTheGrowingTablesAreAutovacuumedByRowCountAfterMigrate(t *testing.T) {
	s := dbtest.New(t)
	queues := []string{
		"autovacuum_vacuum_scale_factor=0",
		"autovacuum_vacuum_threshold=5000",
		"autovacuum_vacuum_insert_scale_factor=0",
		"autovacuum_vacuum_insert_threshold=50000",
		"autovacuum_analyze_scale_factor=0",
		"autovacuum_analyze_threshold=50000",
	}
	want := map[string][]string{
		"inbox_messages":   queues,
		"outbox_events":    queues,
		"idempotency_keys": queues,
		// Insert-only (I1: a credit is never updated nor deleted): no dead
		// rows to count, only the inserts that leave pages out of the
		// visibility map.
		"pix_credits": queues[2:],
	}
	for table, options := range want {
		var got []string
		err := s.Pool().QueryRow(context.Background(),
			`SELECT COALESCE(reloptions, '{}') FROM pg_class WHERE oid = to_regclass($1)`, table).Scan(&got)
		require.NoError(t, err, table)
		require.ElementsMatch(t, options, got, "%s's storage parameters", table)
	}
}
