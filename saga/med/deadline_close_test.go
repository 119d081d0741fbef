package med_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
)

// The review of 4409c89, MED-2: a request taken at return_until - 15 s by
// the database's clock, the run's clock past return_until. The run asks
// the close as the deadline closes it (REJECTED NO_BALANCE); the
// database's clock decides it (MarkSent): not yet, nothing marked, nothing
// sent (directly or through a PSP), the run's error NotYetType with the
// time left; the Return then returns the money held. Past return_until
// by the database's clock the same close is sent. Seen failing on the old
// MarkSent (the DICT got the REJECTED close).
func TestADeadlineCloseIsDecidedByTheDatabasesClock(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, behindPSP := range []bool{false, true} {
		_, r := f.requestTaken()
		past := r.ReturnUntil.Add(time.Second)
		require.Equal(t, med.StepCloseRefund, med.RunStep(r, past), "the run's clock past return_until")
		require.True(t, med.DeadlineClosing(med.Closing(r)))
		gap := f.store.WithClock(func() time.Time { return r.ReturnUntil.Add(-15 * time.Second) })
		a := dictWithRequest(t, f, r)
		a.acts.BehindPSP, a.acts.Store = behindPSP, gap
		out, err := a.run(a.acts.CloseRefundRequest, r)
		var app *temporal.ApplicationError
		require.ErrorAs(t, err, &app, "behind a PSP: %v; closed %s: %v", behindPSP, a.dict.ops, out.RefundClosedAt)
		require.Equal(t, med.NotYetType, app.Type())
		var left med.NotYet
		require.NoError(t, app.Details(&left))
		require.Equal(t, 15*time.Second, left.Left)
		require.Empty(t, a.dict.ops, "nothing sent")
		cur := a.current(r)
		require.Nil(t, cur.RefundCloseSentAt, "nothing marked")
		require.Nil(t, cur.DICTProblem, "no stop: not the operator's yet")
		require.Equal(t, r.Gen, cur.Gen)
		got := f.step(gap.Return(ctx, r))
		require.Equal(t, med.StatusReturning, got.Status, "returned within return_until by the database's clock")
	}

	// Past it by the database's clock, the close is sent.
	_, r := f.requestTaken()
	a := dictWithRequest(t, f, r)
	a.acts.Store = f.store.WithClock(func() time.Time { return r.ReturnUntil.Add(time.Second) })
	out, err := a.run(a.acts.CloseRefundRequest, r)
	require.NoError(t, err)
	require.NotNil(t, out.RefundClosedAt)
	closed := a.dict.refunds[r.RefundRequestID.String()]
	require.Equal(t, [2]string{string(dict.Rejected), string(dict.RejectionNoBalance)},
		[2]string{string(closed.AnalysisResult), string(closed.RefundRejectionReason)}, "sent past return_until")
}

// dictWithRequest is an activity run on r whose DICT has r's request OPEN.
func dictWithRequest(t *testing.T, f *fixture, r med.Report) *activityRun {
	a := newActivityRun(t, f, r)
	open := request(r, 10_000, dict.RefundOpen)
	open.ID = r.RefundRequestID.String()
	a.dict.refunds[open.ID] = open
	return a
}
