package db_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
)

// captureAllCall records a devolução that captures whatever the hold id
// holds under its locks (NewRefund.CaptureAll), its refund in out.
func captureAllCall(e2e string, id uuid.UUID, out *pix.Refund) moneyCall {
	return func(ctx context.Context, tx pgx.Tx) (err error) {
		*out, err = db.RecordRefund(ctx, tx, db.NewRefund{ID: pix.NewRefundID(), Hold: id, CaptureAll: true,
			RefundRequest: pix.RefundRequest{EndToEndID: e2e, Reason: "MED"}}, nil, "test-saga")
		return err
	}
}

// A capture of all a filling hold holds, while a credit that fills it
// holds the account's lock: the capture decides under the locks, after
// the fill, and returns what the hold holds then (5,000), where a
// devolução of the amount read before (1,000) is refused
// (TestRaceACreditFillingAHoldAndItsCapture).
func TestRaceACreditFillingAHoldAndACaptureOfAll(t *testing.T) {
	s, reported, h := heldPIX(t, 9_000)
	require.EqualValues(t, 1_000, h.AmountCents)
	id := uuid.MustParse(h.ID)

	resume := pausedCredit(t, s, 2, "acc-1", 4_000)
	var refund pix.Refund
	wait := whileWaiting(t, s, captureAllCall(reported, id, &refund))
	_, tries, err := resume()
	require.NoError(t, err)
	require.NoError(t, wait())
	require.EqualValues(t, 1, tries, "the credit ran once: no deadlock, no retry")
	require.EqualValues(t, 5_000, refund.AmountCents, "what the hold held after the fill")
	requireHold(t, s, h.ID, 5_000, 10_000, pix.HoldCaptured)
	requireMoney(t, s, "acc-1", 0, 0)
	dbtest.RequireBooks(t, s)
}

// The other order: the capture of all holds the locks first; the credit
// waits, and finds the hold captured: it fills nothing, its money is
// available.
func TestRaceACaptureOfAllAndACreditThatWouldFillIt(t *testing.T) {
	s, reported, h := heldPIX(t, 9_000)
	id := uuid.MustParse(h.ID)

	ctx := context.Background()
	tx1, err := s.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx1.Rollback(ctx) }() // a failure below must not hold the pool's close
	var refund pix.Refund
	require.NoError(t, captureAllCall(reported, id, &refund)(ctx, tx1))
	_, done := creditBehind(t, s, tx1, 2, "acc-1", 4_000, "the capture's locks")
	require.NoError(t, tx1.Commit(ctx))
	require.NoError(t, <-done)
	require.EqualValues(t, 1_000, refund.AmountCents)
	requireHold(t, s, h.ID, 1_000, 10_000, pix.HoldCaptured)
	requireMoney(t, s, "acc-1", 4_000, 0)
	dbtest.RequireBooks(t, s)
}

// A capture of all of a hold that holds nothing yet is refused, as any
// capture of 0; CaptureAll without a hold is a caller's mistake.
func TestCaptureAllOfNothingIsRefused(t *testing.T) {
	s, reported, h := heldPIX(t, 10_000)
	require.Zero(t, h.AmountCents)
	var refund pix.Refund
	err := db.InTx(context.Background(), s.Pool(), func(tx pgx.Tx) error {
		return captureAllCall(reported, uuid.MustParse(h.ID), &refund)(context.Background(), tx)
	})
	require.ErrorIs(t, err, pix.ErrHoldNotCapturable)
	err = db.InTx(context.Background(), s.Pool(), func(tx pgx.Tx) error {
		return captureAllCall(reported, uuid.Nil, &refund)(context.Background(), tx)
	})
	require.ErrorContains(t, err, "CaptureAll without a Hold")
	requireHold(t, s, h.ID, 0, 10_000, pix.HoldActive)
	dbtest.RequireBooks(t, s)
}
