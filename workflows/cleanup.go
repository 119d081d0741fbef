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

// CleanupWorkflowName is the registered name of CleanupIdempotencyKeys.
const CleanupWorkflowName = "PixIdempotencyKeyCleanup"

// CleanupScheduleID is the Temporal Schedule that runs the cleanup of the
// workers of one task queue.
func CleanupScheduleID(taskQueue string) string { return "pix-idempotency-cleanup:" + taskQueue }

// DefaultCleanup is one run's bound: batches of 1,000 keys, at most 100
// batches (the next run takes the rest).
var DefaultCleanup = activities.CleanupInput{BatchSize: 1000, MaxBatches: 100}

// CleanupIdempotencyKeys deletes the expired idempotency keys.
func CleanupIdempotencyKeys(ctx workflow.Context, in activities.CleanupInput) (int64, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 5},
	})
	var deleted int64
	err := workflow.ExecuteActivity(ctx, a.DeleteExpiredIdempotencyKeys, in).Get(ctx, &deleted)
	return deleted, err
}

// EnsureCleanupSchedule creates the cleanup's Temporal Schedule (every
// interval) unless it exists; an existing one is left as it is (change it
// with `temporal schedule update`, or delete it and restart a worker).
func EnsureCleanupSchedule(ctx context.Context, c client.Client, taskQueue string, every time.Duration) error {
	_, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:      CleanupScheduleID(taskQueue),
		Spec:    client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: every}}},
		Overlap: enums.SCHEDULE_OVERLAP_POLICY_SKIP,
		Action: &client.ScheduleWorkflowAction{
			ID:        CleanupScheduleID(taskQueue),
			Workflow:  CleanupWorkflowName,
			Args:      []any{DefaultCleanup},
			TaskQueue: taskQueue,
		},
	})
	if err != nil && !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return fmt.Errorf("create schedule %s: %w", CleanupScheduleID(taskQueue), err)
	}
	return nil
}
