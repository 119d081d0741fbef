package med_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
)

// stoppedWith asserts err is a step's stop (StoppedType) and the report's
// dict_problem has code and says each of says.
func stoppedWith(t *testing.T, a *activityRun, r med.Report, err error, code string, says ...string) {
	t.Helper()
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.Equal(t, med.StoppedType, app.Type(), "the run stops and waits, as at the DICT")
	problem := a.current(r).DICTProblem
	require.NotNil(t, problem)
	require.True(t, strings.HasPrefix(*problem, code+": "), *problem)
	for _, s := range says {
		require.Contains(t, *problem, s)
	}
}

// openCounts reads the gauges' counts.
func openCounts(t *testing.T, f *fixture) med.OpenCounts {
	t.Helper()
	c, err := f.store.Open(context.Background(), med.AnalysisAlertBefore)
	require.NoError(t, err)
	return c
}

// heldBehindAPSP is a report noticed by the PSP in status, held, and its
// activities as a bank behind a PSP runs them (MED_DICT_DISABLED=true: the
// DICT that refuses every call unsent, as depsOf wires it).
func heldBehindAPSP(t *testing.T, f *fixture, status dict.InfractionReportStatus) (*activityRun, med.Report, dict.InfractionReport) {
	t.Helper()
	c := f.credit(10_000, 0)
	in := report(c.EndToEndID, status, time.Now().Add(-time.Hour))
	r := f.step(f.store.Hold(context.Background(), f.intake(in)))
	a := newActivityRun(t, f, r)
	a.acts.BehindPSP, a.acts.DICT = true, med.NotConfigured
	return a, r, in
}

// Behind a PSP (MED_DICT_DISABLED=true, its DICT the one that refuses every
// call unsent), the close of a report analysed AGREED is the operator's,
// through the PSP's channel: the run stops with psp_action_awaited saying
// so, no DICT call, and it is no DICT problem: pix_med_dict_problems reads
// 0 (PixMEDDICTStopped pages on a DICT that refuses us, not on a routine
// step), pix_med_psp_actions_awaited 1, nothing counted as a DICT stop. Its
// retry says the same (it was "read back the infraction report: ... not
// sent"), and the PSP's notice CLOSED is the close. Seen failing before:
// dict_refused, pix_med_dict_problems 1 (audit: a page 15 minutes after
// every report a bank behind a PSP analyses).
func TestBehindAPSPTheClosesCueIsNoDICTProblem(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a, r, in := heldBehindAPSP(t, f, dict.ReportAcknowledged)
	r, err := a.run(a.acts.AcknowledgeReport, r)
	require.NoError(t, err)
	f.step(f.store.Analyse(ctx, r.ID, dict.Agreed, "fraude", "op"))
	r = a.current(r)

	stops := testutil.ToFloat64(med.DICTStopped)
	_, err = a.run(a.acts.CloseReport, r)
	stoppedWith(t, a, r, err, med.ProblemPSPActionAwaited, "close the report AGREED through the PSP's channel", "its notice CLOSED records it")
	require.NotNil(t, a.current(r).CloseSentAt, "the cue is the close's send")
	counts := openCounts(t, f)
	require.Zero(t, counts.DICTProblems, "no DICT problem")
	require.EqualValues(t, 1, counts.PSPActionsAwaited)
	require.Less(t, counts.PSPActionAwaitedFor, time.Minute)
	require.Equal(t, stops, testutil.ToFloat64(med.DICTStopped), "not counted as a DICT stop")

	// Tried again after ProblemRetryAfter: the same cue, nothing read back.
	_, err = a.run(a.acts.CloseReport, a.current(r))
	stoppedWith(t, a, r, err, med.ProblemPSPActionAwaited, "close the report AGREED")
	require.Zero(t, openCounts(t, f).DICTProblems)

	// The PSP's notice CLOSED AGREED is the close.
	in.Status, in.AnalysisResult = dict.ReportClosed, dict.Agreed
	require.Equal(t, med.StatusAwaitingRequest, resumedByTheNotice(t, a, r, in, a.acts.CloseReport).Status)
}

// resumedByTheNotice takes in the PSP's notice in (a minute later) of the
// report r, stopped awaiting a step at the PSP, and runs its step fn
// again: done, no problem noted, and none awaits the PSP any more.
func resumedByTheNotice(t *testing.T, a *activityRun, r med.Report, in dict.InfractionReport, fn any) med.Report {
	t.Helper()
	in.LastModified = in.LastModified.Add(time.Minute)
	_, changed, err := doorsOf(a.f.store).Intake(context.Background(), in)
	require.NoError(t, err)
	require.True(t, changed)
	out, err := a.run(fn, a.current(r))
	require.NoError(t, err)
	require.Nil(t, out.DICTProblem)
	counts := openCounts(t, a.f)
	require.Zero(t, counts.PSPActionsAwaited)
	require.Zero(t, counts.PSPActionAwaitedFor)
	return out
}

// Behind a PSP, a report noticed OPEN awaits the PSP's acknowledge (the
// participant's, at the DICT): psp_action_awaited, no DICT call, until its
// notice ACKNOWLEDGED, recorded with no call. Seen failing before:
// dict_refused ("acknowledge the infraction report: ... not sent").
func TestBehindAPSPTheAcknowledgeAwaitsThePSP(t *testing.T) {
	f := newFixture(t)
	a, r, in := heldBehindAPSP(t, f, dict.ReportOpen)
	_, err := a.run(a.acts.AcknowledgeReport, r)
	stoppedWith(t, a, r, err, med.ProblemPSPActionAwaited, "the PSP acknowledges the report", "its notice ACKNOWLEDGED records it")
	counts := openCounts(t, f)
	require.Zero(t, counts.DICTProblems)
	require.EqualValues(t, 1, counts.PSPActionsAwaited)

	in.Status = dict.ReportAcknowledged
	require.Equal(t, med.StatusAcknowledged, resumedByTheNotice(t, a, r, in, a.acts.AcknowledgeReport).Status)
}
