package med_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/saga/med"
)

// Our close of a kept request whose answer was lost, recorded ours from
// the lister's CLOSED copy before the run's retry (d611b69), counts in
// pix_med_kept_requests_closed_total{outcome="rejected"} once: the retry
// finds it recorded and counts nothing, nor does the copy again. A close
// the run records itself counts once too. (Attack review r1 LOW-b: the
// lister's record was never counted.)
func TestAKeptCloseRecordedFromTheListCountsOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	rejected := med.KeptClosed.WithLabelValues("rejected")

	a, r, req := disagreedWithRequest(t, f)
	before := testutil.ToFloat64(rejected)
	a.dict.loseNext = true
	require.Error(t, a.closeKept(r), "the answer lost: retried")
	require.Equal(t, before, testutil.ToFloat64(rejected), "nothing recorded yet")
	_, _, err := f.store.IntakeRefund(ctx, a.dict.refunds[req.ID])
	require.NoError(t, err)
	require.NotNil(t, f.kept(req.ID).ClosedAt, "recorded ours by the listed copy")
	require.Equal(t, before+1, testutil.ToFloat64(rejected), "counted as it is recorded")
	require.NoError(t, a.closeKept(r))
	_, _, err = f.store.IntakeRefund(ctx, a.dict.refunds[req.ID])
	require.NoError(t, err)
	require.Equal(t, before+1, testutil.ToFloat64(rejected), "once: the retry and the copy again count nothing")

	a2, r2, req2 := disagreedWithRequest(t, f)
	require.NoError(t, a2.closeKept(r2))
	_, _, err = f.store.IntakeRefund(ctx, a2.dict.refunds[req2.ID])
	require.NoError(t, err)
	require.Equal(t, before+2, testutil.ToFloat64(rejected), "a close the run records: once, the copy listed after counting nothing")
}
