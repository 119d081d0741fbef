package reconcile_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/saga/reconcile"
)

// reconcileOK runs the reconciliation and returns what it found.
func reconcileOK(t *testing.T, s *db.Store) reconcile.Reconciliation {
	t.Helper()
	r, err := reconcile.NewStore(s).Reconcile(context.Background())
	require.NoError(t, err)
	return r
}

// reconcileSettled runs the reconciliation until a run finds no movement
// above its checkpoint: the snapshots' xmin is the cluster's, so a
// transaction of another test (another schema, another database of the
// server) that began before this test's movements holds them back from
// settling until it ends. Bounded: a minute.
func reconcileSettled(t *testing.T, s *db.Store) reconcile.Reconciliation {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		r := reconcileOK(t, s)
		if r.Progress.LiveMovements == 0 || time.Now().After(deadline) {
			require.Zero(t, r.Progress.LiveMovements, "movements still live after a minute of runs (xmin age %d)", r.Progress.XminAge)
			return r
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// reconcileFinding runs the reconciliation until found says a run found
// what the test made (held back as reconcileSettled's movements are), a
// minute at most, and returns that run.
func reconcileFinding(t *testing.T, s *db.Store, found func(reconcile.Reconciliation) bool) reconcile.Reconciliation {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		r := reconcileOK(t, s)
		if found(r) || time.Now().After(deadline) {
			return r
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The reconciliation runs from its checkpoint (migration 0024): each run
// sums only the movements since the last, yet every account is compared,
// and a difference found is found again at every run until it is gone.
func TestReconcileChecksFromItsCheckpoint(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := s.Pool().Exec(ctx, sql, args...)
		require.NoError(t, err)
	}
	dbtest.OpenAccount(t, s, "acc-1", 100_000)
	dbtest.OpenAccount(t, s, "acc-2", 100_000)
	// A credit from before 0024 (no xact_id), its balance with it: the first
	// run settles it, and no later run counts it again.
	exec(`UPDATE accounts SET balance_cents = balance_cents + 700 WHERE id = 'acc-2'`)
	exec(`INSERT INTO pix_credits (end_to_end_id, account_id, amount_cents, balance_after_cents, xact_id)
		VALUES ($1, 'acc-2', 700, 100700, NULL)`, dbtest.E2EID(90))
	dbtest.CreditNth(t, s, 1, "acc-1", 1_000)
	for i := range 3 {
		require.True(t, reconcileOK(t, s).Balanced(), "run %d", i+1)
	}
	dbtest.CreditNth(t, s, 2, "acc-1", 2_000)
	dbtest.CreditNth(t, s, 3, "acc-2", 3_000)
	require.True(t, reconcileSettled(t, s).Balanced(), "the new credits against the settled sums")

	var settled int64
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT settled_cents FROM reconcile_settled WHERE account_id = 'acc-2'`).Scan(&settled))
	require.Equal(t, int64(3_700), settled, "each movement settled once, the one from before 0024 too")

	// A balance that is not its movements' is found at every run, until
	// it is mended.
	exec(`UPDATE accounts SET balance_cents = balance_cents + 1 WHERE id = 'acc-2'`)
	for range 2 {
		require.Equal(t, []string{"acc-2"}, reconcileOK(t, s).UnbalancedAccounts)
	}
	exec(`UPDATE accounts SET balance_cents = balance_cents - 1 WHERE id = 'acc-2'`)
	require.True(t, reconcileOK(t, s).Balanced())

	// A row made done without its credit after the runs before: found by
	// the next, and by every run after it while it is so (the next ones
	// read only the rows done since, and the differences found).
	_, err := s.Receive(ctx, dbtest.Notice(dbtest.E2EID(4), "acc-1", 4_000))
	require.NoError(t, err)
	exec(`UPDATE inbox_messages SET status = 'done', dispatch_due_at = NULL, processed_at = clock_timestamp() WHERE end_to_end_id = $1`, dbtest.E2EID(4))
	r := reconcileFinding(t, s, func(r reconcile.Reconciliation) bool { return len(r.DoneWithoutCredit) > 0 })
	require.Equal(t, []string{dbtest.E2EID(4)}, r.DoneWithoutCredit)
	for range 2 {
		require.Equal(t, []string{dbtest.E2EID(4)}, reconcileOK(t, s).DoneWithoutCredit)
	}
	var doneXact *string
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT done_xact::text FROM inbox_messages WHERE end_to_end_id = $1`, dbtest.E2EID(4)).Scan(&doneXact))
	require.NotNil(t, doneXact, "a row made done carries the transaction that made it done, from which the runs read the done rows")
	exec(`DELETE FROM inbox_messages WHERE end_to_end_id = $1`, dbtest.E2EID(4)) // as the retention would
	require.True(t, reconcileOK(t, s).Balanced())
}

// A transaction that began before a run and commits after it: what it
// wrote is checked by a later run, although its rows' times and
// transaction id are older than that run. A checkpoint that moved past it
// (the last run's start, or its transaction id) would never see its done
// row, and would never sum its movement.
func TestReconcileSeesWhatALongTransactionCommitsLate(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 100_000)
	dbtest.CreditNth(t, s, 1, "acc-1", 1_000)
	_, err := s.Receive(ctx, dbtest.Notice(dbtest.E2EID(2), "acc-1", 2_000))
	require.NoError(t, err)
	for range 3 {
		require.True(t, reconcileOK(t, s).Balanced())
	}

	// The long transaction: a credit with its balance (the books as a
	// credit leaves them), and a row made done without one, its
	// processed_at read now.
	tx, err := s.Pool().Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(context.Background()) //nolint:errcheck // committed below
	_, err = tx.Exec(ctx, `UPDATE accounts SET balance_cents = balance_cents + 500 WHERE id = 'acc-1'`)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO pix_credits (end_to_end_id, account_id, amount_cents, balance_after_cents) VALUES ($1, 'acc-1', 500, 0)`, dbtest.E2EID(3))
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `UPDATE inbox_messages SET status = 'done', dispatch_due_at = NULL, processed_at = clock_timestamp() WHERE end_to_end_id = $1`, dbtest.E2EID(2))
	require.NoError(t, err)

	for range 2 { // runs that don't see it, and move their checkpoint
		require.True(t, reconcileOK(t, s).Balanced())
	}
	require.NoError(t, tx.Commit(ctx))

	r := reconcileOK(t, s)
	require.Empty(t, r.UnbalancedAccounts, "the late credit is summed with its balance")
	require.Equal(t, []string{dbtest.E2EID(2)}, r.DoneWithoutCredit, "the late done row is read")
	r = reconcileOK(t, s)
	require.Empty(t, r.UnbalancedAccounts, "and summed once")
	require.Equal(t, []string{dbtest.E2EID(2)}, r.DoneWithoutCredit)
}

// The books are append-only, as the checkpoint's settled sums need: a
// movement's account, amount and transaction never change, and none is
// deleted; its other columns may change (a devolução's status).
func TestTheBooksAreAppendOnly(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 100_000)
	e2e := dbtest.CreditNth(t, s, 1, "acc-1", 1_000)
	refused := func(sql string, args ...any) {
		t.Helper()
		_, err := s.Pool().Exec(ctx, sql, args...)
		var pgErr *pgconn.PgError
		require.True(t, errors.As(err, &pgErr), "%s: %v", sql, err)
		require.Equal(t, "23000", pgErr.Code, sql)
	}
	refused(`UPDATE pix_credits SET amount_cents = 2000 WHERE end_to_end_id = $1`, e2e)
	refused(`UPDATE pix_credits SET account_id = 'acc-1', amount_cents = amount_cents + 1 WHERE end_to_end_id = $1`, e2e)
	refused(`UPDATE pix_credits SET xact_id = NULL WHERE end_to_end_id = $1`, e2e)
	refused(`DELETE FROM pix_credits WHERE end_to_end_id = $1`, e2e)
	// CASCADE: with every table that refers to them (pix_holds, a saga's
	// own: a TRUNCATE of them alone is refused for that, 0A000, before
	// their triggers run), whichever tables a saga adds.
	refused(`TRUNCATE pix_refund_reversals, pix_refunds, pix_credits CASCADE`)
	refused(`DELETE FROM pix_transfers`)
	_, err := s.Pool().Exec(ctx, `UPDATE pix_credits SET credited_at = credited_at, account_id = account_id WHERE end_to_end_id = $1`, e2e)
	require.NoError(t, err, "an update that leaves the money as it is")
	require.True(t, reconcileOK(t, s).Balanced())
}
