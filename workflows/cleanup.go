package workflows

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/runconf"
)

// ReconcileWorkflowName is the registered name of Reconcile.
const ReconcileWorkflowName = "PixReconcile"

// ReconcileScheduleID is the Temporal Schedule that reconciles the books
// for the workers of one TEMPORAL_TASK_QUEUE base (the credits' queue, as
// the ID has always been made: an existing schedule keeps its ID).
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
// queue: created if missing, updated if it differs, an operator's pause
// kept (ScheduleSync).
func EnsureReconcileSchedule(ctx context.Context, c client.Client, s ScheduleSync, queues runconf.TaskQueues, every time.Duration) error {
	return s.Ensure(ctx, c, ScheduleConfig{ID: ReconcileScheduleID(queues.Base), TaskQueue: queues.Maintenance, Every: every, Workflow: ReconcileWorkflowName})
}
