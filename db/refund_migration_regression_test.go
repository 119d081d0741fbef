package db_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
	refundsaga "github.com/pixbank/pix/saga/refund"
)

// earlierRelease is a database as a release before the migration of
// version left it, holding s's rows: a store over a schema of its own,
// built by the embedded migrations below version, in order (db.MigrateFS,
// with the runner's records of them), into whose every table s's table of
// the same name is copied, in the columns both have, parents before
// children, each sequence then set past the rows. So a test writes its
// rows with today's code, then migrates them as an upgrade from that
// release would; nothing is written by hand for a migration, old or new.
func earlierRelease(t *testing.T, s *db.Store, version int64) *db.Store {
	t.Helper()
	ctx := context.Background()
	pool := migratedBelow(t, version)
	var from, to string
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT current_schema()`).Scan(&from))
	require.NoError(t, pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&to))
	tables := tablesParentsFirst(t, pool, to)
	for _, table := range tables {
		var columns []string
		require.NoError(t, pool.QueryRow(ctx, `
			SELECT coalesce(array_agg(quote_ident(a.attname) ORDER BY a.attnum), '{}')
			FROM pg_attribute a
			WHERE a.attrelid = to_regclass(quote_ident($2) || '.' || quote_ident($3)) AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
			  AND EXISTS (SELECT 1 FROM pg_attribute f WHERE f.attrelid = to_regclass(quote_ident($1) || '.' || quote_ident($3))
			              AND f.attname = a.attname AND f.attnum > 0 AND NOT f.attisdropped)`, from, to, table).Scan(&columns))
		if len(columns) == 0 {
			continue // a table the later migrations dropped: nothing to copy
		}
		list := strings.Join(columns, ", ")
		_, err := pool.Exec(ctx, fmt.Sprintf(`INSERT INTO %s.%s (%s) OVERRIDING SYSTEM VALUE SELECT %s FROM %s.%s`,
			pgx.Identifier{to}.Sanitize(), pgx.Identifier{table}.Sanitize(), list, list, pgx.Identifier{from}.Sanitize(), pgx.Identifier{table}.Sanitize()))
		require.NoError(t, err, "copy %s", table)
	}
	rows, err := pool.Query(ctx, `
		SELECT quote_ident(c.relname), quote_ident(a.attname), pg_get_serial_sequence(quote_ident(n.nspname) || '.' || quote_ident(c.relname), a.attname)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
		WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND pg_get_serial_sequence(quote_ident(n.nspname) || '.' || quote_ident(c.relname), a.attname) IS NOT NULL`, to)
	require.NoError(t, err)
	sequences, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Table, Column, Sequence string }])
	require.NoError(t, err)
	for _, q := range sequences {
		_, err := pool.Exec(ctx, fmt.Sprintf(`SELECT setval($1, max(%s)) FROM %s HAVING max(%s) IS NOT NULL`, q.Column, q.Table, q.Column), q.Sequence)
		require.NoError(t, err, "set %s past the rows", q.Sequence)
	}
	return db.NewStore(pool)
}

// migratedBelow is a schema of its own, empty, built by the embedded
// migrations below version, in order (db.MigrateFS, with the runner's
// records of them): a database as the release before version left it.
func migratedBelow(t *testing.T, version int64) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	all, err := db.Migrations()
	require.NoError(t, err)
	below := fstest.MapFS{}
	for _, m := range all {
		if m.Version < version {
			below[m.Name] = &fstest.MapFile{Data: []byte(m.SQL)}
		}
	}
	require.NotEmpty(t, below, "no migration below %d", version)
	pool, err := db.Open(ctx, dbtest.EmptyURL(t), 4)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = db.MigrateFS(ctx, pool, below)
	require.NoError(t, err)
	return pool
}

// tablesParentsFirst are the tables of schema, but the migration runner's
// own, each after those its foreign keys name.
func tablesParentsFirst(t *testing.T, pool *pgxpool.Pool, schema string) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		SELECT c.relname, coalesce(array_agg(DISTINCT p.relname) FILTER (WHERE p.relname IS NOT NULL AND p.oid <> c.oid), '{}')
		FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace
		LEFT JOIN pg_constraint f ON f.conrelid = c.oid AND f.contype = 'f'
		LEFT JOIN pg_class p ON p.oid = f.confrelid
		WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND c.relname NOT IN ('goose_db_version', 'migration_checksums')
		GROUP BY c.relname ORDER BY c.relname`, schema)
	require.NoError(t, err)
	parents := map[string][]string{}
	var names []string
	for rows.Next() {
		var name string
		var of []string
		require.NoError(t, rows.Scan(&name, &of))
		names = append(names, name)
		parents[name] = of
	}
	require.NoError(t, rows.Err())
	var ordered []string
	placed := map[string]bool{}
	for len(ordered) < len(names) {
		before := len(ordered)
		for _, name := range names {
			if !placed[name] && !slices.ContainsFunc(parents[name], func(p string) bool { return !placed[p] }) {
				ordered, placed[name] = append(ordered, name), true
			}
		}
		require.Greater(t, len(ordered), before, "the foreign keys of %v make a cycle", names)
	}
	return ordered
}

// migrationsFrom are the names of the embedded migrations from version
// on, in order: what migrating an earlierRelease(version) applies.
func migrationsFrom(t *testing.T, version int64) []string {
	t.Helper()
	all, err := db.Migrations()
	require.NoError(t, err)
	var names []string
	for _, m := range all {
		if m.Version >= version {
			names = append(names, m.Name)
		}
	}
	return names
}

// Found by the fourth attack review: psp_asked_at was once appended to the
// committed migration 0011, so a database that had applied 0011 before
// never got the column, and every devolução's saga failed before its PUT,
// for ever (42703). 0011 is back as first committed and the column comes
// in 0012: such a database gets it.
func TestDatabaseWithoutPSPAskedAtGetsIt(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 0)
	e2e := dbtest.CreditNth(t, s, 1, "acc-1", 10_000)
	r, err := refund(t, s, e2e, 1_000, anyone)
	require.NoError(t, err)
	// The schema 0011 as first committed left.
	s = earlierRelease(t, s, 12)

	applied, err := db.Migrate(ctx, s.Pool())
	require.NoError(t, err)
	require.Equal(t, migrationsFrom(t, 12), applied)
	_, err = refundsaga.NewStore(s).MarkRefundAsked(ctx, r.ID)
	require.NoError(t, err, "the saga's first statement runs")
}

// Found by the fourth attack review: a refund whose saga ran before
// psp_asked_at existed (its PUTs possibly sent, their answers lost:
// debited, no rtr_id) must not read as never asked after the upgrade, or a
// refusal of the next PUT would pass every check and reverse a devolução
// the PSP may have made. 0012 counts every refund there was as asked.
func TestRefundsOpenAtTheUpgradeCountAsAsked(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 0)
	e2e := dbtest.CreditNth(t, s, 1, "acc-1", 10_000)
	r, err := refund(t, s, e2e, 1_000, anyone)
	require.NoError(t, err)
	_, err = s.Pool().Exec(ctx, `UPDATE pix_refunds SET dispatched_at = now() - interval '1 hour' WHERE id = $1`, r.ID)
	require.NoError(t, err)
	s = earlierRelease(t, s, 12)

	_, err = db.Migrate(ctx, s.Pool())
	require.NoError(t, err)
	first, err := refundsaga.NewStore(s).MarkRefundAsked(ctx, r.ID)
	require.NoError(t, err)
	require.False(t, first, "a refund that existed at the upgrade counts as asked: a refusal of its next PUT needs a human (activities.RequestRefund)")
}

// A refund asked before psp_asks existed counts its one known ask: a
// refusal recorded after the upgrade stands, and stops standing at the
// next ask, as for a refund asked after it (without the count, that ask
// would count as the only one, and the refusal would stand on a PUT that
// may have made the devolução). A refusal recorded before the upgrade may
// have been recorded late, after another attempt's PUT, which nothing
// traced: it counts two and does not stand (a human looks; found by the
// third attack review).
func TestRefundsAskedBeforeTheAskCountCountOne(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 0)
	e2e := dbtest.CreditNth(t, s, 1, "acc-1", 10_000)
	asked, err := refund(t, s, e2e, 1_000, anyone)
	require.NoError(t, err)
	refused, err := refund(t, s, e2e, 2_000, anyone)
	require.NoError(t, err)
	s = earlierRelease(t, s, 17)
	// As the release before 0017 recorded them: the first refund's first
	// ask; the second's first ask and a refusal.
	_, err = s.Pool().Exec(ctx, `UPDATE pix_refunds SET psp_asked_at = now() WHERE id = $1`, asked.ID)
	require.NoError(t, err)
	_, err = s.Pool().Exec(ctx, `UPDATE pix_refunds SET psp_asked_at = now(), psp_refused_at = now(), psp_refusal = 'PixDevolucaoInvalida' WHERE id = $1`, refused.ID)
	require.NoError(t, err)

	applied, err := db.Migrate(ctx, s.Pool())
	require.NoError(t, err)
	require.Equal(t, migrationsFrom(t, 17), applied)

	_, stands, err := refundsaga.NewStore(s).StandingRefusal(ctx, refused.ID)
	require.NoError(t, err)
	require.False(t, stands, "a refusal recorded before asks were counted may have followed another PUT")
	_, err = refundsaga.NewStore(s).ReverseRefund(ctx, refused.ID, "refused", true)
	require.ErrorIs(t, err, pix.ErrRefundFinal, "reversed on a refusal that may have followed a second PUT")

	recorded, err := refundsaga.NewStore(s).MarkRefundRefused(ctx, asked.ID, "PixDevolucaoInvalida")
	require.NoError(t, err)
	require.True(t, recorded, "one ask known: its refusal is recorded")
	_, stands, err = refundsaga.NewStore(s).StandingRefusal(ctx, asked.ID)
	require.NoError(t, err)
	require.True(t, stands, "one ask known: the refusal stands")
	first, err := refundsaga.NewStore(s).MarkRefundAsked(ctx, asked.ID)
	require.NoError(t, err)
	require.False(t, first)
	_, stands, err = refundsaga.NewStore(s).StandingRefusal(ctx, asked.ID)
	require.NoError(t, err)
	require.False(t, stands, "asked again after the refusal")
	require.EqualValues(t, 10_000-1_000-2_000, dbtest.Balance(t, s, "acc-1"))
}
