package med_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
)

// Attack review r13 LOW: Return acted on an awaiting_refund_request
// report with its request open without checking return_until. A request
// taken (or reopened) just before return_until and returned after it (the
// run late, a lock wait, a retry) was returned past the deadline; with the
// PIX's window closed as well it met that window's refusal (REJECTED
// CANNOT_REFUND). Past return_until, by the database's clock, the Return
// changes nothing, and the report ends as the deadline ends a return in
// parts: the request closed NO_BALANCE, what is held released. Seen
// failing on the old Return (a devolução recorded after return_until:
// returning).
func TestARequestReturnedPastReturnUntilChangesNothing(t *testing.T) {
	f := newFixture(t)
	c, r := f.requestTaken()
	late := f.store.WithClock(func() time.Time { return r.ReturnUntil.Add(time.Second) })
	got := f.lateReturnChangesNothing(late, r)
	f.requireMoney(c.AccountID, 10_000, 10_000)
	f.requireEndsAsAtTheDeadline(late, got, c.AccountID, 10_000)
}

// The finding's own case, in real times: the PIX received 91 days ago,
// its window closed, return_until (its close) passed. The old Return
// recorded the window's refusal (return_refused refund_window_closed, the
// request to be closed REJECTED CANNOT_REFUND). Seen failing on it.
func TestARequestPastItsWindowAndReturnUntilIsNoRefusal(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c, r := f.requestTaken()
	_, err := f.s.Pool().Exec(ctx, `UPDATE pix_credits SET credited_at = credited_at - interval '91 days',
		received_at = received_at - interval '91 days' WHERE end_to_end_id = $1`, c.EndToEndID)
	require.NoError(t, err)
	_, err = f.s.Pool().Exec(ctx, `UPDATE pix_med_reports SET return_until = return_until - interval '91 days' WHERE id = $1`, r.ID)
	require.NoError(t, err)
	r = f.get(r)
	got := f.lateReturnChangesNothing(f.store, r)
	f.requireMoney(c.AccountID, 10_000, 10_000)
	f.requireEndsAsAtTheDeadline(f.store, got, c.AccountID, 10_000)
}

// The same with nothing held: a request reopened after its report was
// released at its 72 hours, the account spent since. The old Return made
// a hold anew (the customer's notice), which took the account's next
// credits until the report's end. Seen failing on the old Return (changed:
// awaiting_credit, a hold made).
func TestARequestReopenedPastReturnUntilTakesNothing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c, r := f.agreed(10_000, 0)
	r = f.step(f.store.ExpireRequest(ctx, r, r.RequestDueAt.Add(med.ExpiryCovered)))
	require.NoError(t, f.spend(c.AccountID, 10_000))
	r = f.step(f.store.IntakeRefund(ctx, request(r, 10_000, dict.RefundOpen)))
	require.Equal(t, med.StatusAwaitingRequest, r.Status, "reopened")
	require.Nil(t, r.HoldID)
	late := f.store.WithClock(func() time.Time { return r.ReturnUntil.Add(time.Second) })
	got := f.lateReturnChangesNothing(late, r)
	require.Nil(t, got.HoldID)
	var holds int
	require.NoError(t, f.s.Pool().QueryRow(ctx, `SELECT count(*) FROM pix_holds WHERE account_id = $1 AND status = 'active'`,
		c.AccountID).Scan(&holds))
	require.Zero(t, holds, "no hold made anew")
	f.creditMore(c.AccountID, 2_000)
	f.requireMoney(c.AccountID, 2_000, 0) // the customer's credit stays available
	f.requireEndsAsAtTheDeadline(late, got, c.AccountID, 2_000)
}

// A request whose report's return_until ends while its Return waits for
// the PIX's credit (real times): checked again after the locks, nothing
// changes. Seen failing on the old Return (a devolução recorded after
// return_until).
func TestARequestWhoseDaysEndWhileItsReturnWaitsChangesNothing(t *testing.T) {
	f := newFixture(t)
	c, r := f.requestTaken()
	r = f.endingSoon(r)
	got, changed, err := f.returnWhileLocked(r)
	require.NoError(t, err)
	require.False(t, changed, "returned at %s, after its 90 days", got.Status)
	require.Equal(t, med.StatusAwaitingRequest, got.Status)
	require.Nil(t, got.RefundID)
	require.Nil(t, got.ReturnRefused)
	f.requireMoney(c.AccountID, 10_000, 10_000)
	f.requireEndsAsAtTheDeadline(f.store, got, c.AccountID, 10_000)
}

// requestTaken is a report AGREED of a PIX of 10,000, held whole, its
// refund request of 10,000 taken (awaiting_refund_request).
func (f *fixture) requestTaken() (dbtest.Credited, med.Report) {
	c, r := f.agreed(10_000, 0)
	r = f.step(f.store.IntakeRefund(context.Background(), request(r, 10_000, dict.RefundOpen)))
	require.Equal(f.t, med.StatusAwaitingRequest, r.Status)
	return c, r
}

// lateReturnChangesNothing runs r's Return on store (its clock past r's
// return_until): nothing changes, no refusal recorded, no devolução.
func (f *fixture) lateReturnChangesNothing(store *med.Store, r med.Report) med.Report {
	t := f.t
	got, changed, err := store.Return(context.Background(), r)
	require.NoError(t, err)
	if got.ReturnRefused != nil {
		t.Fatalf("refused past return_until: return_refused %s", *got.ReturnRefused)
	}
	require.False(t, changed, "returned past return_until: %s", got.Status)
	require.Equal(t, med.StatusAwaitingRequest, got.Status)
	require.Equal(t, r.Gen, got.Gen)
	require.Nil(t, got.RefundID)
	return got
}

// requireEndsAsAtTheDeadline runs the steps the run takes on r, its request
// open past return_until (store's clock past it): its request closed
// REJECTED NO_BALANCE, never returned again, the report ended released,
// what it held released (the account then balance, nothing held). Finish
// by a clock before return_until changes nothing.
func (f *fixture) requireEndsAsAtTheDeadline(store *med.Store, r med.Report, account string, balance int64) {
	t, ctx := f.t, context.Background()
	past := r.ReturnUntil.Add(time.Second)
	require.Equal(t, med.StepCloseRefund, med.Next(r, past), "the deadline's close, not a return")
	require.Equal(t, med.StepCloseRefund, med.RunStep(r, past))
	closing := med.Closing(r)
	require.Equal(t, [2]string{string(dict.Rejected), string(dict.RejectionNoBalance)},
		[2]string{string(closing.Result), string(closing.RejectionReason)}, "closed as the deadline closes it")
	r = f.step(store.RefundClosed(ctx, r, closing.RefundTransactionID))
	require.Equal(t, med.StepFinish, med.Next(r, past))
	require.Equal(t, med.StepFinish, med.RunStep(r, past))
	early := f.store.WithClock(func() time.Time { return r.ReturnUntil.Add(-time.Second) })
	_, _, err := early.Finish(ctx, r)
	var notYet *med.NotYetError
	require.ErrorAs(t, err, &notYet, "never ended before return_until")
	_, changed, err := store.Return(ctx, r)
	require.NoError(t, err)
	require.False(t, changed, "its request closed: never returned")
	r = f.step(store.Finish(ctx, r))
	require.Equal(t, med.StatusEnded, r.Status)
	require.Equal(t, med.EndReleased, *r.EndCause)
	require.Nil(t, r.HoldID)
	require.Equal(t, med.StepDone, med.Next(r, past))
	f.requireMoney(account, balance, 0)
	f.requireBooks()
}
