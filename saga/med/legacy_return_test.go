package med_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/med"
	refundsaga "github.com/pixbank/pix/saga/refund"
)

// A report whose hold was made before holds filled (fill_to_cents NULL,
// its shape made here in SQL) holds 3,000 of its PIX's 10,000 (7,000
// spent); 5,000 comes in before its return, which that hold does not take.
// The return makes the hold one that fills (db.MakeFilling) and it takes
// that money then, as a hold that filled from the start would have: the
// devolução returns 8,000, nothing is left available to spend, and the
// devolução not made gives the 8,000 back held (attack review r5 MED-3:
// the 5,000 stayed available).
func TestALegacyHoldsReturnTakesTheMoneyCameInSince(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	cr, r := legacyRequested(t, f, 7_000, 3_000)
	f.creditMore(cr.AccountID, 5_000) // not filled into the legacy hold
	f.requireMoney(cr.AccountID, 8_000, 3_000)
	r = f.step(f.store.Return(ctx, r))
	require.Equal(t, med.StatusReturning, r.Status)
	f.requireMoney(cr.AccountID, 0, 0) // nothing available: all of it returned
	f.requireBooks()
	var cents int64
	require.NoError(t, f.s.Pool().QueryRow(ctx, `SELECT amount_cents FROM pix_refunds WHERE id = $1`, *r.RefundID).Scan(&cents))
	require.EqualValues(t, 8_000, cents)

	_, err := refundsaga.NewStore(f.s).ReverseRefund(ctx, *r.RefundID, "NAO_REALIZADO", false)
	require.NoError(t, err)
	f.requireMoney(cr.AccountID, 8_000, 8_000)
	require.ErrorIs(t, f.spend(cr.AccountID, 1), pix.ErrInsufficientFunds)
	f.requireBooks()
}

// legacyRequested is a report of a PIX of 10,000 (spent of it spent first)
// whose hold, holding held, was made before holds filled (fill_to_cents
// NULL: its shape made here in SQL), agreed, closed and its refund request
// of 10,000 taken in: due for its return.
func legacyRequested(t *testing.T, f *fixture, spent, held int64) (dbtest.Credited, med.Report) {
	t.Helper()
	ctx := context.Background()
	cr := f.credit(10_000, 0)
	if spent > 0 {
		require.NoError(t, f.spend(cr.AccountID, spent))
	}
	r := f.intake(report(cr.EndToEndID, dict.ReportOpen, time.Now().Add(-time.Hour)))
	r = f.step(f.store.Hold(ctx, r))
	require.EqualValues(t, held, r.HeldCents)
	tag, err := f.s.Pool().Exec(ctx, `UPDATE pix_holds SET fill_to_cents = NULL, fill_short_cents = 0 WHERE id = $1`, *r.HoldID)
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())
	r = f.step(f.store.Acknowledged(ctx, r, dict.InfractionReport{}))
	f.step(f.store.Analyse(ctx, r.ID, dict.Agreed, "", "operator-1"))
	r, err = f.store.Get(ctx, r.ID)
	require.NoError(t, err)
	r = f.step(f.store.Closed(ctx, r, dict.InfractionReport{}))
	return cr, f.step(f.store.IntakeRefund(ctx, request(r, 10_000, dict.RefundOpen)))
}

// A hold made without a fill-until (before migration 0063, or by an older
// build while the release rolled out) of a report whose run is running
// (no dict_problem) is given its report's return_until in the report's
// next transaction (stopFilling, db.SetFillUntil), as a stopped report's
// is: past return_until a credit fills it no more, whenever the run's end
// comes. A legacy hold that does not fill, made one that fills by the
// return (db.MakeFilling), gets it in the same transaction, under the
// same locks. Seen failing on the old stopFilling (only a stopped run's
// hold got one: the credit past return_until was held, 4,000; the hold
// made filling had none).
func TestALegacyHoldOfARunningReportGetsItsFillUntil(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	account, r := f.awaitingCredit()
	_, err := f.s.Pool().Exec(ctx, `UPDATE pix_holds SET fill_until = NULL WHERE id = $1`, *r.HoldID) // an older build's
	require.NoError(t, err)
	_, changed, err := f.store.Return(ctx, r) // nothing arrived: nothing changes but the fence
	require.NoError(t, err)
	require.False(t, changed)
	require.Nil(t, r.DICTProblem)
	f.requireFillsNothingPastReturnUntil(account, r, "its report's next transaction gives it its return_until")

	cr, r := legacyRequested(t, f, 7_000, 3_000)
	_, err = f.s.Pool().Exec(ctx, `UPDATE pix_holds SET fill_until = NULL WHERE id = $1`, *r.HoldID)
	require.NoError(t, err)
	r = f.step(f.store.Return(ctx, r))
	require.Equal(t, med.StatusReturning, r.Status)
	hold, err := f.s.GetHold(ctx, *r.HoldID)
	require.NoError(t, err)
	require.NotNil(t, hold.FillToCents, "made one that fills")
	require.NotNil(t, hold.FillUntil, "made filling until its report's return_until")
	require.True(t, hold.FillUntil.Equal(*r.ReturnUntil))
	f.requireMoney(cr.AccountID, 0, 0)
}
