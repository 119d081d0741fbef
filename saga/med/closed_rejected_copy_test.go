package med_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
)

// Review r18 MED-2: a report returned in parts with nothing returned yet
// (awaiting_credit, Returns 0) whose request was closed REJECTED outside
// the run (our operator through the PSP's channel; a CLOSED REJECTED copy
// from the DICT's list) before our record of a close. Its CLOSED REJECTED
// copy taken in, the Return changes nothing: the credit that fills the
// hold is never returned to the payer after the request was rejected.
// Closed (CloseRefund takes the PSP's notice, refund_closed_at), here at
// return_until, Finish ends it rejected_at_dict (not our close: review r21
// MED-3), the hold released once,
// the books exact. Seen failing on the old Return (changed: returning, a
// devolução recorded).
func TestACreditAfterARejectedCopyIsNeverReturned(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c, r := f.nothingReturned()

	r = f.rejectedOutside(r)
	f.creditMore(c.AccountID, 4_000) // fills the hold no more (review r21 MED-2): available

	early := f.store.WithClock(func() time.Time { return r.ReturnUntil.Add(-time.Hour) })
	got, changed, err := early.Return(ctx, f.get(r))
	require.NoError(t, err)
	require.False(t, changed, "returned after its request was closed REJECTED: %s", got.Status)
	require.Equal(t, med.StatusAwaitingCredit, got.Status)
	require.Nil(t, got.RefundID)
	require.Zero(t, got.Returns)
	f.requireNoDevolucao(c.EndToEndID)
	f.requireMoney(c.AccountID, 4_000, 0)

	// At return_until: closed as the PSP noticed it, then ended.
	past := r.ReturnUntil.Add(time.Second)
	late := f.store.WithClock(func() time.Time { return past })
	r = f.get(r)
	require.Equal(t, med.StepCloseRefund, med.RunStep(r, past))
	a := newActivityRun(t, f, r)
	a.acts.BehindPSP, a.acts.Store = true, late
	r, err = a.run(a.acts.CloseRefundRequest, r)
	require.NoError(t, err)
	require.NotNil(t, r.RefundClosedAt, "our close recorded from the PSP's notice")
	require.Nil(t, r.RefundClosedRtrID)
	// Rejected at the DICT, nothing kept for return_until: ended before
	// it too (review r19 HIGH-1; the run closes it at once:
	// rejected_copy_test.go).
	require.Equal(t, med.StepFinish, med.RunStep(r, past))
	r = f.step(early.Finish(ctx, r))
	require.Equal(t, med.StatusEnded, r.Status)
	require.Equal(t, med.EndRejectedAtDICT, *r.EndCause)
	require.Nil(t, r.HoldID)
	require.Zero(t, r.ReturnedCents)
	require.Empty(t, a.dict.ops, "no DICT call")
	f.requireMoney(c.AccountID, 4_000, 0)
	f.requireBooks()
}

// rejectedOutside takes in the CLOSED REJECTED copy of r's request (its
// notice, or the DICT's list) closed outside the run: our close not
// recorded.
func (f *fixture) rejectedOutside(r med.Report) med.Report {
	closed := request(r, 10_000, dict.RefundClosed)
	closed.ID, closed.AnalysisResult, closed.LastModified = r.RefundRequestID.String(), dict.Rejected, time.Now()
	closed.RefundRejectionReason = dict.RejectionOther
	r = f.step(f.store.IntakeRefund(context.Background(), closed))
	require.Equal(f.t, string(dict.RefundClosed), *r.RefundRequestState)
	require.Equal(f.t, string(dict.RejectionOther), *f.get(r).RefundRequestDICTReason, "the DICT's reason kept")
	require.Nil(f.t, r.RefundClosedAt, "closed outside the run: our close not recorded")
	return r
}

// requireNoDevolucao checks that no devolução of the PIX e2e was recorded.
func (f *fixture) requireNoDevolucao(e2e string) { f.requireDevolucoes(e2e, 0) }

// requireDevolucoes checks that n devoluções of the PIX e2e were recorded.
func (f *fixture) requireDevolucoes(e2e string, n int) {
	f.t.Helper()
	var refunds int
	require.NoError(f.t, f.s.Pool().QueryRow(context.Background(), `SELECT count(*) FROM pix_refunds WHERE end_to_end_id = $1`, e2e).Scan(&refunds))
	require.Equal(f.t, n, refunds, "devoluções of the PIX")
}
