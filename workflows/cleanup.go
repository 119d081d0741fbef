package workflows

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/db"
)

// RetentionWorkflowName is the registered name of Retention.
const RetentionWorkflowName = "PixRetention"

// RetentionScheduleID is the Temporal Schedule that runs the retention of
// the workers of one TEMPORAL_TASK_QUEUE base (the credits' queue, as the
// ID has always been made: an existing schedule keeps its ID).
func RetentionScheduleID(base string) string { return "pix-retention:" + base }

// RetentionRunTimeout is a retention run's activities' deadline
// (StartToClose): each stops a minute before it
// (activities.RetentionDeadlineMargin), so that an hourly run keeps up
// with 1,000 PIX/s (3.6 million rows a table an hour; docs/benchmarks.md,
// Growth).
const RetentionRunTimeout = 30 * time.Minute

// Retention deletes what the service no longer needs to keep: expired
// idempotency keys, outbox events published longer ago than their
// retention, and inbox rows done longer ago than theirs (the credits stay),
// each in small batches.
func Retention(ctx workflow.Context, in activities.RetentionInput) error {
	// The retention takes its batches RETENTION_BATCH_PAUSE apart and stops
	// a minute before this deadline (activities.inBatches).
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: RetentionRunTimeout,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 5},
	})
	keys := workflow.ExecuteActivity(ctx, a.DeleteExpiredIdempotencyKeys, in)
	events := workflow.ExecuteActivity(ctx, a.DeletePublishedEvents, in)
	inbox := workflow.ExecuteActivity(ctx, a.DeleteDoneInboxRows, in)
	return errors.Join(keys.Get(ctx, nil), events.Get(ctx, nil), inbox.Get(ctx, nil))
}

// EnsureRetentionSchedule brings the retention's Temporal Schedule to the
// configuration (every interval, with in: the retention periods), its
// runs on the maintenance queue: created if missing, updated if it
// differs, an operator's pause kept (ensureSchedule).
func EnsureRetentionSchedule(ctx context.Context, c client.Client, s ScheduleSync, queues TaskQueues, every time.Duration, in activities.RetentionInput) error {
	return s.Ensure(ctx, c, ScheduleConfig{ID: RetentionScheduleID(queues.Base), TaskQueue: queues.Maintenance, Every: every, Workflow: RetentionWorkflowName, Args: []any{in}})
}

// ReconcileWorkflowName is the registered name of Reconcile.
const ReconcileWorkflowName = "PixReconcile"

// ReconcileScheduleID is the Temporal Schedule that reconciles the books
// for the workers of one TEMPORAL_TASK_QUEUE base (as RetentionScheduleID).
func ReconcileScheduleID(base string) string { return "pix-reconcile:" + base }

// Reconcile checks the books (ReconcileBooks publishes the metric and logs
// any difference). When they don't balance, the run fails with
// BooksUnbalanced, so that the schedule's recent runs show it in the
// Temporal UI. Nothing is fixed: money needs a human.
func Reconcile(ctx workflow.Context) (db.Reconciliation, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 5},
	})
	var r db.Reconciliation
	if err := workflow.ExecuteActivity(ctx, a.ReconcileBooks).Get(ctx, &r); err != nil {
		return r, err
	}
	if !r.Balanced() {
		return r, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"the books do not balance: %d unbalanced accounts, %d done inbox rows without a credit, %d credits whose inbox row is not done",
			len(r.UnbalancedAccounts), len(r.DoneWithoutCredit), len(r.CreditWithoutDone)), activities.ErrTypeBooksUnbalanced, nil, r)
	}
	return r, nil
}

// EnsureReconcileSchedule brings the reconciliation's Temporal Schedule
// to the configuration (every interval), its runs on the maintenance
// queue, as EnsureRetentionSchedule.
func EnsureReconcileSchedule(ctx context.Context, c client.Client, s ScheduleSync, queues TaskQueues, every time.Duration) error {
	return s.Ensure(ctx, c, ScheduleConfig{ID: ReconcileScheduleID(queues.Base), TaskQueue: queues.Maintenance, Every: every, Workflow: ReconcileWorkflowName})
}
