package med_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
)

// Review of issue 37, MED-1: a refund request CLOSED accepted at the DICT
// by a close that is not our recorded one (behind a PSP, our operator
// through the PSP's channel with another rtrId; or the first copy taken
// CLOSED accepted) is a request that came, money maybe owed to the payer
// on it: the 72 hours' expiry releases nothing, the run stops visibly.

// acceptedNotOurs is a CLOSED TOTALLY_ACCEPTED copy of r's own request,
// with an rtrId that is not ours.
func acceptedNotOurs(r med.Report, id string) dict.Refund {
	in := request(r, 10_000, dict.RefundClosed)
	in.ID, in.AnalysisResult, in.LastModified = id, dict.TotallyAccepted, time.Now()
	in.RefundTransactionID = "D99999999202612072100abcdefghijk"
	return in
}

// expiresNothing runs the 72 hours' expiry on r, its request CLOSED not
// as ours (store and activity, with the DICT or behind a PSP): nothing
// released, the run stopped visibly with problem.
func (f *fixture) expiresNothing(r med.Report, psp bool, problem string) {
	t := f.t
	ctx := context.Background()
	due := r.RequestDueAt.Add(med.ExpiryCovered + time.Minute)
	require.Equal(t, med.StepExpireRequest, med.RunStep(r, due), "the run's step at the 72 hours")
	late := f.store.WithClock(func() time.Time { return due })
	_, changed, err := late.ExpireRequest(ctx, r, due)
	require.NoError(t, err)
	require.False(t, changed, "the store's expiry: a request came")

	a := newActivityRun(t, f, r)
	a.acts.Store, a.acts.BehindPSP = late, psp
	if psp {
		a.acts.DICT = med.NotConfigured
	}
	seen := request(r, 10_000, dict.RefundClosed) // read back with the DICT: as taken
	seen.ID = r.RefundRequestID.String()
	if r.RefundRequestDICTResult != nil {
		seen.AnalysisResult = dict.RefundAnalysisResult(*r.RefundRequestDICTResult)
	}
	a.dict.refunds[seen.ID] = seen
	_, err = a.run(a.acts.ExpireRequest, r)
	cur := f.requireStopped(err, r)
	require.Contains(t, *cur.DICTProblem, problem)
	require.Equal(t, med.StatusAwaitingRequest, cur.Status)
	require.Equal(t, int64(10_000), cur.HeldCents, "still held")
	f.requireNoDevolucao(r.EndToEndID)
	f.requireMoney(*r.AccountID, 10_000, 10_000)
}

// Seen failing before the fix (both modes, both cases): the store's expiry
// ended the report released, its 10,000 released to the receiver.
func TestTheExpiryReleasesNothingOnARequestAcceptedByACloseNotOurs(t *testing.T) {
	for _, psp := range []bool{false, true} {
		t.Run(map[bool]string{false: "direct", true: "behind a PSP"}[psp], func(t *testing.T) {
			t.Run("unknown, then accepted", func(t *testing.T) {
				f := newFixture(t)
				ctx := context.Background()
				r := f.agreedOn(f.credit(10_000, 0))
				r = f.step(f.store.IntakeRefund(ctx, request(r, 10_000, dict.RefundOpen)))
				r = f.closedWithoutResult(r)
				r = f.step(f.store.IntakeRefund(ctx, acceptedNotOurs(r, r.RefundRequestID.String())))
				require.Equal(t, string(dict.TotallyAccepted), *r.RefundRequestDICTResult)
				require.Nil(t, r.RefundClosedAt)
				f.expiresNothing(r, psp, "CLOSED TOTALLY_ACCEPTED")
			})
			t.Run("taken CLOSED accepted", func(t *testing.T) {
				f := newFixture(t)
				ctx := context.Background()
				r := f.agreedOn(f.credit(10_000, 0))
				in := acceptedNotOurs(r, request(r, 10_000, dict.RefundOpen).ID)
				r = f.step(f.store.IntakeRefund(ctx, in))
				require.Equal(t, string(dict.RefundClosed), *r.RefundRequestState)
				require.Equal(t, med.StatusAwaitingRequest, r.Status)
				f.expiresNothing(r, psp, "CLOSED TOTALLY_ACCEPTED")
			})
		})
	}
}

// Review of issue 37, MED-2: with the DICT, the expiry of a report whose
// request's copy is CLOSED without a result reads the request back: a
// copy that says its result is taken in (REJECTED: the run closes and
// ends it; accepted by a close not ours: stopped as such), one that still
// says none stops the run (TestTheExpiryReleasesNothingOnARequestClosedWithoutAResult).
// Seen failing before the fix: stopped "CLOSED without a result", the
// DICT's result never read.
func TestTheExpiryReadsBackARequestClosedWithoutAResult(t *testing.T) {
	for _, result := range []dict.RefundAnalysisResult{dict.Rejected, dict.TotallyAccepted} {
		t.Run(string(result), func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			c := f.credit(10_000, 0)
			r := f.agreedOn(c)
			r = f.step(f.store.IntakeRefund(ctx, request(r, 10_000, dict.RefundOpen)))
			r = f.closedWithoutResult(r)
			due := r.RequestDueAt.Add(med.ExpiryCovered + time.Minute)
			a := newActivityRun(t, f, r)
			a.acts.Store = f.store.WithClock(func() time.Time { return due })
			seen := acceptedNotOurs(r, r.RefundRequestID.String())
			if result == dict.Rejected {
				seen = closedRejectedCopy(request(r, 10_000, dict.RefundClosed))
				seen.ID = r.RefundRequestID.String()
			}
			a.dict.refunds[seen.ID] = seen
			got, err := a.run(a.acts.ExpireRequest, r)
			require.NoError(t, err)
			require.Equal(t, string(result), *got.RefundRequestDICTResult, "its result taken in")
			if result == dict.Rejected {
				require.Equal(t, med.StepCloseRefund, med.RunStep(got, due), "closed, then ended rejected_at_dict")
			} else {
				require.Equal(t, med.StepExpireRequest, med.RunStep(got, due))
				_, err = a.run(a.acts.ExpireRequest, got)
				cur := f.requireStopped(err, r)
				require.Contains(t, *cur.DICTProblem, "CLOSED TOTALLY_ACCEPTED")
			}
			require.Equal(t, med.StatusAwaitingRequest, f.get(r).Status)
			require.Equal(t, int64(10_000), f.get(r).HeldCents, "still held")
			f.requireNoDevolucao(c.EndToEndID)
		})
	}
}

// Review of issue 37, LOW-2: a report cancelled by its reporter whose
// request is CLOSED with no result, or accepted by a close not ours
// (closedNotOurs), is not ended, what it holds released: money may be
// owed to the payer on it. The run steps to the cancel, which stops
// visibly, nothing released. Seen failing before the fix: the store's
// Cancel, by status only, ended it released.
func TestACancelReleasesNothingOnARequestClosedNotOurs(t *testing.T) {
	for name, closeIt := range map[string]func(f *fixture, r med.Report) med.Report{
		"without a result": func(f *fixture, r med.Report) med.Report { return f.closedWithoutResult(r) },
		"accepted not ours": func(f *fixture, r med.Report) med.Report {
			return f.step(f.store.IntakeRefund(context.Background(), acceptedNotOurs(r, r.RefundRequestID.String())))
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			c := f.credit(10_000, 0)
			in := report(c.EndToEndID, dict.ReportOpen, time.Now().Add(-time.Hour))
			r := f.intake(in)
			r = f.step(f.store.Hold(ctx, r))
			r = f.step(f.store.Acknowledged(ctx, r, dict.InfractionReport{}))
			f.step(f.store.Analyse(ctx, r.ID, dict.Agreed, "", "operator-1"))
			r = f.step(f.store.Closed(ctx, f.get(r), dict.InfractionReport{}))
			r = f.step(f.store.IntakeRefund(ctx, request(r, 10_000, dict.RefundOpen)))
			r = closeIt(f, r)
			in.Status, in.LastModified = dict.ReportCancelled, time.Now()
			r = f.step(doorsOf(f.store).Intake(ctx, in))
			require.True(t, r.Cancelled())

			require.Equal(t, med.StepCancel, med.RunStep(r, time.Now()), "the run steps to the cancel, which stops")
			_, changed, err := f.store.Cancel(ctx, r)
			require.NoError(t, err)
			require.False(t, changed, "the store cancels it no more")

			a := newActivityRun(t, f, r)
			_, err = a.run(a.acts.CancelReport, r)
			cur := f.requireStopped(err, r)
			require.Contains(t, *cur.DICTProblem, "cancelled by its reporter, but")
			require.Equal(t, med.StatusAwaitingRequest, cur.Status)
			require.Equal(t, int64(10_000), cur.HeldCents, "still held")
			f.requireMoney(c.AccountID, 10_000, 10_000)
		})
	}
}

// Review r6 HIGH-1: a report cancelled by its reporter while still under
// analysis (acknowledged, never closed by us) whose PIX's refund request
// was taken CLOSED not as ours steps to the cancel and stops visibly,
// nothing released; it never waits for an analysis the store would refuse
// on a cancelled report (no stop, nothing alerting, no release route).
// Seen failing with cancellable excluding closedNotOurs: its step was
// await_analysis.
func TestACancelledReportUnderAnalysisWithARequestClosedNotOursStops(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c := f.credit(10_000, 0)
	in := report(c.EndToEndID, dict.ReportOpen, time.Now().Add(-time.Hour))
	r := f.intake(in)
	r = f.step(f.store.Hold(ctx, r))
	r = f.step(f.store.Acknowledged(ctx, r, dict.InfractionReport{}))
	r = f.step(f.store.IntakeRefund(ctx, request(r, 10_000, dict.RefundOpen)))
	f.closedWithoutResult(r)
	in.Status, in.LastModified = dict.ReportCancelled, time.Now()
	r = f.step(doorsOf(f.store).Intake(ctx, in))
	require.True(t, r.Cancelled())
	require.Equal(t, med.StatusAcknowledged, r.Status)

	require.Equal(t, med.StepCancel, med.RunStep(r, time.Now()), "cancelled: the run steps to the cancel")
	a := newActivityRun(t, f, r)
	_, err := a.run(a.acts.CancelReport, r)
	cur := f.requireStopped(err, r)
	require.Contains(t, *cur.DICTProblem, "cancelled by its reporter, but")
	require.Equal(t, int64(10_000), cur.HeldCents, "still held")
	f.requireMoney(c.AccountID, 10_000, 10_000)
}

// Review of issue 37, LOW-1: a copy of its own request CLOSED with no
// result, or accepted by a close not ours, taken while the report awaits
// its request (or before its close, then seen as it closes) is noted
// dict_not_as_ours at once and counted, not left unseen up to the 72
// hours; the run's step is unchanged (it waits, then stops at the expiry).
// Seen failing before the fix: no dict_problem until the expiry.
func TestACopyClosedNotOursIsNotedAsItIsTaken(t *testing.T) {
	for name, c := range map[string]struct {
		before  bool // taken before the report's close
		copyOf  func(r med.Report) dict.Refund
		problem string
	}{
		"without a result": {copyOf: func(r med.Report) dict.Refund {
			in := request(r, 10_000, dict.RefundClosed)
			in.ID, in.LastModified = r.RefundRequestID.String(), time.Now()
			return in
		}, problem: "CLOSED without a result"},
		"accepted not ours": {copyOf: func(r med.Report) dict.Refund { return acceptedNotOurs(r, r.RefundRequestID.String()) },
			problem: "CLOSED TOTALLY_ACCEPTED"},
		"taken CLOSED accepted": {copyOf: func(r med.Report) dict.Refund {
			return acceptedNotOurs(r, request(r, 10_000, dict.RefundOpen).ID)
		}, problem: "CLOSED TOTALLY_ACCEPTED"},
		"taken CLOSED accepted before the close": {before: true, copyOf: func(r med.Report) dict.Refund {
			return acceptedNotOurs(r, request(r, 10_000, dict.RefundOpen).ID)
		}, problem: "CLOSED TOTALLY_ACCEPTED"},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			var r med.Report
			if c.before {
				r = f.intake(report(f.credit(10_000, 0).EndToEndID, dict.ReportOpen, time.Now().Add(-time.Hour)))
				r = f.step(f.store.Hold(ctx, r))
				r = f.step(f.store.Acknowledged(ctx, r, dict.InfractionReport{}))
				f.step(f.store.Analyse(ctx, r.ID, dict.Agreed, "", "operator-1"))
				r = f.get(r)
			} else {
				r = f.agreedOn(f.credit(10_000, 0))
			}
			if name == "without a result" || name == "accepted not ours" {
				r = f.step(f.store.IntakeRefund(ctx, request(r, 10_000, dict.RefundOpen)))
			}
			open := med.Contradictions.WithLabelValues("open")
			before := testutil.ToFloat64(open)
			r = f.step(doorsOf(f.store).IntakeRefund(ctx, c.copyOf(r)))
			require.Equal(t, string(dict.RefundClosed), *r.RefundRequestState)
			if c.before {
				require.Nil(t, r.DICTProblem, "not awaiting its request yet")
				r = f.step(f.store.Closed(ctx, r, dict.InfractionReport{}))
			} else {
				require.Equal(t, before+1, testutil.ToFloat64(open), "counted")
			}
			require.Equal(t, med.StatusAwaitingRequest, r.Status)
			require.NotNil(t, r.DICTProblem, "seen at once")
			require.Contains(t, *r.DICTProblem, med.ProblemNotAsOurs)
			require.Contains(t, *r.DICTProblem, c.problem)
			require.Equal(t, med.StepAwaitRequest, med.RunStep(r, time.Now()), "the run's step unchanged")
			counts, err := f.store.Open(ctx, med.AnalysisAlertBefore)
			require.NoError(t, err)
			require.Equal(t, int64(1), counts.DICTProblems, "the alert's gauge")
		})
	}
}

// Review r6 LOW-1: a report cancelled by its reporter whose request's copy
// is taken CLOSED after our close was sent (marked) but before it was
// recorded (the answer lost): with the DICT, the cancel reads the request
// back, as the close would (CloseRefundRequest), and records our close on
// the DICT's definitive word; the cancel then ends the report, released.
// A DICT that holds the request otherwise (accepted: money maybe owed)
// stops the run visibly as the close's read-back does, nothing released.
// Seen failing before the fix: stopped "cancelled by its reporter, but",
// every ProblemRetryAfter, with the DICT's answer never read.
func TestACancelAfterOurCloseWasSentReadsTheCloseBack(t *testing.T) {
	for _, dictSays := range []dict.RefundAnalysisResult{dict.Rejected, dict.TotallyAccepted} {
		t.Run(string(dictSays), func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			c := f.credit(10_000, 0)
			in := report(c.EndToEndID, dict.ReportOpen, time.Now().Add(-time.Hour))
			r := f.agreedFrom(in)
			req := request(r, 10_000, dict.RefundOpen)
			r = f.step(f.store.IntakeRefund(ctx, req))
			// Taken too late: closed REJECTED NO_BALANCE as the deadline
			// closes it; the DICT closes it, the answer is lost.
			past := r.ReturnUntil.Add(time.Second)
			late := f.store.WithClock(func() time.Time { return past })
			a := newActivityRun(t, f, r)
			a.acts.Store = late
			a.dict.refunds[req.ID] = req
			a.dict.loseNext = true
			require.Equal(t, med.StepCloseRefund, med.RunStep(r, past))
			_, err := a.run(a.acts.CloseRefundRequest, r)
			require.Error(t, err, "the answer lost")
			r = a.current(r)
			require.True(t, r.Sent(med.WriteRefundClose))
			require.Nil(t, r.RefundClosedAt)
			if dictSays != dict.Rejected { // the DICT holds it otherwise
				seen := acceptedNotOurs(r, req.ID)
				a.dict.refunds[req.ID] = seen
			}
			r = f.closedWithoutResult(r) // the lister's copy: CLOSED, no result said
			in.Status, in.LastModified = dict.ReportCancelled, time.Now()
			r = f.step(doorsOf(f.store).Intake(ctx, in))
			require.True(t, r.Cancelled())
			require.Equal(t, med.StepCancel, med.RunStep(r, past))

			got, err := a.run(a.acts.CancelReport, r)
			if dictSays != dict.Rejected {
				cur := f.requireStopped(err, r)
				require.NotContains(t, *cur.DICTProblem, "cancelled by its reporter, but")
				require.Contains(t, *cur.DICTProblem, "not as we close it")
				require.Equal(t, int64(10_000), cur.HeldCents, "still held")
				f.requireMoney(c.AccountID, 10_000, 10_000)
				return
			}
			require.NoError(t, err, "read back and recorded, not stopped")
			require.NotNil(t, got.RefundClosedAt, "our close recorded from the DICT's word")
			require.Nil(t, got.DICTProblem)
			require.Equal(t, med.StepCancel, med.RunStep(got, past))
			got, err = a.run(a.acts.CancelReport, got)
			require.NoError(t, err)
			require.Equal(t, med.StatusEnded, got.Status)
			require.Equal(t, med.EndCancelled, *got.EndCause)
			require.Equal(t, 1, a.dict.sent["closeRefund"], "closed once")
			f.requireMoney(c.AccountID, 10_000, 0)
			f.requireNoDevolucao(c.EndToEndID)
			f.requireBooks()
		})
	}
}

// agreedFrom is agreedOn of the report in, taken in.
func (f *fixture) agreedFrom(in dict.InfractionReport) med.Report {
	ctx := context.Background()
	r := f.intake(in)
	r = f.step(f.store.Hold(ctx, r))
	r = f.step(f.store.Acknowledged(ctx, r, dict.InfractionReport{}))
	f.step(f.store.Analyse(ctx, r.ID, dict.Agreed, "", "operator-1"))
	return f.step(f.store.Closed(ctx, f.get(r), dict.InfractionReport{}))
}
