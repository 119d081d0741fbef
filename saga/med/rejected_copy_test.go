package med_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
)

// Review r19 HIGH-1 and MED-2: a refund request CLOSED REJECTED outside
// the run (our operator through the PSP's channel, the DICT's list's copy)
// admits no return: its report is closed (the copy's REJECTED recorded, no
// DICT write) and ended at once, what it holds released once, never kept
// (and filled from the customer's credits) until return_until, nor stuck
// on a close sent to a CLOSED request (pix-med-rejected-copy).

// requireNoDICTWrite checks that the run wrote nothing to the DICT.
func requireNoDICTWrite(t *testing.T, a *activityRun) {
	t.Helper()
	for _, op := range a.dict.ops {
		require.NotContains(t, op, "close", "no close sent to a CLOSED request: %v", a.dict.ops)
	}
}

// finishRejectedAtDICT finishes r before its return_until: ended
// rejected_at_dict (not released: review r21 MED-3), the hold released once
// (a second Finish changes nothing), no devolução, the account's balance as
// said and nothing held, the books exact.
func (f *fixture) finishRejectedAtDICT(c dbtest.Credited, r med.Report, balance int64) {
	ctx := context.Background()
	r = f.step(f.store.Finish(ctx, r))
	require.Equal(f.t, med.StatusEnded, r.Status)
	require.Equal(f.t, med.EndRejectedAtDICT, *r.EndCause)
	f.requireMoney(c.AccountID, balance, 0)
	f.requireNoDevolucao(c.EndToEndID)
	f.requireBooks()
	_, changed, err := f.store.Finish(ctx, r)
	require.NoError(f.t, err)
	require.False(f.t, changed, "released once")
}

// Nothing returned, the request rejected outside the run, two credits of
// the customer's filling the hold since: day 80 of 90, the run closes and
// ends it, the hold released. Seen failing before the fix (the run's step
// return, the close "not yet" till return_until, the 10,000 held).
func TestARequestRejectedOutsideIsEndedAtOnce(t *testing.T) {
	for _, psp := range []bool{false, true} {
		t.Run(map[bool]string{false: "direct", true: "behind a PSP"}[psp], func(t *testing.T) {
			f := newFixture(t)
			c, r := f.nothingReturned()
			// Before the rejection: after it the hold fills no more
			// (review r21 MED-2).
			f.creditMore(c.AccountID, 4_000)
			f.creditMore(c.AccountID, 6_000)
			r = f.rejectedOutside(r)
			f.requireMoney(c.AccountID, 10_000, 10_000)
			r = f.get(r)
			at80 := time.Now().Add(80 * 24 * time.Hour)
			require.Equal(t, med.StepCloseRefund, med.RunStep(r, at80))
			require.Equal(t, med.StepReturn, med.RunStepWithout(r, at80, "pix-med-rejected-copy"), "the runs recorded before")

			a := newActivityRun(t, f, r)
			a.acts.BehindPSP = psp
			r, err := a.run(a.acts.CloseRefundRequest, r)
			require.NoError(t, err)
			require.NotNil(t, r.RefundClosedAt)
			require.Nil(t, r.RefundClosedRtrID)
			require.Nil(t, r.RefundCloseSentAt, "nothing sent, nothing marked")
			requireNoDICTWrite(t, a)
			require.Equal(t, med.StepFinish, med.RunStep(r, at80))
			f.finishRejectedAtDICT(c, r, 10_000)
		})
	}
}

// Directly at the DICT, nothing returned, the list's copy CLOSED REJECTED
// with another reason and details than ours: past return_until the run's
// close sent a close on a CLOSED request, read it back, stopped (details
// differ), for ever, the hold kept (review r19 probe P4). Recorded from
// the copy, no write, its result only checked; ended. Seen failing before
// the fix.
func TestARejectedCopyWithOtherDetailsIsRecordedNotSent(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c, r := f.nothingReturned()
	closed := request(r, 10_000, dict.RefundClosed)
	closed.ID, closed.AnalysisResult, closed.LastModified = r.RefundRequestID.String(), dict.Rejected, time.Now()
	closed.RefundRejectionReason, closed.AnalysisDetails = dict.RejectionOther, "golpe nao confirmado"
	r = f.step(f.store.IntakeRefund(ctx, closed))
	f.creditMore(c.AccountID, 4_000)
	past := r.ReturnUntil.Add(time.Second)
	late := f.store.WithClock(func() time.Time { return past })
	r = f.get(r)
	a := newActivityRun(t, f, r)
	a.dict.refunds[closed.ID] = closed
	a.acts.Store = late
	r, err := a.run(a.acts.CloseRefundRequest, r)
	require.NoError(t, err)
	requireNoDICTWrite(t, a)
	require.NotNil(t, r.RefundClosedAt)
	require.Nil(t, r.DICTProblem)
	r = f.step(late.Finish(ctx, r))
	require.Equal(t, med.StatusEnded, r.Status)
	f.requireMoney(c.AccountID, 4_000, 0)
}

// A part returned, then the request CLOSED REJECTED at the DICT: our close
// would accept it; the DICT's word is not ours, so the run stops visibly
// (dict_not_as_ours), nothing sent, nothing more returned: an operator's.
func TestARejectedCopyAfterAPartStopsVisibly(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	account, _, req := f.partReturnedNotClosed()
	r := f.step(f.store.IntakeRefund(ctx, closedRejectedCopy(req)))
	require.Equal(t, med.StepCloseRefund, med.RunStep(r, time.Now()))
	a := newActivityRun(t, f, r)
	a.dict.refunds[req.ID] = closedRejectedCopy(req)
	_, err := a.run(a.acts.CloseRefundRequest, r)
	cur := f.requireStopped(err, r)
	require.Nil(t, cur.RefundClosedAt)
	requireNoDICTWrite(t, a)
	f.creditMore(account, 5_000)
	_, changed, err := f.store.Return(ctx, cur)
	require.NoError(t, err)
	require.False(t, changed, "nothing returned on a request the DICT holds REJECTED")
}

// The awaiting_refund_request twin (4a2b273): a request taken OPEN, then
// rejected outside the run before anything was returned: closed and
// ended at once, not at the 72 hours' expiry (the runs recorded before
// the change still wait for it).
func TestARequestRejectedBeforeAnyReturnIsEndedAtOnce(t *testing.T) {
	f := newFixture(t)
	c, r := f.requestTaken()
	r = f.rejectedOutside(r)
	before := r.RequestDueAt.Add(-time.Hour)
	require.Equal(t, med.StepCloseRefund, med.RunStep(r, before))
	require.Equal(t, med.StepAwaitRequest, med.RunStepWithout(r, before, "pix-med-rejected-copy"))
	a := newActivityRun(t, f, r)
	r, err := a.run(a.acts.CloseRefundRequest, r)
	require.NoError(t, err)
	requireNoDICTWrite(t, a)
	require.Equal(t, med.StepFinish, med.RunStep(r, before))
	f.finishRejectedAtDICT(c, r, 10_000)
}

// The run itself, reading the report as the activities' results carry it
// (JSON: refund_request_dict_result), closes and ends a report whose
// request was rejected outside it, long before return_until.
func TestARequestRejectedOutsideIsEndedByTheRun(t *testing.T) {
	f := newFixture(t)
	c, r := f.nothingReturned()
	r = f.rejectedOutside(r)
	f.creditMore(c.AccountID, 4_000)

	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.SetTestTimeout(30 * time.Second)
	env.RegisterWorkflowWithOptions(med.Workflow, workflow.RegisterOptions{Name: med.WorkflowName})
	a := newActivityRun(t, f, r)
	acts := &med.Activities{Store: f.store, DICT: a.dict, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	env.RegisterActivity(acts)
	env.ExecuteWorkflow(med.WorkflowName, med.Input{ID: r.ID.String()})

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	out := f.get(r)
	require.Equal(t, med.StatusEnded, out.Status)
	require.Equal(t, med.EndRejectedAtDICT, *out.EndCause)
	require.True(t, time.Now().Before(*out.ReturnUntil))
	requireNoDICTWrite(t, a)
	f.requireMoney(c.AccountID, 4_000, 0)
	f.requireBooks()
}
