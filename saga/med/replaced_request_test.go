package med_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
)

// cancelledInAwaitingCredit is an agreed report of a PIX whose account was
// drained before the hold, its refund request (OPEN at t0) returned on
// with nothing to return (awaiting_credit), then cancelled by its
// requester: the report as the run last read it, and the account.
func (f *fixture) cancelledInAwaitingCredit(t0 time.Time) (r med.Report, account string) {
	ctx := context.Background()
	c := f.credit(10_000, 0)
	require.NoError(f.t, f.spend(c.AccountID, 10_000))
	in := report(c.EndToEndID, dict.ReportOpen, time.Now().Add(-time.Hour))
	r = f.intake(in)
	r = f.step(f.store.Hold(ctx, r))
	in.Status, in.LastModified = dict.ReportAcknowledged, in.LastModified.Add(time.Minute)
	r = f.step(f.store.Acknowledged(ctx, r, in))
	f.step(f.store.Analyse(ctx, r.ID, dict.Agreed, "fraude", "operator-1"))
	r, err := f.store.Get(ctx, r.ID)
	require.NoError(f.t, err)
	r = f.step(f.store.Closed(ctx, r, dict.InfractionReport{}))
	first := request(r, 10_000, dict.RefundOpen)
	first.LastModified = t0
	r = f.step(f.store.IntakeRefund(ctx, first))
	r = f.step(f.store.Return(ctx, r))
	require.Equal(f.t, med.StatusAwaitingCredit, r.Status)
	require.Zero(f.t, r.Returns)
	first.Status, first.LastModified = dict.RefundCancelled, t0.Add(time.Minute)
	r = f.step(f.store.IntakeRefund(ctx, first))
	require.True(f.t, med.RequestCancelled(r))
	require.Equal(f.t, med.StepFinish, med.Next(r, time.Now()))
	return r, c.AccountID
}

// A refund request cancelled by its requester with nothing returned on it
// (the report awaiting credit, its hold empty) is replaced by the next
// one (docs/med.md), whichever comes first of the second request and the
// run's finish decided on the cancel: before the finish, the report takes
// it at once and the finish, fenced by the generation it read, changes
// nothing; after it, the report released takes it again (reopened). The
// money credited after is returned on it, never left to the account.
func TestARequestAfterOneCancelledWithNothingReturnedReplacesIt(t *testing.T) {
	ctx := context.Background()
	for _, finishFirst := range []bool{false, true} {
		f := newFixture(t)
		t0 := time.Now().Add(-10 * time.Minute)
		r, account := f.cancelledInAwaitingCredit(t0)
		cancelled := *r.RefundRequestID
		second := request(r, 10_000, dict.RefundOpen)
		second.LastModified = t0.Add(2 * time.Minute)
		if !finishFirst {
			// A copy of another request cancelled already replaces
			// nothing: kept on its own, the report still ends on the cancel.
			gone := request(r, 10_000, dict.RefundCancelled)
			gone.LastModified = t0.Add(90 * time.Second)
			_, changed, err := f.store.IntakeRefund(ctx, gone)
			require.NoError(t, err)
			require.False(t, changed)
			status, _ := f.keptStatus(gone.ID)
			require.Equal(t, "CANCELLED", status)
		}
		if finishFirst {
			ended := f.step(f.store.Finish(ctx, r))
			require.Equal(t, med.EndReleased, *ended.EndCause)
		}
		got := f.step(f.store.IntakeRefund(ctx, second))
		require.Equal(t, second.ID, got.RefundRequestID.String(), "finish first: %v", finishFirst)
		require.Equal(t, med.StatusAwaitingRequest, got.Status)
		require.True(t, got.RequestOpen())
		status, why := f.keptStatus(cancelled.String())
		require.Equal(t, [2]string{"CANCELLED", "replaced"}, [2]string{status, why})
		status, _ = f.keptStatus(second.ID)
		require.Empty(t, status, "taken, not on-call's")

		_, changed, err := f.store.Finish(ctx, r)
		require.NoError(t, err)
		require.False(t, changed, "a finish decided on the cancel changes nothing")
		f.creditMore(account, 10_000)
		got = f.step(f.store.Return(ctx, got))
		require.Equal(t, med.StatusReturning, got.Status)
		refund, err := f.s.GetRefund(ctx, *got.RefundID)
		require.NoError(t, err)
		require.EqualValues(t, 10_000, refund.AmountCents)
		f.requireBooks()
	}
}

// The second request and the run's finish at once: whichever the report's
// lock serves first, the report ends up answering the second request,
// open, and nothing is released to the account on the cancel's word.
func TestARequestAfterACancelledOneAndTheFinishAtOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for range 4 {
		t0 := time.Now().Add(-10 * time.Minute)
		r, _ := f.cancelledInAwaitingCredit(t0)
		second := request(r, 10_000, dict.RefundOpen)
		second.LastModified = t0.Add(2 * time.Minute)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Go(func() { <-start; _, _, errs[0] = f.store.Finish(ctx, r) })
		wg.Go(func() { <-start; _, _, errs[1] = f.store.IntakeRefund(ctx, second) })
		close(start)
		wg.Wait()
		require.NoError(t, errs[0])
		require.NoError(t, errs[1])
		got, err := f.store.Get(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, second.ID, got.RefundRequestID.String())
		require.Equal(t, med.StatusAwaitingRequest, got.Status)
		require.True(t, got.RequestOpen())
		require.Equal(t, med.StepReturn, med.Next(got, time.Now()))
	}
}
