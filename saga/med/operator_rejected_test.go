package med_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/saga/med"
)

// Review r18 MED-1: a refund request taken OPEN, then rejected by our own
// operator through the PSP's channel before the run returned anything and
// before return_until: its CLOSED REJECTED notice taken in, no close of
// ours marked (refund_close_sent_at) nor recorded. Not our close's copy
// (closedCopy, 206d5cd): the report goes the earlier route, the wait for
// its request until refund_request_due_at, then the 72 hours' expiry,
// which ends it released, nothing returned, the hold released once, the
// books exact (the runs recorded before pix-med-rejected-copy; review r19
// MED-2 closes and ends it at once). Seen failing with cddf79c's closedCopy (any CLOSED copy):
// "expected await_request, actual close_refund".
func TestARequestOurOperatorRejectedIsReleasedAtTheExpiry(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c, r := f.requestTaken()
	r = f.rejectedOutside(r)
	require.Equal(t, med.StatusAwaitingRequest, r.Status)
	require.Nil(t, r.RefundCloseSentAt, "no close of ours marked")
	require.True(t, time.Now().Before(*r.ReturnUntil))

	// The runs recorded before pix-med-rejected-copy; the others close
	// and end it at once (TestARequestRejectedBeforeAnyReturnIsEndedAtOnce).
	before := r.RequestDueAt.Add(-time.Hour)
	require.Equal(t, med.StepCloseRefund, med.RunStep(r, before))
	require.Equal(t, med.StepAwaitRequest, med.RunStepWithout(r, before, "pix-med-rejected-copy"))
	due := r.RequestDueAt.Add(time.Second)
	require.Equal(t, med.StepExpireRequest, med.RunStepWithout(r, due, "pix-med-rejected-copy"))
	got, changed, err := f.store.Return(ctx, r)
	require.NoError(t, err)
	require.False(t, changed, "nothing returned on a request rejected: %s", got.Status)

	r = f.step(f.store.ExpireRequest(ctx, r, r.RequestDueAt.Add(med.ExpiryCovered)))
	require.Equal(t, med.StatusEnded, r.Status)
	require.Equal(t, med.EndReleased, *r.EndCause)
	require.Nil(t, r.HoldID)
	require.Zero(t, r.ReturnedCents)
	require.Nil(t, r.RefundClosedAt)
	f.requireNoDevolucao(c.EndToEndID)
	f.requireMoney(c.AccountID, 10_000, 0)
	f.requireBooks()
}
