package load

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db/dbtest"
)

// The grouped ceiling commits its inserts batch rows at a time; the single
// one commits each. Correctness only: no rate is asserted.
func TestIngestCeilingsCountInsertsAndCommits(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t) // skips in -short: needs PostgreSQL
	ctx := context.Background()

	grouped, err := GroupedIngestCeiling(ctx, url, 2, 8, 200*time.Millisecond)
	require.NoError(t, err)
	require.Positive(t, grouped.Commits)
	require.Equal(t, 8*grouped.Commits, grouped.Inserts, "every transaction holds 8 rows")
	require.Positive(t, grouped.PerSecond)

	single, err := IngestCeiling(ctx, url, 2, 200*time.Millisecond)
	require.NoError(t, err)
	require.Positive(t, single.Inserts)
	require.Equal(t, single.Inserts, single.Commits, "one commit per insert")

	_, err = GroupedIngestCeiling(ctx, url, 2, 1, time.Millisecond)
	require.Error(t, err, "a batch of one row is the single-insert ceiling, not a group")
}
