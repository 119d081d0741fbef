package workflows

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/db"
)

// RetentionWorkflowName is the registered name of Retention.
const RetentionWorkflowName = "PixRetention"

// RetentionScheduleID is the Temporal Schedule that runs the retention of
// the workers of one task queue.
func RetentionScheduleID(taskQueue string) string { return "pix-retention:" + taskQueue }

// Retention deletes what the service no longer needs to keep: expired
// idempotency keys, outbox events published longer ago than their
// retention, and inbox rows done longer ago than theirs (the credits stay),
// each in small batches.
func Retention(ctx workflow.Context, in activities.RetentionInput) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 5},
	})
	keys := workflow.ExecuteActivity(ctx, a.DeleteExpiredIdempotencyKeys, in)
	events := workflow.ExecuteActivity(ctx, a.DeletePublishedEvents, in)
	inbox := workflow.ExecuteActivity(ctx, a.DeleteDoneInboxRows, in)
	return errors.Join(keys.Get(ctx, nil), events.Get(ctx, nil), inbox.Get(ctx, nil))
}

// EnsureRetentionSchedule creates the retention's Temporal Schedule (every
// interval, with in) unless it exists.
func EnsureRetentionSchedule(ctx context.Context, c client.Client, taskQueue string, every time.Duration, in activities.RetentionInput) error {
	return ensureSchedule(ctx, c, RetentionScheduleID(taskQueue), taskQueue, every, RetentionWorkflowName, in)
}

// ReconcileWorkflowName is the registered name of Reconcile.
const ReconcileWorkflowName = "PixReconcile"

// ReconcileScheduleID is the Temporal Schedule that reconciles the books
// for the workers of one task queue.
func ReconcileScheduleID(taskQueue string) string { return "pix-reconcile:" + taskQueue }

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

// EnsureReconcileSchedule creates the reconciliation's Temporal Schedule
// (every interval) unless it exists.
func EnsureReconcileSchedule(ctx context.Context, c client.Client, taskQueue string, every time.Duration) error {
	return ensureSchedule(ctx, c, ReconcileScheduleID(taskQueue), taskQueue, every, ReconcileWorkflowName)
}

// ensureSchedule creates a Temporal Schedule that starts workflow name
// (with args) every interval, its runs never overlapping, unless the
// schedule exists; an existing one is left as it is (change it with
// `temporal schedule update`, or delete it and restart a worker).
func ensureSchedule(ctx context.Context, c client.Client, id, taskQueue string, every time.Duration, name string, args ...any) error {
	_, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:      id,
		Spec:    client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: every}}},
		Overlap: enums.SCHEDULE_OVERLAP_POLICY_SKIP,
		Action: &client.ScheduleWorkflowAction{
			ID:        id,
			Workflow:  name,
			Args:      args,
			TaskQueue: taskQueue,
		},
	})
	if err != nil && !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return fmt.Errorf("create schedule %s: %w", id, err)
	}
	return nil
}
