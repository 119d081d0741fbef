package load

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The database accounting says what a measurement asked of PostgreSQL,
// which sizes the databases' commit rate and log throughput:
//   - the write transactions of the whole server: the transaction ids
//     assigned (only a transaction that writes gets one), exact;
//   - the write-ahead log the server wrote: its insert position's
//     advance, exact;
//   - the transactions each database committed (pg_stat_database.xact_commit,
//     read-only ones too): how the work splits between the service's
//     database and Temporal's. PostgreSQL publishes a backend's counters
//     when a transaction ends at most once a second (an idle one's within
//     10 s): over a step of a few seconds they are approximate, over a
//     drain close.
// The server's figures count whatever else runs on it.

// DBStats are the counters at one instant.
type DBStats struct {
	At time.Time
	// Commits by database name.
	Commits map[string]int64
	// NextXid is the next transaction id to be assigned; WALPosition the
	// log's insert position in bytes.
	NextXid, WALPosition int64
}

// DBUse is what was spent between two readings.
type DBUse struct {
	Commits    map[string]int64 `json:"commits"`
	WriteXacts int64            `json:"write_xacts"`
	WALBytes   int64            `json:"wal_bytes"`
}

// ReadDBStats reads the counters of the pool's own database and of each
// database of others that exists on the same server.
func ReadDBStats(ctx context.Context, pool *pgxpool.Pool, others []string) (DBStats, error) {
	s := DBStats{At: time.Now(), Commits: map[string]int64{}}
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
	// pg_current_snapshot assigns no transaction id: reading it writes
	// nothing, and counts nothing.
	err = pool.QueryRow(ctx, `SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint, (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint`).
		Scan(&s.NextXid, &s.WALPosition)
	if err != nil {
		return s, fmt.Errorf("database stats: %w", err)
	}
	return s, nil
}

// Since is what was spent from earlier to s. A database that appeared in
// between counts from zero.
func (s DBStats) Since(earlier DBStats) DBUse {
	u := DBUse{Commits: map[string]int64{}, WriteXacts: s.NextXid - earlier.NextXid, WALBytes: s.WALPosition - earlier.WALPosition}
	for name, n := range s.Commits {
		u.Commits[name] = n - earlier.Commits[name]
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
