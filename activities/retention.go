package activities

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/pixbank/pix/internal/payload"
)

// RetentionInput bounds one run of the retention: the retention
// Schedule's argument, so its durations are payload.Durations, as the UI
// should show them.
type RetentionInput struct {
	BatchSize int
	// MaxBatches bounds one run per table; the next scheduled run takes the
	// rest. A run also stops a minute before its activity's deadline
	// (deadlineMargin), whatever it has left.
	MaxBatches int
	// BatchPause is the wait before each batch after the first: the run
	// takes its rows at a pace the webhooks' ingest beside it does not
	// feel (a batch of 1,000 takes about 10 ms; docs/benchmarks.md,
	// Growth). 0: none.
	BatchPause payload.Duration `json:",omitempty"`
	// OutboxRetention is how long published events are kept.
	OutboxRetention payload.Duration
	// InboxRetention is how long done inbox rows are kept.
	InboxRetention payload.Duration
}

// deadlineMargin: a run takes no batch less than this before its
// activity's deadline, so that it returns its count rather than time out
// (the next run takes the rest).
const deadlineMargin = time.Minute

// inBatches runs deleteBatch until a batch comes back short, MaxBatches
// ran or the activity's deadline is near, BatchPause between batches,
// heartbeating the running total.
func inBatches(ctx context.Context, in RetentionInput, deleteBatch func() (int64, error)) (int64, error) {
	var total int64
	deadline := activity.GetInfo(ctx).Deadline
	for i := range in.MaxBatches {
		if i > 0 {
			if !deadline.IsZero() && time.Until(deadline) < deadlineMargin {
				break
			}
			if err := pause(ctx, time.Duration(in.BatchPause)); err != nil {
				return total, TechnicalFailure(err)
			}
		}
		n, err := deleteBatch()
		total += n
		if err != nil {
			return total, TechnicalFailure(err)
		}
		activity.RecordHeartbeat(ctx, total)
		if n < int64(in.BatchSize) {
			break
		}
	}
	return total, nil
}

// pause waits d, or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// DeleteExpiredIdempotencyKeys deletes expired idempotency keys in small
// batches (short transactions, no long lock) and returns how many.
func (a *Activities) DeleteExpiredIdempotencyKeys(ctx context.Context, in RetentionInput) (int64, error) {
	n, err := inBatches(ctx, in, func() (int64, error) { return a.Store.DeleteExpiredKeys(ctx, in.BatchSize) })
	a.Logger.InfoContext(ctx, "expired idempotency keys deleted", "deleted", n)
	return n, err
}

// DeletePublishedEvents deletes outbox events published longer ago than the
// retention, in small batches, and returns how many.
func (a *Activities) DeletePublishedEvents(ctx context.Context, in RetentionInput) (int64, error) {
	n, err := inBatches(ctx, in, func() (int64, error) {
		return a.Store.DeletePublishedEvents(ctx, time.Duration(in.OutboxRetention), in.BatchSize)
	})
	a.Logger.InfoContext(ctx, "published outbox events deleted", "deleted", n, "older_than", in.OutboxRetention.String())
	return n, err
}

// DeleteDoneInboxRows deletes inbox rows done longer ago than the retention,
// in small batches, and returns how many. The credits stay.
func (a *Activities) DeleteDoneInboxRows(ctx context.Context, in RetentionInput) (int64, error) {
	n, err := inBatches(ctx, in, func() (int64, error) {
		return a.Store.DeleteDoneInboxRows(ctx, time.Duration(in.InboxRetention), in.BatchSize)
	})
	a.Logger.InfoContext(ctx, "done inbox rows deleted", "deleted", n, "older_than", in.InboxRetention.String())
	return n, err
}
