package db_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
)

// Found by the attack review of issue 16: 0014_trace_context.sql's four
// ALTER TABLEs were one transaction: it took inbox_messages' ACCESS
// EXCLUSIVE lock first and kept it while it waited, up to 5 s each, for
// pix_transfers, pix_refunds and outbox_events. Each table has a
// transaction of its own now. Two ordinary transactions that each hold a table for
// less than the timeout (a relay round waiting for its acknowledgements
// holds outbox rows FOR UPDATE up to its 5 s ack timeout; the
// reconciliation reads the movements' tables) stall every webhook for the
// sum of the waits (~9 s here, up to ~15 s); now, for none of them.
func TestTraceContextMigrationNeverHoldsTheInboxWhileItWaits(t *testing.T) {
	ctx := context.Background()
	url := dbtest.EmptyURL(t)
	pool := openPool(t, url)
	files, err := db.Migrations()
	require.NoError(t, err)
	var before []db.Migration
	for _, f := range files {
		if f.Version < 14 {
			before = append(before, f)
		}
	}
	_, err = db.MigrateFS(ctx, pool, migrationFS(before))
	require.NoError(t, err)
	someRows(t, pool)

	// hold takes lock on table in its own transaction, for d.
	hold := func(table string, d time.Duration) <-chan struct{} {
		locked := make(chan struct{})
		go func() {
			conn, err := pool.Acquire(ctx)
			if err != nil {
				t.Error(err)
				close(locked)
				return
			}
			defer conn.Release()
			_ = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, "LOCK TABLE "+table+" IN ROW SHARE MODE"); err != nil {
					t.Error(err)
				}
				close(locked)
				time.Sleep(d)
				return nil
			})
		}()
		return locked
	}
	<-hold("pix_transfers", 4500*time.Millisecond) // each under 0014's lock_timeout of 5 s
	<-hold("outbox_events", 9*time.Second)

	migrated := make(chan error, 1)
	migrator := openPool(t, url)
	go func() { _, err := db.Migrate(ctx, migrator); migrated <- err }()
	time.Sleep(300 * time.Millisecond) // the migration has inbox_messages now

	// A webhook's insert, as Receive makes it.
	start := time.Now()
	_, err = pool.Exec(ctx, `INSERT INTO inbox_messages (end_to_end_id, account_id, amount_cents, payload, dispatch_due_at)
		VALUES ('E1234567820261129120000000000009', 'acc-legacy', 900, '{}', now())`)
	require.NoError(t, err)
	stalled := time.Since(start)
	require.NoError(t, <-migrated)
	t.Logf("a webhook's insert waited %s behind 0014", stalled.Round(100*time.Millisecond))
	require.Less(t, stalled, 5*time.Second, "0014 holds the inbox longer than its lock_timeout promises")
}

// Found by the attack review of issue 16: a database the earlier runner
// migrated, whose schema_migrations names a version otherwise than this
// build does, is refused by pixd migrate (adoptLegacy), while pixd migrate
// status reported no problem (its exit status, 3 then, said "pending, nothing else
// wrong: pixd migrate applies them"). It names the problem now, and
// Migrate's refusal is ErrMigrationsRefused, not "unavailable".
func TestStatusSaysWhatMigrateRefusesOfALegacyName(t *testing.T) {
	ctx := context.Background()
	pool := openPool(t, dbtest.EmptyURL(t))
	legacyMigrate(t, pool, legacyLastVersion)
	_, err := pool.Exec(ctx, `UPDATE schema_migrations SET name = '0011_refund_notices.sql' WHERE version = 11`)
	require.NoError(t, err)

	report, err := db.MigrationStatus(ctx, pool)
	require.NoError(t, err)
	_, migrateErr := db.Migrate(ctx, pool)
	t.Logf("status: problems %q, %d pending; migrate: %v", report.Problems(), len(report.Pending()), migrateErr)
	require.ErrorIs(t, migrateErr, db.ErrMigrationsRefused)
	require.NotContains(t, migrateErr.Error(), "unavailable", "a refusal is no outage: retrying changes nothing")
	require.NotEmpty(t, report.Problems(), "status must say what pixd migrate refuses")
}

// Found by the attack review of issue 16: the checksum (and so SHA256SUMS
// and migration_checksums) left out every line that holds "+goose", on the
// ground that an annotation "does not change what it does". Some
// annotations do: "-- +goose Down"
// ends the Up part, so an edit that slips one into a committed migration
// passed TestCommittedMigrationsAreUnchanged and pixd migrate status said
// "ok", while a database migrated from nothing (a new environment, a
// rebuilt replica of the schema, every test schema) no longer gets the
// statements below it.
func TestAnAnnotationThatChangesWhatRunsChangesTheChecksum(t *testing.T) {
	ctx := context.Background()
	recorded := recordedChecksums(t)
	cut := edited(t, "0014_trace_context.sql", func(sql string) string {
		last := strings.LastIndex(sql, "-- +goose StatementBegin")
		return sql[:last] + "-- +goose Down\n" + sql[last:]
	})
	problems := checksumProblems(cut, recorded)

	pool := openPool(t, dbtest.EmptyURL(t))
	_, err := db.MigrateFS(ctx, pool, migrationFS(cut))
	require.NoError(t, err)
	var has bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'outbox_events' AND column_name = 'traceparent')`).Scan(&has))
	t.Logf("checksum problems: %q; outbox_events.traceparent exists: %v", problems, has)
	require.False(t, has)
	require.NotEmpty(t, problems, "a migration that no longer does what it did passes the committed-checksum check")
}

// Found by the attack review of issue 16: docs/operations.md: "a binary
// from before goose that starts afterwards finds its migrations applied and
// does nothing". Only when schema_migrations records every migration that
// binary has: goose now records in it what it applies, on a database the
// earlier runner migrated. The
// last release of the earlier runner (5a98ebc) ships 0012; a database that
// came to this release from one with migrations up to 0011 has 0012 applied
// by goose only, so the earlier binary's pixd migrate (a rollback of one
// release) runs 0012 again: its UPDATE marks every refund created since as
// already sent to the PSP (psp_asked_at), which takes the automatic reversal
// on a PSP refusal away from each of them (a human must act).
func TestTheEarlierRunnerFindsWhatGooseApplied(t *testing.T) {
	ctx := context.Background()
	pool := openPool(t, dbtest.EmptyURL(t))
	legacyMigrate(t, pool, legacyLastVersion)
	_, err := db.Migrate(ctx, pool)
	require.NoError(t, err)
	someRows(t, pool)
	_, err = pool.Exec(ctx, `INSERT INTO pix_refunds (id, end_to_end_id, account_id, amount_cents, balance_after_cents, dispatch_due_at)
		VALUES ('r1', 'E1234567820261129120000000000001', 'acc-legacy', 100, 1400, now())`)
	require.NoError(t, err)

	// 5a98ebc's runner, as legacyMigrate runs it, with its 0012.
	files, err := db.Migrations()
	require.NoError(t, err)
	var m12 db.Migration
	for _, f := range files {
		if f.Version == 12 {
			m12 = f
		}
	}
	ran := false
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, legacyIsApplied, m12.Version).Scan(&exists); err != nil || exists {
			return err
		}
		ran = true
		if _, err := tx.Exec(ctx, db.WithoutAnnotations(m12.SQL)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, legacyRecordApplied, m12.Version, m12.Name)
		return err
	})
	require.NoError(t, err)
	var asked bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT psp_asked_at IS NOT NULL FROM pix_refunds WHERE id = 'r1'`).Scan(&asked))
	t.Logf("the earlier runner ran 0012 again: %v; a refund never sent now reads as asked: %v", ran, asked)
	require.False(t, ran, "the earlier binary runs a migration goose applied")
}
