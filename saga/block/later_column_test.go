package block_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db/dbtest"
)

// A column a later migration adds to pix_blocks is ignored by this
// build's reads, not the failure of every read of the table (pgx's
// by-name scan refused it: review r23 MED-3).
func TestTheStoreReadsRowsWithAColumnAddedAfterIt(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	dbtest.AddLaterColumns(t, f.s, "pix_blocks")

	c, b := f.blocked(1000)
	got, err := f.store.Get(ctx, b.ID)
	require.NoError(t, err)
	require.Equal(t, b.ID, got.ID)
	of, err := f.store.OfPIX(ctx, c.EndToEndID, nil, 10)
	require.NoError(t, err)
	require.Len(t, of, 1)
	_, err = f.store.Queue().Claim(ctx, 10, time.Minute)
	require.NoError(t, err)
}
