package med_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
)

// Review r22 F2: a refund request whose copy is CLOSED with no result said
// (the DICT's Refund leaves AnalysisResult optional; both doors take such a
// copy) is never returned on: accepted or rejected is unknown. The run
// stops visibly, the hold kept, until its result is taken.

// closedWithoutResult takes in r's own request CLOSED with no
// AnalysisResult, our close not recorded.
func (f *fixture) closedWithoutResult(r med.Report) med.Report {
	closed := request(r, 10_000, dict.RefundClosed)
	closed.ID, closed.LastModified = r.RefundRequestID.String(), time.Now()
	r = f.step(f.store.IntakeRefund(context.Background(), closed))
	require.Equal(f.t, string(dict.RefundClosed), *r.RefundRequestState)
	require.Nil(f.t, r.RefundRequestDICTResult, "no result said")
	require.Nil(f.t, r.RefundClosedAt)
	return r
}

// Nothing returned yet (awaiting_credit), the request's copy CLOSED without
// a result, then a credit that fills the hold: the run's Return stops
// visibly, nothing captured, no devolução, the 4,000 held. Seen failing
// before the fix: the credit was captured and a devolução paid.
func TestNothingIsReturnedOnARequestClosedWithoutAResult(t *testing.T) {
	for _, psp := range []bool{false, true} {
		t.Run(map[bool]string{false: "direct", true: "behind a PSP"}[psp], func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			c, r := f.nothingReturned()
			r = f.closedWithoutResult(r)
			f.creditMore(c.AccountID, 4_000)
			r = f.get(r)
			require.Equal(t, int64(4_000), r.HeldCents, "the credit filled the hold")
			require.Equal(t, med.StepReturn, med.RunStep(r, time.Now()))

			_, changed, err := f.store.Return(ctx, r)
			require.NoError(t, err)
			require.False(t, changed, "nothing captured by the store")
			f.requireNoDevolucao(c.EndToEndID)

			a := newActivityRun(t, f, r)
			a.acts.BehindPSP = psp
			_, err = a.run(a.acts.ReturnReport, r)
			cur := f.requireStopped(err, r)
			require.Contains(t, *cur.DICTProblem, "CLOSED without a result")
			require.Equal(t, med.StatusAwaitingCredit, cur.Status)
			require.Equal(t, int64(4_000), cur.HeldCents, "still held")
			require.Zero(t, cur.Returns)
			f.requireNoDevolucao(c.EndToEndID)
			f.requireMoney(c.AccountID, 4_000, 4_000)
			f.requireBooks()
			counts, err := f.store.Open(ctx, med.AnalysisAlertBefore)
			require.NoError(t, err)
			require.Equal(t, int64(1), counts.DICTProblems, "the stop is seen on an open report")

			// Its result taken later (REJECTED) decides: closed, then ended.
			rejected := closedRejectedCopy(request(r, 10_000, dict.RefundClosed))
			rejected.ID = r.RefundRequestID.String()
			cur = f.step(f.store.IntakeRefund(ctx, rejected))
			require.Equal(t, med.StepCloseRefund, med.RunStep(cur, time.Now()))
		})
	}
}

// Behind a PSP, a part returned, then the PSP's notice of the request
// CLOSED without a result before our close is recorded: it is not taken as
// our PARTIALLY_ACCEPTED close (returns would go on on a request maybe
// rejected); the close stops visibly, nothing recorded. Seen failing before
// the fix: our close recorded with our rtrId, no stop.
func TestAPSPNoticeClosedWithoutAResultIsNotOurAcceptedClose(t *testing.T) {
	f := newFixture(t)
	_, r, _ := f.partReturnedNotClosed()
	r = f.closedWithoutResult(r)
	require.Equal(t, med.StepCloseRefund, med.RunStep(r, time.Now()))
	a := newActivityRun(t, f, r)
	a.acts.BehindPSP = true
	_, err := a.run(a.acts.CloseRefundRequest, r)
	cur := f.requireStopped(err, r)
	require.Contains(t, *cur.DICTProblem, "CLOSED without a result")
	require.Nil(t, cur.RefundClosedAt, "not recorded as answered with our rtrId")
	require.Nil(t, cur.RefundClosedRtrID)
	require.Empty(t, a.dict.ops, "no DICT call")
}

// Its request taken OPEN and not returned on yet (awaiting_refund_request),
// then its copy CLOSED without a result: at the 72 hours the run's expiry
// releases nothing (accepted or rejected is unknown: the hold is kept) and
// stops visibly, with the DICT and behind a PSP; the store's expiry
// changes nothing. Found by the model test (TestMEDAgainstAModelBehindAPSP:
// expire_request on such a report, which the model says stops). Seen
// failing before the fix: the store's expiry ended the report released,
// its 10,000 held released.
func TestTheExpiryReleasesNothingOnARequestClosedWithoutAResult(t *testing.T) {
	for _, psp := range []bool{false, true} {
		t.Run(map[bool]string{false: "direct", true: "behind a PSP"}[psp], func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			c := f.credit(10_000, 0)
			r := f.agreedOn(c)
			r = f.step(f.store.IntakeRefund(ctx, request(r, 10_000, dict.RefundOpen)))
			require.Equal(t, med.StatusAwaitingRequest, r.Status)
			r = f.closedWithoutResult(r)
			f.expiresNothing(r, psp, "CLOSED without a result")
		})
	}
}

// Review r6 LOW-3: the note (or stop) "CLOSED without a result" is
// rewritten as the request's result is taken (closedResultNoticed), not
// left until the run's next stop: REJECTED clears it (the run closes and
// ends the report, woken by the intake), accepted by a close not ours
// says so, and a cancel's stop keeps its "cancelled by its reporter, but".
// Seen failing before the fix: the text still said "without a result".
func TestAResultTakenRewritesTheClosedWithoutAResultNote(t *testing.T) {
	for _, c := range []struct {
		name      string
		cancelled bool
		result    dict.RefundAnalysisResult
		want      string // "": cleared
	}{
		{name: "rejected", result: dict.Rejected},
		{name: "accepted not ours", result: dict.TotallyAccepted, want: "CLOSED TOTALLY_ACCEPTED and no close of ours"},
		{name: "cancelled, accepted not ours", cancelled: true, result: dict.TotallyAccepted,
			want: "cancelled by its reporter, but the DICT's copy has the refund request CLOSED TOTALLY_ACCEPTED"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			in := report(f.credit(10_000, 0).EndToEndID, dict.ReportOpen, time.Now().Add(-time.Hour))
			r := f.agreedFrom(in)
			r = f.step(f.store.IntakeRefund(ctx, request(r, 10_000, dict.RefundOpen)))
			r = f.closedWithoutResult(r)
			require.Contains(t, derefS(r.DICTProblem), "CLOSED without a result", "noted as it is taken")
			if c.cancelled {
				in.Status, in.LastModified = dict.ReportCancelled, time.Now()
				r = f.step(doorsOf(f.store).Intake(ctx, in))
				a := newActivityRun(t, f, r)
				_, err := a.run(a.acts.CancelReport, r)
				r = f.requireStopped(err, r)
				require.Contains(t, *r.DICTProblem, "cancelled by its reporter, but the DICT's copy has the refund request CLOSED without a result")
			}
			seen := acceptedNotOurs(r, r.RefundRequestID.String())
			if c.result == dict.Rejected {
				seen = closedRejectedCopy(request(r, 10_000, dict.RefundClosed))
				seen.ID = r.RefundRequestID.String()
			}
			seen.LastModified = time.Now().Add(time.Second)
			r = f.step(f.store.IntakeRefund(ctx, seen))
			require.Equal(t, string(c.result), derefS(r.RefundRequestDICTResult))
			if c.want == "" {
				require.Nil(t, r.DICTProblem)
				return
			}
			require.NotContains(t, derefS(r.DICTProblem), "without a result")
			require.Contains(t, derefS(r.DICTProblem), c.want)
			require.True(t, strings.HasPrefix(*r.DICTProblem, med.ProblemNotAsOurs+": "))
		})
	}
}
