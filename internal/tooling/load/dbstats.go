package load

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The database accounting says what a measurement asked of PostgreSQL:
// the transactions each database committed (pg_stat_database.xact_commit)
// and the write-ahead log the server wrote (pg_stat_wal.wal_bytes, the whole
// server's, PostgreSQL 14 and later). Per webhook and per credit they size
// the databases' commit rate and log throughput. PostgreSQL publishes a
// backend's counters when its transaction ends, at most once a second for a
// busy one: over a measurement of a few seconds they are close, not exact.

// DBStats are the counters at one instant.
type DBStats struct {
	At time.Time
	// Commits by database name.
	Commits map[string]int64
	// WALBytes is -1 when the server has no pg_stat_wal.
	WALBytes int64
}

// DBUse is what was spent between two readings.
type DBUse struct {
	Commits  map[string]int64 `json:"commits"`
	WALBytes int64            `json:"wal_bytes"`
}

// ReadDBStats reads the counters of the pool's own database and of each
// database of others that exists on the same server.
func ReadDBStats(ctx context.Context, pool *pgxpool.Pool, others []string) (DBStats, error) {
	s := DBStats{At: time.Now(), Commits: map[string]int64{}, WALBytes: -1}
	rows, err := pool.Query(ctx, `
		SELECT datname, xact_commit FROM pg_stat_database
		WHERE datname = current_database() OR datname = ANY($1::text[])`, others)
	if err != nil {
		return s, fmt.Errorf("database stats: %w", err)
	}
	var name string
	var commits int64
	if _, err := pgx.ForEachRow(rows, []any{&name, &commits}, func() error {
		s.Commits[name] = commits
		return nil
	}); err != nil {
		return s, fmt.Errorf("database stats: %w", err)
	}
	var hasWAL bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass('pg_catalog.pg_stat_wal') IS NOT NULL`).Scan(&hasWAL); err != nil {
		return s, fmt.Errorf("database stats: %w", err)
	}
	if hasWAL {
		if err := pool.QueryRow(ctx, `SELECT wal_bytes::bigint FROM pg_stat_wal`).Scan(&s.WALBytes); err != nil {
			return s, fmt.Errorf("database stats: %w", err)
		}
	}
	return s, nil
}

// Since is what was spent from earlier to s. A database that appeared in
// between counts from zero; WALBytes is -1 when either reading lacked it.
func (s DBStats) Since(earlier DBStats) DBUse {
	u := DBUse{Commits: map[string]int64{}, WALBytes: -1}
	for name, n := range s.Commits {
		u.Commits[name] = n - earlier.Commits[name]
	}
	if s.WALBytes >= 0 && earlier.WALBytes >= 0 {
		u.WALBytes = s.WALBytes - earlier.WALBytes
	}
	return u
}

// MeasureDB runs f and returns what PostgreSQL committed and logged over
// it; nil (and f's error) when f failed, nil when a reading failed (the
// accounting is a report, never a reason to stop a run).
func MeasureDB(ctx context.Context, pool *pgxpool.Pool, others []string, f func() error) (*DBUse, error) {
	before, beforeErr := ReadDBStats(ctx, pool, others)
	if err := f(); err != nil {
		return nil, err
	}
	after, afterErr := ReadDBStats(ctx, pool, others)
	if beforeErr != nil || afterErr != nil {
		return nil, nil
	}
	use := after.Since(before)
	return &use, nil
}
