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
// the workers of one TEMPORAL_TASK_QUEUE base (the credits' queue, as the
// ID has always been made: an existing schedule keeps its ID).
func RetentionScheduleID(base string) string { return "pix-retention:" + base }

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
// interval, with in), starting its runs on the maintenance queue, unless
// it exists; an existing one that starts them on another queue is moved to
// the maintenance queue.
func EnsureRetentionSchedule(ctx context.Context, c client.Client, queues TaskQueues, every time.Duration, in activities.RetentionInput) error {
	return ensureSchedule(ctx, c, RetentionScheduleID(queues.Base), queues.Maintenance, queues.Credits, every, RetentionWorkflowName, in)
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

// EnsureReconcileSchedule creates the reconciliation's Temporal Schedule
// (every interval), starting its runs on the maintenance queue, unless it
// exists; an existing one that starts them on another queue is moved to
// the maintenance queue.
func EnsureReconcileSchedule(ctx context.Context, c client.Client, queues TaskQueues, every time.Duration) error {
	return ensureSchedule(ctx, c, ReconcileScheduleID(queues.Base), queues.Maintenance, queues.Credits, every, ReconcileWorkflowName)
}

// ensureSchedule creates a Temporal Schedule that starts workflow name
// (with args) on taskQueue every interval, its runs never overlapping,
// unless the schedule exists. An existing one is left as it is (change it
// with `temporal schedule update`, or delete it and restart a worker),
// except for its action's task queue: a schedule created before the
// maintenance family had a queue of its own starts its runs on the credits'
// queue, where they would now wait for a maintenance worker that never
// polls it, so it is moved from movedFrom to taskQueue. A queue an operator
// set on purpose (anything but movedFrom) is left as it is.
func ensureSchedule(ctx context.Context, c client.Client, id, taskQueue, movedFrom string, every time.Duration, name string, args ...any) error {
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
	switch {
	case err == nil:
		return nil
	case !errors.Is(err, temporal.ErrScheduleAlreadyRunning):
		return fmt.Errorf("create schedule %s: %w", id, err)
	}
	err = c.ScheduleClient().GetHandle(ctx, id).Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			action, ok := in.Description.Schedule.Action.(*client.ScheduleWorkflowAction)
			if !ok || action.TaskQueue != movedFrom {
				return nil, temporal.ErrSkipScheduleUpdate
			}
			action.TaskQueue = taskQueue
			return &client.ScheduleUpdate{Schedule: &in.Description.Schedule}, nil
		},
	})
	if err != nil {
		return fmt.Errorf("move schedule %s to task queue %s: %w", id, taskQueue, err)
	}
	return nil
}
