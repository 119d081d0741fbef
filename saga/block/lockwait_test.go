package block_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/block"
)

// returnWhileLocked starts the block's return while another transaction
// holds a row the return locks (lock, with lockArg: the block's row, or
// the PIX's credit as another devolução or hold of the PIX does), waits
// until the return waits for it, then until ended (with args) says the
// deadline under test has ended, and lets the return go on: it returns
// the return's error.
func (f *fixture) returnWhileLocked(b block.Block, lock string, lockArg any, ended string, args ...any) error {
	t, ctx := f.t, context.Background()
	holder, err := f.s.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = holder.Rollback(ctx) }()
	_, err = holder.Exec(ctx, lock, lockArg)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, _, err := f.store.Return(ctx, b.ID, "operator-2")
		done <- err
	}()
	dbtest.WaitBlockedBy(t, f.s, holder.Conn().PgConn().PID())
	require.Eventually(t, func() bool {
		var passed bool
		require.NoError(t, f.s.Pool().QueryRow(ctx, ended, args...).Scan(&passed))
		return passed
	}, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, holder.Commit(ctx))
	return <-done
}

// lockCredit locks a PIX's credit as another devolução or hold of it does.
const lockCredit = `SELECT 1 FROM pix_credits WHERE end_to_end_id = $1 FOR NO KEY UPDATE`

// Issue 37, attack review r9 LOW-2: Return read the database's clock
// after the block's lock, then waited in db.RecordRefund for the PIX's
// credit (and the account's, the hold's locks): 72 hours that ended during
// that wait still handed the money to a devolução. The deadline is
// checked again after the last lock. Seen failing on the old Return (the
// return taken, its devolução recorded after expires_at).
func TestAReturnWhoseHoursEndWhileItWaitsForTheCreditIsRefused(t *testing.T) {
	f := newFixture(t)
	c, b := f.blocked(4_000)
	f.expiresIn(b, 700*time.Millisecond)
	err := f.returnWhileLocked(b, lockCredit, c.EndToEndID, `SELECT expires_at < clock_timestamp() FROM pix_blocks WHERE id = $1`, b.ID)
	require.ErrorIs(t, err, block.ErrReleased)
	f.requireUnchanged(c, b) // its run releases it, expired
}

// Issue 37, attack review r9 LOW-1: db.RecordRefund decided the PIX's
// 90-day devolução window by now() in the statement that waits for the
// credit's lock (LockCredit): a window that closed during the wait was
// still open. It is decided after the last lock, by the database's clock
// then. Seen failing on the old LockCredit (the devolução debited after
// the 90 days).
func TestTheRefundWindowIsDecidedAfterTheCreditsLockWait(t *testing.T) {
	f := newFixture(t)
	c, b := f.blocked(4_000)
	_, err := f.s.Pool().Exec(context.Background(), `UPDATE pix_credits SET received_at = now() - $2::interval + interval '700 milliseconds',
		credited_at = now() - $2::interval + interval '700 milliseconds' WHERE end_to_end_id = $1`, c.EndToEndID, pix.RefundWindow)
	require.NoError(t, err)
	err = f.returnWhileLocked(b, lockCredit, c.EndToEndID, `SELECT COALESCE(received_at, credited_at) + $2::interval < clock_timestamp() FROM pix_credits WHERE end_to_end_id = $1`,
		c.EndToEndID, pix.RefundWindow)
	require.ErrorIs(t, err, pix.ErrRefundWindowClosed)
	f.requireUnchanged(c, b) // a refused devolução changes nothing
}

// Attack review r10 LOW-2: a return whose block's 72 hours and PIX's
// 90-day devolução window both end while it waits for the credit was
// answered the devolução's refusal (pix.ErrRefundWindowClosed, 422),
// checked in db.RecordRefund before the block's 72 hours were checked
// again: a block past its 72 hours is the expiry's, released (409
// block_released), as every other late return is answered. Seen failing on
// the old Return (refund window closed).
func TestAReturnWhoseHoursAndWindowEndWhileItWaitsIsReleased(t *testing.T) {
	f := newFixture(t)
	c, b := f.blocked(4_000)
	_, err := f.s.Pool().Exec(context.Background(), `UPDATE pix_credits SET received_at = now() - $2::interval + interval '1400 milliseconds',
		credited_at = now() - $2::interval + interval '1500 milliseconds' WHERE end_to_end_id = $1`, c.EndToEndID, pix.RefundWindow)
	require.NoError(t, err)
	f.expiresIn(b, 1500*time.Millisecond)
	err = f.returnWhileLocked(b, lockCredit, c.EndToEndID, `SELECT COALESCE(received_at, credited_at) + $2::interval < clock_timestamp()
		AND (SELECT expires_at FROM pix_blocks WHERE id = $3) < clock_timestamp() FROM pix_credits WHERE end_to_end_id = $1`,
		c.EndToEndID, pix.RefundWindow, b.ID)
	require.ErrorIs(t, err, block.ErrReleased)
	require.Equal(t, http.StatusConflict, pix.KindOf(err).Status)
	f.requireUnchanged(c, b) // its run releases it, expired
}

// requireUnchanged requires the block b of 4,000 of the PIX c still
// active and its account's money as it was: a return refused.
func (f *fixture) requireUnchanged(c dbtest.Credited, b block.Block) {
	f.t.Helper()
	got, err := f.store.Get(context.Background(), b.ID)
	require.NoError(f.t, err)
	require.Equal(f.t, block.StatusActive, got.Status)
	f.requireMoney(c.AccountID, 10_000, 4_000)
	f.requireBooks()
}
