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
	earlier := DBStats{Commits: map[string]int64{"pix": 100, "temporal": 7}, WALBytes: 1000}
	later := DBStats{Commits: map[string]int64{"pix": 130, "temporal": 27, "new": 3}, WALBytes: 5000}
	require.Equal(t, DBUse{Commits: map[string]int64{"pix": 30, "temporal": 20, "new": 3}, WALBytes: 4000}, later.Since(earlier))
	noWAL := DBStats{Commits: map[string]int64{}, WALBytes: -1}
	require.EqualValues(t, -1, later.Since(noWAL).WALBytes, "a reading without pg_stat_wal gives no WAL figure, not a huge one")
}

// The commits a workload makes are seen (PostgreSQL publishes a backend's
// counters within about a second: the test waits for them, a bounded
// while).
func TestMeasureDBSeesCommits(t *testing.T) {
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
	for range 20 {
		_, err := pool.Exec(ctx, `CREATE TEMPORARY TABLE IF NOT EXISTS dbstats_probe (x int); INSERT INTO dbstats_probe VALUES (1)`)
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		after, err := ReadDBStats(ctx, pool, nil)
		require.NoError(t, err)
		u := after.Since(before)
		return u.Commits[current] >= 20 && (before.WALBytes < 0 || u.WALBytes > 0)
	}, 30*time.Second, 100*time.Millisecond)
}
