package med_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
	"github.com/pixbank/pix/saga/sagatest"
)

// A refund request that reaches the door before our close is recorded
// (the close's answer lost and retried, the DICT's notice first) is the
// report's: recorded on it, returned once the close is; not kept on its own,
// so no page waits on it. One kept on its own before (by an earlier
// release) is no longer on-call's once its report takes it. A request kept
// on its own (its report ended) is no duplicate at its first delivery.
func TestARequestBeforeOurCloseIsTheReports(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, r := f.held(10_000, 0)
	f.step(f.store.Analyse(ctx, r.ID, dict.Agreed, "fraude", "op"))
	r, err := f.store.Get(ctx, r.ID)
	require.NoError(t, err)
	req := request(r, 10_000, dict.RefundOpen)
	// Kept on its own already, as the saga before this fix did.
	_, err = f.s.Pool().Exec(ctx, `INSERT INTO pix_med_refund_requests (id, report_id, amount_cents, dict_status, why)
		VALUES ($1, $2, 10000, 'OPEN', 'another_request')`, req.ID, r.ID)
	require.NoError(t, err)

	r, changed, err := f.store.IntakeRefund(ctx, req)
	require.NoError(t, err)
	require.True(t, changed, "recorded on its report")
	require.Equal(t, med.StatusAnalysed, r.Status)
	require.Equal(t, req.ID, r.RefundRequestID.String())
	still, _, err := f.store.Return(ctx, r)
	require.NoError(t, err)
	require.Equal(t, med.StatusAnalysed, still.Status, "returned only once the close is recorded")

	r = f.step(f.store.Closed(ctx, r, dict.InfractionReport{}))
	require.Equal(t, med.StatusAwaitingRequest, r.Status)
	require.Equal(t, req.ID, r.RefundRequestID.String())
	r, changed, err = f.store.IntakeRefund(ctx, req) // the expiry's list, 72 h later
	require.NoError(t, err)
	require.False(t, changed)
	counts, err := f.store.Open(ctx, time.Hour)
	require.NoError(t, err)
	require.Zero(t, counts.Unanswered, "the request is taken, never counted not taken")
	r = f.step(f.store.Return(ctx, r))
	require.Equal(t, med.StatusReturning, r.Status)

	// A request of a report that ended is kept on its own: not a
	// duplicate at its first delivery, one at its second.
	_, disagreed := f.held(10_000, 0)
	f.step(f.store.Analyse(ctx, disagreed.ID, dict.Disagreed, "", "op"))
	disagreed, err = f.store.Get(ctx, disagreed.ID)
	require.NoError(t, err)
	disagreed = f.step(f.store.Closed(ctx, disagreed, dict.InfractionReport{}))
	doors := &med.Doors{Store: f.store, Temporal: &sagatest.Signals{}, Log: sagatest.Discard()}
	late := request(disagreed, 5_000, dict.RefundOpen)
	_, changed, err = doors.IntakeRefund(ctx, late)
	require.NoError(t, err)
	require.True(t, changed, "its first delivery recorded it")
	_, changed, err = doors.IntakeRefund(ctx, late)
	require.NoError(t, err)
	require.False(t, changed)
}
