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
	// rest.
	MaxBatches int
	// OutboxRetention is how long published events are kept.
	OutboxRetention payload.Duration
	// InboxRetention is how long done inbox rows are kept.
	InboxRetention payload.Duration
}

// inBatches runs deleteBatch until a batch comes back short or MaxBatches
// ran, heartbeating the running total.
func inBatches(ctx context.Context, in RetentionInput, deleteBatch func() (int64, error)) (int64, error) {
	var total int64
	for range in.MaxBatches {
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
