package scheduled_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db/dbtest"
)

// A column a later migration adds to pix_scheduled is ignored by this
// build's reads, not the failure of every read of the table (pgx's
// by-name scan refused it: review r23 MED-3).
func TestTheStoreReadsRowsWithAColumnAddedAfterIt(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	dbtest.AddLaterColumns(t, f.s, "pix_scheduled")

	f.account("acc-later", 10_000)
	s := f.schedule("acc-later", 1000, time.Now().Add(time.Hour))
	got, err := f.store.Get(ctx, s.ID)
	require.NoError(t, err)
	require.Equal(t, s.ID, got.ID)
	list, err := f.store.List(ctx, "acc-later", "", nil, 10)
	require.NoError(t, err)
	require.Len(t, list, 1)
}
