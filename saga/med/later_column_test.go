package med_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/med"
)

// A column a later migration adds to the saga's tables (as 0061 added
// pix_med_reports.refund_request_dict_reason) is ignored by this build's
// reads, not the failure of every read of the table (pgx's by-name scan
// refused it: review r23 MED-3).
func TestTheStoreReadsRowsWithAColumnAddedAfterIt(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	dbtest.AddLaterColumns(t, f.s, "pix_med_reports", "pix_med_refund_requests")

	c, r := f.held(1000, 0)
	got, err := f.store.Get(ctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, r.ID, got.ID)
	of, err := f.store.OfPIX(ctx, c.EndToEndID, 10)
	require.NoError(t, err)
	require.Len(t, of, 1)
	list, err := f.store.List(ctx, nil, 10)
	require.NoError(t, err)
	require.Len(t, list, 1)
	_, err = f.store.KeptRequests(ctx, nil, 10)
	require.NoError(t, err)
}

// A column added while the build serves changes the result type of the
// statements each pooled connection has already prepared (SELECT *,
// RETURNING *): PostgreSQL fails each once with 0A000 "cached plan must not
// change result type", and pgx drops it. A transaction runs again (InTx),
// and a read outside one fails as unavailable (503, the caller's retry),
// never as a bug (review r25 MED-1).
func TestTheStoreRunsItsPreparedStatementsAgainAfterAColumnIsAdded(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	reads := func(r med.Report) []func() error {
		return []func() error{
			func() error { _, err := f.store.Get(ctx, r.ID); return err },
			func() error { _, err := f.store.OfPIX(ctx, r.EndToEndID, 10); return err },
			func() error { _, err := f.store.List(ctx, nil, 10); return err },
			func() error { _, err := f.store.KeptRequests(ctx, nil, 10); return err },
		}
	}
	_, first := f.held(1000, 0)
	for _, read := range reads(first) {
		require.NoError(t, read())
	}

	dbtest.AddLaterColumns(t, f.s, "pix_med_reports", "pix_med_refund_requests")

	_, second := f.held(1000, 0) // the same transactions, on the same pool
	for _, read := range reads(second) {
		// Each connection that prepared the read fails it once at most.
		var err error
		for range f.s.Pool().Config().MaxConns + 1 {
			if err = read(); err == nil {
				break
			}
			require.ErrorIs(t, err, pix.ErrUnavailable)
		}
		require.NoError(t, err)
	}
}
