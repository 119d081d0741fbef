package med_test

import (
	"context"
	"testing"
	"time"

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

// expiresNothing runs the 72 hours' expiry on r (store and activity, with
// the DICT or behind a PSP): nothing released, the run stopped visibly.
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
			require.Nil(t, got.DICTProblem)
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
