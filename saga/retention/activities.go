package retention

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/internal/payload"
)

// Input bounds one run of the retention: the retention Schedule's
// argument, so its durations are payload.Durations, as the UI should show
// them. Its fields are the payload's: never rename one (the Schedules
// written by earlier builds hold them).
type Input struct {
	BatchSize int
	// MaxBatches bounds one run per table; the next scheduled run takes the
	// rest. A run also stops a minute before its activity's deadline
	// (DeadlineMargin), whatever it has left, and when its
	// worker stops. Both at least 1.
	MaxBatches int
	// BatchPause is the wait before each batch after the first, when
	// RowsPerSecond is 0 (the pace of the Schedules written before it,
	// and the one a worker of that release reads in a new Schedule's
	// input). 0: none.
	BatchPause payload.Duration `json:",omitempty"`
	// RowsPerSecond is the run's pace, of each table: a batch of n rows
	// starts no sooner than n/RowsPerSecond after the one before it began
	// (its own time counted): the pace the run takes its rows at beside
	// the webhooks' ingest (docs/benchmarks.md, Growth). 0: BatchPause.
	RowsPerSecond Rate `json:",omitempty"`
	// OutboxRetention is how long published events are kept.
	OutboxRetention payload.Duration
	// InboxRetention is how long done inbox rows are kept.
	InboxRetention payload.Duration
}

// Rate is a pace in rows a second of each table (0: no limit), as the
// payload holds it: a whole number.
type Rate int

// share is n rows' share of the rate r (above 0): how long they take at
// it. One rule for the pace a run keeps (nextBatch) and the BatchPause a
// new Schedule's input carries for a worker of an older release (NewInput).
func (r Rate) share(n int64) time.Duration {
	return time.Duration(n) * time.Second / time.Duration(r)
}

// DeadlineMargin: a run takes no batch less than this before its
// activity's deadline, so that it returns its count rather than time out
// (the next run takes the rest).
const DeadlineMargin = time.Minute

// ErrTypeInputInvalid is the type of the error of a retention run whose
// input bounds nothing (a batch size or a number of batches below 1): not
// retried, since no attempt could do better; the Schedule's argument is
// NewInput's.
const ErrTypeInputInvalid = "RetentionInputInvalid"

// Activities are the retention's activities and their dependencies. Their
// method names are the activities' recorded names: never rename one.
type Activities struct {
	Store  *Store
	Logger *slog.Logger
}

// inBatches runs deleteBatch until a batch comes back short, MaxBatches
// ran, the activity's deadline is near or the worker stops, at
// RowsPerSecond (or BatchPause apart), heartbeating the running total.
func inBatches(ctx context.Context, in Input, deleteBatch func() (int64, error)) (int64, error) {
	return batchRun{
		deadline:  activity.GetInfo(ctx).Deadline,
		stop:      activity.GetWorkerStopChannel(ctx),
		heartbeat: func(total int64) { activity.RecordHeartbeat(ctx, total) },
	}.run(ctx, in, deleteBatch)
}

// batchRun is what ends a run of batches besides its input: the
// activity's deadline (zero: none), the worker's stop, and where the
// running total is told.
type batchRun struct {
	deadline  time.Time
	stop      <-chan struct{}
	heartbeat func(total int64)
}

// run deletes in batches (inBatches) and returns what it deleted. A run
// that stops early, for its deadline, the worker's stop or ctx ending,
// returns what it did so far without an error: the next scheduled run
// takes the rest.
func (b batchRun) run(ctx context.Context, in Input, deleteBatch func() (int64, error)) (int64, error) {
	if in.BatchSize < 1 || in.MaxBatches < 1 {
		return 0, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"retention: BatchSize %d and MaxBatches %d must both be at least 1: with them a run would delete nothing, or never stop", in.BatchSize, in.MaxBatches),
			ErrTypeInputInvalid, nil)
	}
	var total int64
	var next time.Time // when the next batch may start
	for i := range in.MaxBatches {
		if i > 0 {
			if !b.deadline.IsZero() && time.Until(b.deadline) < DeadlineMargin {
				break
			}
			if !b.pause(ctx, time.Until(next)) {
				break
			}
		}
		began := time.Now()
		n, err := deleteBatch()
		next = in.nextBatch(began, n)
		total += n
		if err != nil {
			return total, activities.TechnicalFailure(err)
		}
		b.heartbeat(total)
		if n < int64(in.BatchSize) {
			break
		}
	}
	return total, nil
}

// nextBatch is when the batch after one that began at began and deleted n
// rows may start: n rows' share of RowsPerSecond after began, or
// BatchPause after now.
func (in Input) nextBatch(began time.Time, n int64) time.Time {
	if in.RowsPerSecond > 0 {
		return began.Add(in.RowsPerSecond.share(n))
	}
	return time.Now().Add(time.Duration(in.BatchPause))
}

// pause waits d, and says whether the run goes on: false when the worker
// stops or ctx ends first, or had already (a run without a pause still
// ends between two batches).
func (b batchRun) pause(ctx context.Context, d time.Duration) bool {
	select {
	case <-b.stop:
		return false
	case <-ctx.Done():
		return false
	default:
	}
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-b.stop:
		return false
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// DeleteExpiredIdempotencyKeys deletes expired idempotency keys in small
// batches (short transactions, no long lock) and returns how many.
func (a *Activities) DeleteExpiredIdempotencyKeys(ctx context.Context, in Input) (int64, error) {
	n, err := inBatches(ctx, in, func() (int64, error) { return a.Store.DeleteExpiredKeys(ctx, in.BatchSize) })
	a.Logger.InfoContext(ctx, "expired idempotency keys deleted", "deleted", n)
	return n, err
}

// DeletePublishedEvents deletes outbox events published longer ago than the
// retention, in small batches, and returns how many.
func (a *Activities) DeletePublishedEvents(ctx context.Context, in Input) (int64, error) {
	n, err := inBatches(ctx, in, func() (int64, error) {
		return a.Store.DeletePublishedEvents(ctx, time.Duration(in.OutboxRetention), in.BatchSize)
	})
	a.Logger.InfoContext(ctx, "published outbox events deleted", "deleted", n, "older_than", in.OutboxRetention.String())
	return n, err
}

// DeleteDoneInboxRows deletes inbox rows done longer ago than the retention,
// in small batches, and returns how many. The credits stay.
func (a *Activities) DeleteDoneInboxRows(ctx context.Context, in Input) (int64, error) {
	n, err := inBatches(ctx, in, func() (int64, error) {
		return a.Store.DeleteDoneInboxRows(ctx, time.Duration(in.InboxRetention), in.BatchSize)
	})
	a.Logger.InfoContext(ctx, "done inbox rows deleted", "deleted", n, "older_than", in.InboxRetention.String())
	return n, err
}
