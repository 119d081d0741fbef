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

// A report whose request came too late (awaiting_refund_request, past
// return_until) behind a PSP: its REJECTED close stops until the PSP's
// notice CLOSED, taken in (IntakeRefund) before our record of the close.
// The report is closed on that notice (CloseRefund records it,
// refund_closed_at), then ends by Finish, never as the 72 hours' expiry
// (released without refund_closed_at, Finish's database-clock guard
// skipped) nor held until the request's due time. Seen failing on the old
// Next (StepExpireRequest after the notice).
func TestAClosedCopyTakenFirstIsClosedThenFinished(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c, r, past, late, a := f.closedCopyTaken()
	require.Equal(t, string(dict.RefundClosed), *r.RefundRequestState)
	require.Nil(t, r.RefundClosedAt)
	for _, at := range []time.Time{past, r.RequestDueAt.Add(time.Hour), r.RequestDueAt.Add(-time.Hour)} {
		require.Equal(t, med.StepCloseRefund, med.Next(r, at), "at %s: closed, not the 72 hours' expiry nor its wait", at)
		require.Equal(t, med.StepCloseRefund, med.RunStep(r, at))
	}
	require.Equal(t, med.StepExpireRequest, med.RunStepWithout(r, past, "pix-med-closed-copy"), "recorded before it: as it ran")
	require.Equal(t, med.StepAwaitRequest, med.RunStepWithout(r, r.RequestDueAt.Add(-time.Hour), "pix-med-closed-copy"))
	_, changed, err := late.ExpireRequest(ctx, r, r.RequestDueAt.Add(med.ExpiryCovered))
	require.NoError(t, err)
	require.False(t, changed, "a request came: never the 72 hours' release")

	r, err = a.run(a.acts.CloseRefundRequest, a.current(r))
	require.NoError(t, err)
	require.NotNil(t, r.RefundClosedAt, "our close recorded from the PSP's notice")
	require.Equal(t, med.StepFinish, med.Next(r, past))
	// Noticed CLOSED REJECTED: nothing kept for return_until, ended
	// before it too (review r19 HIGH-1).
	early := f.store.WithClock(func() time.Time { return r.ReturnUntil.Add(-time.Second) })
	r = f.step(early.Finish(ctx, r))
	require.Equal(t, med.StatusEnded, r.Status)
	require.Equal(t, med.EndReleased, *r.EndCause)
	require.NotNil(t, r.RefundClosedAt)
	require.Empty(t, a.dict.ops, "no DICT call")
	f.requireMoney(c.AccountID, 10_000, 0)
	f.requireBooks()
}

// closedCopyTaken is a report whose request came too late (past
// return_until), behind a PSP: its REJECTED close stopped for the operator
// (marked sent), the PSP's CLOSED notice then taken in (IntakeRefund)
// before our record of the close. past is a time past return_until, late
// the store on that clock, a the activities on it.
func (f *fixture) closedCopyTaken() (dbtest.Credited, med.Report, time.Time, *med.Store, *activityRun) {
	c, r := f.requestTaken()
	past := r.ReturnUntil.Add(time.Second)
	late := f.store.WithClock(func() time.Time { return past })
	a := newActivityRun(f.t, f, r)
	a.acts.BehindPSP, a.acts.Store = true, late
	require.Equal(f.t, med.StepCloseRefund, med.RunStep(r, past))
	_, err := a.run(a.acts.CloseRefundRequest, r)
	require.Error(f.t, err, "stopped: the operator closes it REJECTED at the PSP")
	closed := request(r, 10_000, dict.RefundClosed)
	closed.ID, closed.AnalysisResult, closed.LastModified = r.RefundRequestID.String(), dict.Rejected, time.Now()
	return c, f.step(f.store.IntakeRefund(context.Background(), closed)), past, late, a
}
