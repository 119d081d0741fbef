package db

import (
	"context"
	"fmt"
	"time"
)

// clockSQL holds the statement of queries/clock.sql.
var clockSQL struct{ Now string }

func init() { bindQueries("clock.sql", &clockSQL) }

// Now is the database's clock, read through q: the start of its own
// statement (PostgreSQL's statement_timestamp()), in a transaction or
// through the pool. Not the transaction's start (now(), the instant its
// writes are stamped with): a deadline is decided under a lock the
// transaction may have waited for, and read after it, the clock is after
// the wait (a block whose 72 hours ended while its return waited for the
// lock is not returned). Deadlines are written by this clock
// (a block's expires_at is its hold's created_at plus 72 hours), so they
// are decided by it too, in the deciding transaction: never by the
// worker's clock, which may run ahead (NTP broken) and pass them early.
// Its error is the caller's to classify (Classify), as a transaction's
// statements are.
func Now(ctx context.Context, q Querier) (time.Time, error) {
	var now time.Time
	if err := q.QueryRow(ctx, clockSQL.Now).Scan(&now); err != nil {
		return time.Time{}, fmt.Errorf("read the database's clock: %w", err)
	}
	return now, nil
}

// Clock reads the time a deadline is decided by, through q (the deciding
// transaction, or the pool): Now, or a test's (ClockOf).
type Clock func(ctx context.Context, q Querier) (time.Time, error)

// ClockOf is the Clock that answers now(), reading nothing: a test's,
// which sets the time it decides by.
func ClockOf(now func() time.Time) Clock {
	return func(context.Context, Querier) (time.Time, error) { return now(), nil }
}
