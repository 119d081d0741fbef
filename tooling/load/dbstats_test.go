package load

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
)

func TestDBStatsSinceCountsGrowth(t *testing.T) {
	t.Parallel()
	earlier := DBStats{Commits: map[string]int64{"pix": 100, "temporal": 7}, NextXid: 500, WALPosition: 1000}
	later := DBStats{Commits: map[string]int64{"pix": 130, "temporal": 27, "new": 3}, NextXid: 540, WALPosition: 5000}
	require.Equal(t, DBUse{Commits: map[string]int64{"pix": 30, "temporal": 20, "new": 3}, WriteXacts: 40, WALBytes: 4000}, later.Since(earlier))
}

// The commits a workload makes are seen (PostgreSQL publishes a backend's
// counters within about a second: the test waits for them, a bounded
// while).
func TestMeasureDBSeesCommits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := db.Open(ctx, dbtest.URL(t), 2)
	require.NoError(t, err)
	defer pool.Close()
	var current string
	require.NoError(t, pool.QueryRow(ctx, `SELECT current_database()`).Scan(&current))
	before, err := ReadDBStats(ctx, pool, []string{"no_such_database_here"})
	require.NoError(t, err)
	require.Contains(t, before.Commits, current)
	require.NotContains(t, before.Commits, "no_such_database_here")
	_, err = pool.Exec(ctx, `CREATE TABLE dbstats_probe (x int)`)
	require.NoError(t, err)
	for range 20 {
		_, err := pool.Exec(ctx, `INSERT INTO dbstats_probe VALUES (1)`)
		require.NoError(t, err)
	}
	// The exact counters at once: at least this test's 21 writing
	// transactions (others may run on the server too), and their log.
	after, err := ReadDBStats(ctx, pool, nil)
	require.NoError(t, err)
	u := after.Since(before)
	require.GreaterOrEqual(t, u.WriteXacts, int64(21))
	require.Positive(t, u.WALBytes)
	// The per-database commits within the statistics' publishing delay.
	require.Eventually(t, func() bool {
		after, err := ReadDBStats(ctx, pool, nil)
		require.NoError(t, err)
		return after.Since(before).Commits[current] >= 21
	}, 30*time.Second, 100*time.Millisecond)
}
