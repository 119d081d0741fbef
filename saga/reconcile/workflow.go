package reconcile

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/internal/runconf"
	"github.com/pixbank/pix/workflows"
)

// WorkflowName is the registered name of Workflow, recorded in every run's
// history and named by the Schedule: never change it.
const WorkflowName = "PixReconcile"

// ScheduleID is the Temporal Schedule that reconciles the books for the
// workers of one TEMPORAL_TASK_QUEUE base (the credits' queue, as the ID
// has always been made: an existing schedule keeps its ID).
func ScheduleID(base string) string { return "pix-reconcile:" + base }

// a references the activities in the workflow; never dereferenced.
var a *Activities

// Workflow checks the books (ReconcileBooks publishes the metric and logs
// any difference). When they don't balance, the run fails with
// BooksUnbalanced, so that the schedule's recent runs show it in the
// Temporal UI. Nothing is fixed: money needs a human.
func Workflow(ctx workflow.Context) (Reconciliation, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 5},
	})
	var r Reconciliation
	if err := workflow.ExecuteActivity(ctx, a.ReconcileBooks).Get(ctx, &r); err != nil {
		return r, err
	}
	if !r.Balanced() {
		return r, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"the books do not balance: %d unbalanced accounts, %d done inbox rows without a credit, %d credits whose inbox row is not done",
			len(r.UnbalancedAccounts), len(r.DoneWithoutCredit), len(r.CreditWithoutDone)), ErrTypeBooksUnbalanced, nil, r)
	}
	return r, nil
}

// EnsureSchedule brings the reconciliation's Temporal Schedule to the
// configuration (every interval), its runs on the maintenance queue:
// created if missing, updated if it differs, an operator's pause kept
// (workflows.ScheduleSync).
func EnsureSchedule(ctx context.Context, c client.Client, s workflows.ScheduleSync, queues runconf.TaskQueues, every time.Duration) error {
	return s.Ensure(ctx, c, workflows.ScheduleConfig{ID: ScheduleID(queues.Base), TaskQueue: queues.Maintenance, Every: every, Workflow: WorkflowName})
}
