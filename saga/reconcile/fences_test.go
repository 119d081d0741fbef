package reconcile_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/saga/reconcile"
)

// Every run says which of the database's fences of the books is not in
// force (reconcile.sql, Fences): a trigger disabled, firing on a
// replica only, dropped, or calling another function; on every table of
// the books, one a saga adds to account_movements included. The books may
// still balance: a fence down is reported beside the differences. And a
// fence written since the last run, even put back as it was (disabled,
// written past, enabled again between two runs), is reported once, by the
// run that follows (0041).
func TestReconcileReportsAFenceDown(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 100_000)
	dbtest.CreditNth(t, s, 1, "acc-1", 1_000)
	exec := func(sql string) {
		t.Helper()
		_, err := s.Pool().Exec(ctx, sql)
		require.NoError(t, err, sql)
	}
	r := reconcileOK(t, s)
	require.True(t, r.Fenced(), "every fence in force after the migrations: %v", r.FencesDown)
	require.Equal(t, []string{}, r.FencesDown)

	for _, c := range []struct {
		name          string
		down, up      []string
		want          []string
		stillBalanced bool
	}{
		{"an append-only trigger disabled",
			[]string{`ALTER TABLE pix_credits DISABLE TRIGGER pix_credits_append_only`},
			[]string{`ALTER TABLE pix_credits ENABLE TRIGGER pix_credits_append_only`},
			[]string{"pix_credits_append_only: disabled"}, true},
		{"a saga's table's no-delete trigger on replicas only",
			[]string{`ALTER TABLE pix_refund_reversals ENABLE REPLICA TRIGGER pix_refund_reversals_no_delete`},
			[]string{`ALTER TABLE pix_refund_reversals ENABLE TRIGGER pix_refund_reversals_no_delete`},
			[]string{"pix_refund_reversals_no_delete: fires on a replica only"}, true},
		{"every trigger of a table disabled",
			[]string{`ALTER TABLE pix_transfers DISABLE TRIGGER USER`},
			[]string{`ALTER TABLE pix_transfers ENABLE TRIGGER USER`},
			[]string{"pix_transfers_append_only: disabled", "pix_transfers_no_delete: disabled", "pix_transfers_xact_stamp: disabled"}, true},
		{"the settled sums' fence dropped",
			[]string{`DROP TRIGGER reconcile_settled_fence ON reconcile_settled`},
			[]string{`CREATE TRIGGER reconcile_settled_fence AFTER UPDATE ON reconcile_settled
				REFERENCING OLD TABLE AS old_sums NEW TABLE AS new_sums FOR EACH STATEMENT EXECUTE FUNCTION reconcile_settled_fence()`},
			[]string{"reconcile_settled_fence: missing"}, true},
		{"a guard calling another function",
			[]string{`CREATE FUNCTION let_through() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$`,
				`DROP TRIGGER reconcile_checkpoint_guard ON reconcile_checkpoint`,
				`CREATE TRIGGER reconcile_checkpoint_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON reconcile_checkpoint
				FOR EACH STATEMENT EXECUTE FUNCTION let_through()`},
			[]string{`DROP TRIGGER reconcile_checkpoint_guard ON reconcile_checkpoint`,
				`CREATE TRIGGER reconcile_checkpoint_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON reconcile_checkpoint
				FOR EACH STATEMENT EXECUTE FUNCTION reconcile_guard()`},
			[]string{"reconcile_checkpoint_guard: calls let_through, not reconcile_guard"}, true},
	} {
		for _, sql := range c.down {
			exec(sql)
		}
		r := reconcileOK(t, s)
		require.Equal(t, append(c.want, reconcile.FencesChanged), r.FencesDown, c.name)
		require.False(t, r.Fenced(), c.name)
		require.Equal(t, c.stillBalanced, r.Balanced(), c.name)
		require.Equal(t, c.want, reconcileOK(t, s).FencesDown, "%s, at the next run", c.name)
		for _, sql := range c.up {
			exec(sql)
		}
		require.Equal(t, []string{reconcile.FencesChanged}, reconcileOK(t, s).FencesDown, "%s, put back", c.name)
		require.Equal(t, []string{}, reconcileOK(t, s).FencesDown, "%s, put back, at the next run", c.name)
	}

	// Disabled, written past and enabled again between two runs: no run
	// saw it down, the next says its fences were written.
	exec(`ALTER TABLE pix_credits DISABLE TRIGGER pix_credits_append_only`)
	exec(`UPDATE pix_credits SET amount_cents = amount_cents WHERE account_id = 'acc-1'`)
	exec(`ALTER TABLE pix_credits ENABLE TRIGGER pix_credits_append_only`)
	require.Equal(t, []string{reconcile.FencesChanged}, reconcileOK(t, s).FencesDown, "a fence toggled between two runs")
	require.Equal(t, []string{}, reconcileOK(t, s).FencesDown)
	// A function of a fence replaced by one that lets everything through.
	exec(`CREATE OR REPLACE FUNCTION refuse_movement_change() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$`)
	require.Equal(t, []string{reconcile.FencesChanged}, reconcileOK(t, s).FencesDown, "a fence's function replaced")

	// A table a saga adds to the books without its triggers: both missing.
	var view string
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT pg_get_viewdef('account_movements')`).Scan(&view))
	exec(`CREATE TABLE pix_other_movements (account_id text NOT NULL, amount_cents bigint NOT NULL, id text NOT NULL,
		xact_id xid8 DEFAULT pg_current_xact_id())`)
	exec(`CREATE OR REPLACE VIEW account_movements (account_id, amount_cents, kind, ref, xact_id) AS ` +
		strings.TrimSuffix(strings.TrimSpace(view), ";") +
		` UNION ALL SELECT account_id, amount_cents, 'pix_other', id, xact_id FROM pix_other_movements`)
	require.Equal(t, []string{"pix_other_movements_append_only: missing", "pix_other_movements_no_delete: missing",
		"pix_other_movements_xact_stamp: missing", reconcile.FencesChanged},
		reconcileOK(t, s).FencesDown)
}

// asTheRun runs fn in a REPEATABLE READ transaction that says it is the
// reconciliation's run (0024's guard), as a script that knows the guard
// would, and rolls it back.
func asTheRun(t *testing.T, s *db.Store, isolation pgx.TxIsoLevel, fn func(tx pgx.Tx)) {
	t.Helper()
	ctx := context.Background()
	tx, err := s.Pool().BeginTx(ctx, pgx.TxOptions{IsoLevel: isolation})
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SELECT set_config('pix.reconcile', pg_current_xact_id()::text, true)`)
	require.NoError(t, err)
	fn(tx)
}

// refusedIn runs sql in tx, inside a savepoint it rolls back to, and
// requires a fence of the books to refuse it.
func refusedIn(t *testing.T, tx pgx.Tx, sql string, args ...any) {
	t.Helper()
	ctx := context.Background()
	_, err := tx.Exec(ctx, `SAVEPOINT refused`)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, sql, args...)
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "%s: want refused, got %v", sql, err)
	require.Equal(t, "23000", pgErr.Code, sql)
	_, err = tx.Exec(ctx, `ROLLBACK TO SAVEPOINT refused`)
	require.NoError(t, err)
}

// settleBy is the run's Settle (reconcile.sql) with $1 more
// centavos in each sum: the movements from the checkpoint to this
// snapshot's xmin, each account's added to its settled sum.
const settleBy = `UPDATE reconcile_settled s SET settled_cents = s.settled_cents + n.cents + $1
	FROM (SELECT account_id, sum(amount_cents) AS cents FROM account_movements
	      WHERE xact_id >= (SELECT settled_before FROM reconcile_checkpoint)
	        AND xact_id < pg_snapshot_xmin(pg_current_snapshot()) GROUP BY account_id) n
	WHERE s.account_id = n.account_id`

// A settled sum only advances with its checkpoint (0039), even written by
// a transaction that says it is the run: by exactly its account's
// movements from the checkpoint to the transaction's snapshot xmin, once,
// in REPEATABLE READ. Moved back, rewritten, settled twice or by a cent
// more, deleted: refused. The checkpoint never moves back nor past the
// snapshot xmin. The runs themselves settle through the fence.
func TestTheSettledSumsOnlyAdvanceWithTheirCheckpoint(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 100_000)
	dbtest.OpenAccount(t, s, "acc-2", 100_000)
	dbtest.CreditNth(t, s, 1, "acc-1", 1_000)
	dbtest.CreditNth(t, s, 2, "acc-2", 2_000)
	reconcileOK(t, s) // counts both accounts
	require.True(t, reconcileSettled(t, s).Balanced())
	dbtest.CreditNth(t, s, 3, "acc-1", 300)

	refusedByTheBooks(t, s, `DELETE FROM reconcile_settled WHERE account_id = 'acc-1'`)
	// Nor is money made by an opening balance changed with its balance,
	// which no recount could see (0044).
	refusedByTheBooks(t, s, `UPDATE accounts SET opening_balance_cents = opening_balance_cents + 500,
		balance_cents = balance_cents + 500 WHERE id = 'acc-1'`)
	asTheRun(t, s, pgx.RepeatableRead, func(tx pgx.Tx) {
		refusedIn(t, tx, `DELETE FROM reconcile_settled WHERE account_id = 'acc-1'`)
		refusedIn(t, tx, `UPDATE reconcile_settled SET settled_cents = settled_cents - 100 WHERE account_id = 'acc-1'`)
		refusedIn(t, tx, `UPDATE reconcile_settled SET settled_cents = 12345 WHERE account_id = 'acc-2'`)
		refusedIn(t, tx, `UPDATE reconcile_settled SET account_id = 'acc-3' WHERE account_id = 'acc-2'`)
		refusedIn(t, tx, `UPDATE reconcile_checkpoint SET settled_before = '1'::xid8`)
		refusedIn(t, tx, `UPDATE reconcile_checkpoint SET
			settled_before = (pg_snapshot_xmin(pg_current_snapshot())::text::bigint + 1000)::text::xid8`)
	})

	// The settling itself, once the new credit is below the snapshot
	// xmin (a transaction of another test may hold it back a while).
	deadline := time.Now().Add(time.Minute)
	settled := false
	for !settled {
		require.True(t, time.Now().Before(deadline), "the new credit below the snapshots' xmin within a minute")
		asTheRun(t, s, pgx.RepeatableRead, func(tx pgx.Tx) {
			var some bool
			require.NoError(t, tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM account_movements
				WHERE xact_id >= (SELECT settled_before FROM reconcile_checkpoint) AND xact_id < pg_snapshot_xmin(pg_current_snapshot()))`).Scan(&some))
			if !some {
				return
			}
			refusedIn(t, tx, settleBy, 1) // a cent more
			var from string
			require.NoError(t, tx.QueryRow(ctx, `SELECT settled_before::text FROM reconcile_checkpoint`).Scan(&from))
			tag, err := tx.Exec(ctx, settleBy, 0)
			require.NoError(t, err, "the run's settling")
			require.EqualValues(t, 1, tag.RowsAffected(), "acc-1's sum")
			// Twice, from where the checkpoint stood (the settling moved it:
			// 0064), and with pix.reconcile_settled reset, which 0039 trusted.
			_, err = tx.Exec(ctx, `SELECT set_config('pix.reconcile_settled', '', true)`)
			require.NoError(t, err)
			refusedIn(t, tx, strings.Replace(settleBy, `(SELECT settled_before FROM reconcile_checkpoint)`, `$2::xid8`, 1), 0, from)
			settled = true
		})
		time.Sleep(100 * time.Millisecond)
	}
	// Not in REPEATABLE READ: refused (the credit is below every snapshot's
	// xmin now, and not settled: the settling above was rolled back).
	asTheRun(t, s, pgx.ReadCommitted, func(tx pgx.Tx) {
		refusedIn(t, tx, settleBy, 0)
	})
	require.True(t, reconcileSettled(t, s).Balanced(), "the runs settle through the fence")
	require.Zero(t, queryInt64(t, s, settledWrong))
}
