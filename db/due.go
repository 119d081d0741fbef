package db

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/internal/durable/rows"
	"github.com/pixbank/pix/internal/rowscan"
)

// DueQueue is a saga's open rows as a durable.Dispatcher sees them (it is
// a rows.Queue): due rows to claim, and the outcome of their workflow
// starts to record. Its three statements are built from the saga's
// declaration of its queue (QueueSpec), from one text for every queue
// (queries/due.sql.tmpl):
//
//   - ClaimDue($1 limit, $2 lease) pushes up to $1 due open rows' due time
//     $2 ahead (FOR UPDATE SKIP LOCKED) and returns them as a rows.Due,
//     each column named as its field's db tag (read by name);
//   - MarkDispatched($1 keys, $2 drives, $3 whether each start began a
//     run, $4 recheck after, $5 recheck at most: rows.Recheck, a run's age
//     counted from dispatched_at, which a start that began a run sets) and
//     DeferDispatch($1 keys, $2 drives, $3 delay) update the claimed rows
//     still open in the drive they were claimed in, locked in key order
//     (byte order): two dispatchers recording overlapping claims never
//     wait for each other in a cycle, and a late record changes nothing
//     after a re-drive.
type DueQueue struct {
	store *Store
	queue *dueQueue
}

var _ rows.Queue = DueQueue{}

// DueQueue is the declared queue q's rows in s, for its dispatchers.
func (s *Store) DueQueue(q Queue) DueQueue { return DueQueue{s, q.queue} }

// DueQueues are every queue declared (DeclareQueue) in this process, by
// any package, over s: what the tests check each saga's source against.
func (s *Store) DueQueues() []DueQueue {
	out := make([]DueQueue, 0, len(dueQueues))
	for _, q := range dueQueues {
		out = append(out, DueQueue{s, q})
	}
	return out
}

// Channel is the notification channel that says rows came due.
func (q DueQueue) Channel() string { return q.queue.Channel }

// Claim claims up to limit due rows, pushing their next due time lease
// ahead so that concurrent dispatchers skip them. If the claimer dies
// before recording the outcome, the rows come due again when the lease
// ends.
func (q DueQueue) Claim(ctx context.Context, limit int, lease time.Duration) ([]rows.Due, error) {
	claimed, err := q.store.pool.Query(ctx, q.queue.claim, limit, lease)
	if err != nil {
		return nil, Classify(fmt.Errorf("claim due %s: %w", q.queue.Table, err))
	}
	due, err := pgx.CollectRows(claimed, rowscan.ByName[rows.Due])
	if err != nil {
		return nil, Classify(fmt.Errorf("claim due %s: %w", q.queue.Table, err))
	}
	return due, nil
}

// MarkDispatched records that the claimed rows' workflows run: a start
// that began a run is kept in dispatched_at, and the rows come due again as
// recheck says, to make sure their run still exists.
func (q DueQueue) MarkDispatched(ctx context.Context, started, open []rows.Due, recheck rows.Recheck) error {
	began := make([]bool, 0, len(started)+len(open))
	for range started {
		began = append(began, true)
	}
	for range open {
		began = append(began, false)
	}
	return q.updateClaimed(ctx, q.queue.markDispatched, "mark dispatched", append(slices.Clip(started), open...),
		began, recheck.After, max(recheck.After, recheck.Max))
}

// DeferDispatch makes claimed rows due again after delay (their workflow
// start failed, or an older run is still closing).
func (q DueQueue) DeferDispatch(ctx context.Context, claimed []rows.Due, delay time.Duration) error {
	return q.updateClaimed(ctx, q.queue.deferDispatch, "defer dispatch", claimed, delay)
}

// updateClaimed runs statement with the claimed rows' keys and drives as
// $1 and $2, then more.
func (q DueQueue) updateClaimed(ctx context.Context, statement, what string, claimed []rows.Due, more ...any) error {
	keys := make([]string, len(claimed))
	drives := make([]int32, len(claimed))
	for i, c := range claimed {
		keys[i], drives[i] = c.Key, int32(c.Drive)
	}
	args := append([]any{keys, drives}, more...)
	if _, err := q.store.pool.Exec(ctx, statement, args...); err != nil {
		return Classify(fmt.Errorf("%s %s: %w", what, q.queue.Table, err))
	}
	return nil
}
