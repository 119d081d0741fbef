package med_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
)

// A bank behind a PSP (MED_DICT_DISABLED=true) can't read the DICT: the
// PSP's notice CLOSED with our analysis records the close with no DICT
// call, and the report goes on (a refund request then noticed is its, the
// 72 hours' expiry releases on our own record, the request's close is our
// return's outcome); CLOSED with another result stops, an operator's.
func TestBehindAPSPTheClosedNoticeIsTheClose(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	analysedAndNoticed := func(ours, noticed dict.AnalysisResult) (*activityRun, med.Report) {
		c := f.credit(10_000, 0)
		in := report(c.EndToEndID, dict.ReportAcknowledged, time.Now().Add(-time.Hour))
		r := f.intake(in)
		r = f.step(f.store.Hold(ctx, r))
		a := newActivityRun(t, f, r)
		a.acts.BehindPSP = true
		r, err := a.run(a.acts.AcknowledgeReport, r)
		require.NoError(t, err)
		require.Equal(t, med.StatusAcknowledged, r.Status)
		f.step(f.store.Analyse(ctx, r.ID, ours, "fraude", "op"))
		in.Status, in.LastModified, in.AnalysisResult = dict.ReportClosed, in.LastModified.Add(time.Minute), noticed
		_, changed, err := doorsOf(f.store).Intake(ctx, in)
		require.NoError(t, err)
		require.True(t, changed)
		return a, a.current(r)
	}

	a, r := analysedAndNoticed(dict.Agreed, dict.Agreed)
	r, err := a.run(a.acts.CloseReport, r)
	require.NoError(t, err)
	require.Equal(t, med.StatusAwaitingRequest, r.Status, "closed on the PSP's notice")
	require.EqualValues(t, 10_000, r.HeldCents)
	r = f.step(f.store.IntakeRefund(ctx, request(r, 10_000, dict.RefundOpen)))
	require.True(t, r.RequestOpen())
	r = f.step(f.store.Return(ctx, r))
	require.Equal(t, med.StatusReturning, r.Status)
	require.Empty(t, a.dict.ops, "no DICT call")

	// Released at its 72 hours on our record, nothing to list.
	a, r = analysedAndNoticed(dict.Agreed, dict.Agreed)
	r, err = a.run(a.acts.CloseReport, r)
	require.NoError(t, err)
	a.acts.Store = f.store.WithClock(func() time.Time { return r.RequestDueAt.Add(med.ExpiryCovered) })
	r, err = a.run(a.acts.ExpireRequest, r)
	require.NoError(t, err)
	require.Equal(t, med.StatusEnded, r.Status)
	require.Equal(t, med.EndReleased, *r.EndCause)
	require.Zero(t, r.HeldCents)
	require.Empty(t, a.dict.ops, "no DICT call")

	// Noticed CLOSED with another result: stopped, the hold kept.
	a, r = analysedAndNoticed(dict.Agreed, dict.Disagreed)
	_, err = a.run(a.acts.CloseReport, r)
	require.Error(t, err)
	r = a.current(r)
	require.Equal(t, med.StatusAnalysed, r.Status)
	require.NotNil(t, r.DICTProblem)
	require.Contains(t, *r.DICTProblem, med.ProblemNotAsOurs)
	require.Empty(t, a.dict.ops, "no DICT call")
}

// Behind a PSP, a refund request we reject (nothing returned by its
// return_until) has no devolução for the PSP to answer it from: its close
// stops visibly (the
// operator's cue to close it REJECTED through the PSP's channel), nothing
// recorded as closed, until the PSP's notice CLOSED REJECTED, which is
// recorded as the close; a notice CLOSED with another result stops, an
// operator's.
func TestBehindAPSPARejectedRequestIsClosedByThePSPsNotice(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// rejected is a report behind a PSP whose request finds nothing to
	// return: closed REJECTED.
	rejected := func() (*activityRun, med.Report, dict.Refund) {
		c := f.credit(10_000, 0)
		require.NoError(t, f.spend(c.AccountID, 10_000))
		r := f.intake(report(c.EndToEndID, dict.ReportAcknowledged, time.Now().Add(-time.Hour)))
		r = f.step(f.store.Hold(ctx, r))
		a := newActivityRun(t, f, r)
		a.acts.BehindPSP = true
		r, err := a.run(a.acts.AcknowledgeReport, r)
		require.NoError(t, err)
		f.step(f.store.Analyse(ctx, r.ID, dict.Agreed, "fraude", "op"))
		r = f.step(f.store.Closed(ctx, a.current(r), dict.InfractionReport{}))
		req := request(r, 10_000, dict.RefundOpen)
		req.LastModified = time.Now()
		r = f.step(f.store.IntakeRefund(ctx, req))
		r = f.step(f.store.Return(ctx, r))
		require.Equal(t, med.StatusAwaitingCredit, r.Status)
		require.Zero(t, r.Returns)
		require.Equal(t, dict.Rejected, med.Closing(r).Result)
		// Closed so at return_until, by the database's clock (MarkSent).
		until := *r.ReturnUntil
		a.acts.Store = f.store.WithClock(func() time.Time { return until.Add(time.Second) })
		return a, r, req
	}
	// noticed is the PSP's notice of req CLOSED with result.
	noticed := func(req dict.Refund, result dict.RefundAnalysisResult) dict.Refund {
		req.Status, req.AnalysisResult, req.LastModified = dict.RefundClosed, result, time.Now()
		return req
	}

	a, r, req := rejected()
	_, err := a.run(a.acts.CloseRefundRequest, r)
	require.Error(t, err, "stopped: the operator closes it at the PSP")
	r = a.current(r)
	require.Nil(t, r.RefundClosedAt, "not recorded closed before the PSP says so")
	stoppedWith(t, a, r, err, med.ProblemPSPActionAwaited, "close the refund request "+req.ID+" REJECTED", "through the PSP's channel")
	counts := openCounts(t, f)
	require.Zero(t, counts.DICTProblems, "the operator's cue, no DICT problem")
	require.EqualValues(t, 1, counts.PSPActionsAwaited)
	r = f.step(f.store.IntakeRefund(ctx, noticed(req, dict.Rejected)))
	out, err := a.run(a.acts.CloseRefundRequest, r)
	require.NoError(t, err, "the PSP's notice CLOSED REJECTED is the close")
	require.NotNil(t, out.RefundClosedAt)
	require.Equal(t, med.StepFinish, med.Next(out, *out.ReturnUntil), "at its 90 days, when a REJECTED close is due")
	require.Empty(t, a.dict.ops, "no DICT call")

	a, r, req = rejected()
	r = f.step(f.store.IntakeRefund(ctx, noticed(req, dict.TotallyAccepted)))
	_, err = a.run(a.acts.CloseRefundRequest, r)
	require.Error(t, err)
	r = a.current(r)
	require.Nil(t, r.RefundClosedAt)
	require.Contains(t, *r.DICTProblem, med.ProblemNotAsOurs)
}
