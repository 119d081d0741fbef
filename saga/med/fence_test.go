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

// ahead is a LastModified as far ahead of our clock as a notice may carry
// (med.MaxClockAhead): the DICT's clock ahead of ours, or a forged notice.
func ahead() time.Time { return time.Now().Add(med.MaxClockAhead - time.Second) }

// A copy recorded with a LastModified ahead of the real one never fences
// out the DICT's next change: the reporter's cancel, modified earlier by
// the clock, is later by the DICT's order of a report's statuses and is
// taken; an older status, even modified "later", is not.
func TestAFutureLastModifiedDoesNotFenceOutTheReportsCancel(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c := f.credit(10_000, 0)
	in := report(c.EndToEndID, dict.ReportOpen, time.Now().Add(-time.Hour))
	r := f.intake(in)
	in.Status, in.LastModified = dict.ReportAcknowledged, ahead()
	r = f.step(doorsOf(f.store).Intake(ctx, in))
	require.Equal(t, string(dict.ReportAcknowledged), r.DICTStatus)

	in.Status, in.LastModified = dict.ReportCancelled, time.Now()
	r = f.step(doorsOf(f.store).Intake(ctx, in))
	require.True(t, r.Cancelled(), "the DICT's cancel taken")
	require.Equal(t, med.StepCancel, med.Next(r, time.Now()))

	in.Status, in.LastModified = dict.ReportAcknowledged, ahead().Add(time.Second)
	out, changed, err := doorsOf(f.store).Intake(ctx, in)
	require.NoError(t, err)
	require.False(t, changed, "never back from CANCELLED")
	require.True(t, out.Cancelled())
}

// The same for a refund request: recorded OPEN with a LastModified ahead,
// its requester's cancel, modified earlier by the clock, is taken (nothing
// is returned on it); an OPEN copy never opens it again.
func TestAFutureLastModifiedDoesNotFenceOutTheRequestsCancel(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, r := f.agreed(10_000, 0)
	req := request(r, 10_000, dict.RefundOpen)
	req.LastModified = ahead()
	r = f.step(f.store.IntakeRefund(ctx, req))
	require.True(t, r.RequestOpen())

	req.Status, req.LastModified = dict.RefundCancelled, time.Now()
	r = f.step(f.store.IntakeRefund(ctx, req))
	require.True(t, med.RequestCancelled(r), "the DICT's cancel taken")
	require.NotEqual(t, med.StepReturn, med.Next(r, time.Now()))

	req.Status, req.LastModified = dict.RefundOpen, ahead().Add(time.Second)
	_, changed, err := f.store.IntakeRefund(ctx, req)
	require.NoError(t, err)
	require.False(t, changed, "never back from CANCELLED")
}

// The close's read back of a report cancelled at the DICT, recorded before
// with a LastModified ahead of the cancel's, takes the cancel: the run
// moves on (another generation) instead of deciding the close again at
// once, in a loop.
func TestTheClosesReadBackTakesACancelModifiedEarlier(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a, r := analysed(t, f, dict.Agreed)
	seen := a.dict.report
	seen.Status, seen.LastModified = dict.ReportAcknowledged, ahead()
	r = f.step(f.store.Seen(ctx, r, seen))
	a.dict.report.Status, a.dict.report.LastModified = dict.ReportCancelled, time.Now()
	out, err := a.run(a.acts.CloseReport, r)
	require.NoError(t, err)
	require.NotEqual(t, r.Gen, out.Gen, "the run moves on")
	require.True(t, out.Cancelled())
	require.Equal(t, med.StepCancel, med.Next(out, time.Now()))
}

// A read back the report does not take (the expiry finds an OPEN request
// at the DICT that the report can't answer: it has another, closed) stops
// the run visibly, retried after a signal or ProblemRetryAfter, instead of
// returning the report as it was, which the run would decide on again at
// once: a hot loop of DICT lists.
func TestAReadBackTheReportDoesNotTakeStopsTheRun(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, r := f.agreed(10_000, 0)
	a := newActivityRun(t, f, r)
	closed := request(r, 10_000, dict.RefundClosed)
	r = f.step(f.store.IntakeRefund(ctx, closed))
	a.dict.refunds[closed.ID] = closed // read back: CLOSED, no result said
	other := request(r, 10_000, dict.RefundOpen)
	a.dict.refunds[other.ID] = other
	a.acts.Store = f.store.WithClock(func() time.Time { return r.RequestDueAt.Add(time.Minute) })
	require.Equal(t, med.StepExpireRequest, med.Next(r, r.RequestDueAt.Add(time.Minute)))
	_, err := a.run(a.acts.ExpireRequest, r)
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.Equal(t, med.StoppedType, app.Type())
	cur := a.current(r)
	require.NotNil(t, cur.DICTProblem)
	require.Contains(t, *cur.DICTProblem, med.ProblemNotAsOurs)
	require.Equal(t, med.StatusAwaitingRequest, cur.Status, "nothing released")
}
