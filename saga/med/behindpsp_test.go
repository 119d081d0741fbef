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
		_, changed, err := f.store.Intake(ctx, in)
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
	a.acts.Store = f.store.WithClock(func() time.Time { return r.RequestDueAt.Add(time.Minute) })
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
