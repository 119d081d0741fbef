package med_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
)

// An old OPEN copy of a refund request, delivered after its CANCELLED copy
// (the notices come again and in any order), never opens it again: the
// run returns nothing. Nor does a later-dated OPEN copy (CANCELLED and
// CLOSED are final at the DICT); the same holds for a request kept on its
// own (pix_med_refund_requests).
func TestAnOldRefundRequestCopyNeverReopensItsCancel(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, r := f.agreed(10_000, 0)
	t0 := time.Now().Add(-time.Minute)
	open := request(r, 10_000, dict.RefundOpen)
	open.CreationTime, open.LastModified = t0, t0
	cancelled := open
	cancelled.Status, cancelled.LastModified = dict.RefundCancelled, t0.Add(30*time.Second)
	r, changed, err := f.store.IntakeRefund(ctx, cancelled)
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, string(dict.RefundCancelled), *r.RefundRequestState)

	for _, stale := range []time.Time{t0, t0.Add(time.Minute)} {
		open.LastModified = stale
		r, changed, err = f.store.IntakeRefund(ctx, open)
		require.NoError(t, err)
		require.False(t, changed, "an OPEN copy (modified %s) after the CANCELLED one", stale)
		require.Equal(t, string(dict.RefundCancelled), *r.RefundRequestState)
	}
	r, _, err = f.store.Return(ctx, r)
	require.NoError(t, err)
	require.NotEqual(t, med.StatusReturning, r.Status, "money returned on a cancelled request")
	require.Nil(t, r.RefundID)

	// A request kept on its own (its report ended, disagreed): cancelled,
	// an old OPEN copy does not count it open again.
	_, disagreed := f.held(10_000, 0)
	f.step(f.store.Analyse(ctx, disagreed.ID, dict.Disagreed, "", "operator-1"))
	disagreed, err = f.store.Get(ctx, disagreed.ID)
	require.NoError(t, err)
	disagreed = f.step(f.store.Closed(ctx, disagreed, dict.InfractionReport{}))
	other := request(disagreed, 5_000, dict.RefundCancelled)
	other.CreationTime, other.LastModified = t0, t0.Add(30*time.Second)
	_, _, err = f.store.IntakeRefund(ctx, other)
	require.NoError(t, err)
	for _, stale := range []time.Time{t0, t0.Add(time.Minute)} {
		other.Status, other.LastModified = dict.RefundOpen, stale
		_, _, err = f.store.IntakeRefund(ctx, other)
		require.NoError(t, err)
		var status string
		require.NoError(t, f.s.Pool().QueryRow(ctx, `SELECT dict_status FROM pix_med_refund_requests WHERE id = $1`, other.ID).Scan(&status))
		require.Equal(t, string(dict.RefundCancelled), status)
	}
}
