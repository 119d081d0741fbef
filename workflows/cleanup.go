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
// interval, with in) unless it exists; an existing one is left as it is
// (change it with `temporal schedule update`, or delete it and restart a
// worker).
func EnsureRetentionSchedule(ctx context.Context, c client.Client, taskQueue string, every time.Duration, in activities.RetentionInput) error {
	_, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:      RetentionScheduleID(taskQueue),
		Spec:    client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: every}}},
		Overlap: enums.SCHEDULE_OVERLAP_POLICY_SKIP,
		Action: &client.ScheduleWorkflowAction{
			ID:        RetentionScheduleID(taskQueue),
			Workflow:  RetentionWorkflowName,
			Args:      []any{in},
			TaskQueue: taskQueue,
		},
	})
	if err != nil && !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return fmt.Errorf("create schedule %s: %w", RetentionScheduleID(taskQueue), err)
	}
	return nil
}
