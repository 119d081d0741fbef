package med_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
)

// Review r23 MED-1, MED-2: a CLOSED request has one result; two copies
// with different results are an anomaly that LastModified does not order
// safely (a notice delivered late, a PSP's clock up to MaxClockAhead
// ahead). REJECTED sticks: once a copy says it, it is recorded and nothing
// more is returned, whatever the copies' times and their order.

// acceptedEcho is req CLOSED PARTIALLY_ACCEPTED with our rtrId, modified
// at at: the PSP's echo of our accepted close.
func acceptedEcho(req dict.Refund, rtrID string, at time.Time) dict.Refund {
	echo := req
	echo.Status, echo.AnalysisResult, echo.RefundTransactionID, echo.LastModified = dict.RefundClosed, dict.PartiallyAccepted, rtrID, at
	return echo
}

// Behind a PSP, a part returned, our accepted close recorded; the PSP's
// echo CLOSED PARTIALLY_ACCEPTED at t2 and the REJECTED notice at t1 < t2
// (our operator rejected it through the PSP; or the echo's clock ahead),
// in both orders of arrival. The REJECTED is recorded either way, noted
// dict_not_as_ours with our rtrId, counted, and the next credit is not
// returned. Seen failing before the fix with the REJECTED last: "the
// REJECTED copy is taken whatever its time" (changed false: dropped
// unseen by the LastModified fence, and the credit returned).
func TestARejectedCopyStopsTheReturnsWhateverItsTimeAndOrder(t *testing.T) {
	for _, rejectedLast := range []bool{true, false} {
		t.Run(fmt.Sprintf("rejected_last=%v", rejectedLast), func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			account, r, req := f.partReturnedClosedOurs()
			t2 := time.Now()
			echo := acceptedEcho(req, *r.RefundClosedRtrID, t2)
			rejected := closedRejectedCopy(req)
			rejected.LastModified = t2.Add(-time.Minute)
			first, last := echo, rejected
			if !rejectedLast {
				first, last = rejected, echo
			}
			f.step(f.store.IntakeRefund(ctx, first))
			open := med.Contradictions.WithLabelValues("open")
			before := testutil.ToFloat64(open)
			got, changed, err := f.store.IntakeRefund(ctx, last)
			require.NoError(t, err)
			require.True(t, changed, "the REJECTED copy is taken whatever its time; the accepted one after it noted")
			require.Equal(t, string(dict.Rejected), *got.RefundRequestDICTResult, "REJECTED sticks")
			require.NotNil(t, got.DICTProblem)
			require.Contains(t, *got.DICTProblem, med.ProblemNotAsOurs)
			require.Contains(t, *got.DICTProblem, fmt.Sprintf("rtrId %q", *r.RefundClosedRtrID), "our rtrId")
			require.True(t, got.RefundRequestModifiedAt.Equal(t2.Truncate(time.Microsecond)), "never moved back")
			require.Equal(t, before+1, testutil.ToFloat64(open), "counted as a contradiction")

			_, changed, err = f.store.IntakeRefund(ctx, last)
			require.NoError(t, err)
			require.False(t, changed, "the same copy again changes nothing")
			require.Equal(t, before+1, testutil.ToFloat64(open), "counted once")

			f.creditMore(account, 5_000)
			_, changed, err = f.store.Return(ctx, f.get(r))
			require.NoError(t, err)
			require.False(t, changed, "nothing returned on a request a copy says REJECTED")
			f.requireDevolucoes(r.EndToEndID, 1)
		})
	}
}

// Between two accepted results, the later copy wins, and the anomaly is
// noted either way: an older differing copy is never dropped unseen.
func TestTwoAcceptedResultsTheLaterWinsNoted(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, r, req := f.partReturnedClosedOurs()
	t2 := time.Now()
	r = f.step(f.store.IntakeRefund(ctx, acceptedEcho(req, *r.RefundClosedRtrID, t2)))
	require.Nil(t, r.DICTProblem)
	older := acceptedEcho(req, *r.RefundClosedRtrID, t2.Add(-time.Minute))
	older.AnalysisResult = dict.TotallyAccepted
	got := f.step(f.store.IntakeRefund(ctx, older))
	require.Equal(t, string(dict.PartiallyAccepted), *got.RefundRequestDICTResult, "an older copy does not replace it")
	require.NotNil(t, got.DICTProblem, "but is noted")
	require.Contains(t, *got.DICTProblem, string(dict.TotallyAccepted))
	newer := older
	newer.LastModified = t2.Add(time.Minute)
	got = f.step(f.store.IntakeRefund(ctx, newer))
	require.Equal(t, string(dict.TotallyAccepted), *got.RefundRequestDICTResult, "a later one does")
}

// A later copy with the result recorded moves refund_request_modified_at
// forwards and fills in the DICT's reason when none was recorded (review
// r23 MED-2, LOW-5 (a)): our NO_BALANCE close marked sent, the PSP's
// REJECTED notice without reason, then the DICT's REJECTED OTHER. Its
// report ends rejected_at_dict, not as our close (released). Seen failing
// before the fix: the OTHER copy dropped as the same result, "released".
func TestALaterSameResultCopyFillsInTheReason(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, late, closed := f.rejectedAfterOurCloseMarked("")
	closed.LastModified = time.Now().Add(-time.Hour)
	r := f.step(f.store.IntakeRefund(ctx, closed))
	require.Nil(t, r.RefundRequestDICTReason)
	other := closed
	other.RefundRejectionReason, other.LastModified = dict.RejectionOther, time.Now()
	r = f.step(f.store.IntakeRefund(ctx, other))
	require.Equal(t, string(dict.RejectionOther), *r.RefundRequestDICTReason, "the DICT's reason filled in")
	require.True(t, r.RefundRequestModifiedAt.Equal(other.LastModified.Truncate(time.Microsecond)), "moved forwards")
	_, changed, err := f.store.IntakeRefund(ctx, closed)
	require.NoError(t, err)
	require.False(t, changed, "an older copy with the same result changes nothing")

	a := newActivityRun(t, f, r)
	a.acts.Store = late
	r, err = a.run(a.acts.CloseRefundRequest, r)
	require.NoError(t, err)
	out := f.step(late.Finish(ctx, r))
	require.Equal(t, med.EndRejectedAtDICT, *out.EndCause)
}
