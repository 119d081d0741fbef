package db

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/internal/durable/rows"
)

// DueQueue is a saga's open rows as a durable.Dispatcher sees them (it is
// a rows.Queue): due rows to claim, and the outcome of their workflow
// starts to record. Its three statements are the saga's own, in its
// queries file (ClaimDue, MarkDispatched, DeferDispatch):
//
//   - ClaimDue($1 limit, $2 lease) pushes up to $1 due open rows' due time
//     $2 ahead (FOR UPDATE SKIP LOCKED) and returns them as a rows.Due
//     (key, attempts, drive, dispatched, then the listing columns);
//   - MarkDispatched($1 keys, $2 drives, $3 recheck after, $4 recheck at
//     most: rows.Recheck, the wait as long as the row has been open since
//     dispatched_at) and DeferDispatch($1 keys, $2 drives, $3 delay)
//     update the claimed rows
//     still open in the drive they were claimed in, locked in key order
//     (byte order): two dispatchers recording overlapping claims never
//     wait for each other in a cycle, and a late record changes nothing
//     after a re-drive.
type DueQueue struct {
	store *Store
	// table names the rows in errors; channel is where the store's waker
	// says they came due.
	table, channel                    string
	claim, markDispatched, deferStart string
}

var _ rows.Queue = DueQueue{}

// Channel is the notification channel that says rows came due.
func (q DueQueue) Channel() string { return q.channel }

// Claim claims up to limit due rows, pushing their next due time lease
// ahead so that concurrent dispatchers skip them. If the claimer dies
// before recording the outcome, the rows come due again when the lease
// ends.
func (q DueQueue) Claim(ctx context.Context, limit int, lease time.Duration) ([]rows.Due, error) {
	claimed, err := q.store.pool.Query(ctx, q.claim, limit, lease)
	if err != nil {
		return nil, classify(fmt.Errorf("claim due %s: %w", q.table, err))
	}
	due, err := pgx.CollectRows(claimed, pgx.RowToStructByPos[rows.Due])
	if err != nil {
		return nil, classify(fmt.Errorf("claim due %s: %w", q.table, err))
	}
	return due, nil
}

// MarkDispatched records that the claimed rows' workflows run: the first
// start of a drive is kept in dispatched_at, and the rows come due again
// as recheck says, to make sure their run still exists.
func (q DueQueue) MarkDispatched(ctx context.Context, claimed []rows.Due, recheck rows.Recheck) error {
	return q.updateClaimed(ctx, q.markDispatched, "mark dispatched", claimed, recheck.After, max(recheck.After, recheck.Max))
}

// DeferDispatch makes claimed rows due again after delay (their workflow
// start failed, or an older run is still closing).
func (q DueQueue) DeferDispatch(ctx context.Context, claimed []rows.Due, delay time.Duration) error {
	return q.updateClaimed(ctx, q.deferStart, "defer dispatch", claimed, delay)
}

func (q DueQueue) updateClaimed(ctx context.Context, statement, what string, claimed []rows.Due, intervals ...time.Duration) error {
	keys := make([]string, len(claimed))
	drives := make([]int32, len(claimed))
	for i, c := range claimed {
		keys[i], drives[i] = c.Key, int32(c.Drive)
	}
	args := []any{keys, drives}
	for _, d := range intervals {
		args = append(args, d)
	}
	if _, err := q.store.pool.Exec(ctx, statement, args...); err != nil {
		return classify(fmt.Errorf("%s %s: %w", what, q.table, err))
	}
	return nil
}
