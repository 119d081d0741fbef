package retention

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/internal/runconf"
	"github.com/pixbank/pix/workflows"
)

// WorkflowName is the registered name of Workflow, recorded in every run's
// history and named by the Schedule: never change it.
const WorkflowName = "PixRetention"

// ScheduleID is the Temporal Schedule that runs the retention of the
// workers of one TEMPORAL_TASK_QUEUE base (the credits' queue, as the ID
// has always been made: an existing schedule keeps its ID).
func ScheduleID(base string) string { return "pix-retention:" + base }

// RunTimeout is a retention run's activities' deadline (StartToClose):
// each stops a minute before it (DeadlineMargin), so that an hourly run
// keeps up with 1,000 PIX/s (3.6 million rows a table an hour;
// docs/benchmarks.md, Growth).
const RunTimeout = 30 * time.Minute

// a references the activities in the workflow; never dereferenced.
var a *Activities

// Workflow deletes what the service no longer needs to keep: expired
// idempotency keys, outbox events published longer ago than their
// retention, and inbox rows done longer ago than theirs (the credits stay),
// each in small batches.
func Workflow(ctx workflow.Context, in Input) error {
	// The retention takes its batches at RETENTION_ROWS_PER_SECOND and stops
	// a minute before this deadline (inBatches).
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: RunTimeout,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 5},
	})
	keys := workflow.ExecuteActivity(ctx, a.DeleteExpiredIdempotencyKeys, in)
	events := workflow.ExecuteActivity(ctx, a.DeletePublishedEvents, in)
	inbox := workflow.ExecuteActivity(ctx, a.DeleteDoneInboxRows, in)
	return errors.Join(keys.Get(ctx, nil), events.Get(ctx, nil), inbox.Get(ctx, nil))
}

// EnsureSchedule brings the retention's Temporal Schedule to the
// configuration (every interval, with in: the retention periods), its
// runs on the maintenance queue: created if missing, updated if it
// differs, an operator's pause kept (workflows.ScheduleSync).
func EnsureSchedule(ctx context.Context, c client.Client, s workflows.ScheduleSync, queues runconf.TaskQueues, every time.Duration, in Input) error {
	return s.Ensure(ctx, c, workflows.ScheduleConfig{ID: ScheduleID(queues.Base), TaskQueue: queues.Maintenance, Every: every, Workflow: WorkflowName, Args: []any{in}})
}
