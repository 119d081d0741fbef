package med_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db/dbtest"
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
