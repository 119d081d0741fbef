package med_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
)

// A request taken to replace one its requester cancelled is not closed by
// the refund close marked sent for the one before (review r23 LOW-5 (b)):
// the mark is cleared, else closedByTheDICT and closedCopy took it for
// ours and MarkSent never marked the new request's close. Seen failing
// before the fix: the first request's mark stayed.
func TestANewRequestClearsTheCloseMarkedForTheOneBefore(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, r := f.nothingReturned()
	late := f.store.WithClock(func() time.Time { return r.ReturnUntil.Add(time.Second) })
	r = f.step(late.MarkSent(ctx, r, med.WriteRefundClose))
	require.NotNil(t, r.RefundCloseSentAt)
	cancelled := request(r, 10_000, dict.RefundCancelled)
	cancelled.ID, cancelled.LastModified = r.RefundRequestID.String(), time.Now()
	r = f.step(f.store.IntakeRefund(ctx, cancelled))
	require.True(t, med.RequestCancelled(r))
	require.NotNil(t, r.RefundCloseSentAt, "the cancelled request's mark stays on it")

	next := request(r, 10_000, dict.RefundOpen)
	next.LastModified = time.Now()
	r = f.step(f.store.IntakeRefund(ctx, next))
	require.Equal(t, next.ID, r.RefundRequestID.String(), "the new request taken")
	require.Nil(t, r.RefundCloseSentAt, "no close of it marked")
	require.Nil(t, r.RefundRequestDICTResult)
	require.Nil(t, r.RefundRequestDICTReason)
}
