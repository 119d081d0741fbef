package reconcile_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/saga/reconcile"
)

// The reconciliation finds each kind of difference it checks for: its
// statements were rewritten to be bounded by their indexes
// (db/plans), and must still find what they found.
func TestReconcileFindsEachDifference(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	for _, id := range []string{"acc-1", "acc-2", "acc-3"} {
		dbtest.OpenAccount(t, s, id, 100_000)
	}
	dbtest.CreditNth(t, s, 1, "acc-1", 1_000) // in order
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := s.Pool().Exec(ctx, sql, args...)
		require.NoError(t, err)
	}

	// Done with no credit (I3).
	_, err := s.Receive(ctx, dbtest.Notice(dbtest.E2EID(2), "acc-1", 2_000))
	require.NoError(t, err)
	exec(`UPDATE inbox_messages SET status = 'done', dispatch_due_at = NULL, processed_at = now() WHERE end_to_end_id = $1`, dbtest.E2EID(2))
	// Credited, but its inbox row pending, or failed (I3).
	dbtest.CreditNth(t, s, 3, "acc-1", 3_000)
	exec(`UPDATE inbox_messages SET status = 'pending', dispatch_due_at = now() WHERE end_to_end_id = $1`, dbtest.E2EID(3))
	dbtest.CreditNth(t, s, 4, "acc-1", 4_000)
	exec(`UPDATE inbox_messages SET status = 'failed' WHERE end_to_end_id = $1`, dbtest.E2EID(4))
	// A balance that is not its movements' (I2).
	exec(`UPDATE accounts SET balance_cents = balance_cents + 1 WHERE id = 'acc-2'`)
	// Refunds over the credit (I9), which unbalances their account too:
	// a devolução written past the check (a movement is never changed:
	// 0024's trigger), without its debit.
	over := dbtest.CreditNth(t, s, 5, "acc-3", 10_000)
	_, err = refund(t, s, over, 6_000, anyone)
	require.NoError(t, err)
	exec(`INSERT INTO pix_refunds (id, end_to_end_id, account_id, amount_cents, status, balance_after_cents, dispatch_due_at)
		VALUES ('D0000000000000000000000000000099', $1, 'acc-3', 14000, 'debited', 0, now())`, over)

	rec, err := reconcile.NewStore(s).Reconcile(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{dbtest.E2EID(2)}, rec.DoneWithoutCredit)
	require.Equal(t, []string{dbtest.E2EID(3), dbtest.E2EID(4)}, rec.CreditWithoutDone)
	require.Equal(t, []string{over}, rec.RefundsOverCredit)
	require.Equal(t, []string{"acc-2", "acc-3"}, rec.UnbalancedAccounts)
	require.Empty(t, rec.RefundContradictions)
}
