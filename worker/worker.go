package worker

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/workflows"
)

// Options tune the worker.
type Options struct {
	TaskQueue string
	// StopTimeout is how long a stopping worker lets running activities finish.
	StopTimeout time.Duration
	// MaxConcurrentActivities bounds activities running at once (0: SDK default).
	MaxConcurrentActivities int
}

// New builds a worker with the credit and transfer workflows, the
// retention, the reconciliation and their activities registered.
func New(c client.Client, acts *activities.Activities, opts Options) sdkworker.Worker {
	w := sdkworker.New(c, opts.TaskQueue, sdkworker.Options{
		WorkerStopTimeout:                  opts.StopTimeout,
		MaxConcurrentActivityExecutionSize: opts.MaxConcurrentActivities,
	})
	Register(w, acts)
	return w
}

// Register registers the workflows and activities on w. Tests use it with
// their own workers and replayers.
func Register(w interface {
	RegisterWorkflowWithOptions(any, workflow.RegisterOptions)
	RegisterActivity(any)
}, acts *activities.Activities) {
	w.RegisterWorkflowWithOptions(workflows.CreditPix, workflow.RegisterOptions{Name: workflows.CreditWorkflowName})
	w.RegisterWorkflowWithOptions(workflows.TransferPix, workflow.RegisterOptions{Name: workflows.TransferWorkflowName})
	w.RegisterWorkflowWithOptions(workflows.Retention, workflow.RegisterOptions{Name: workflows.RetentionWorkflowName})
	w.RegisterWorkflowWithOptions(workflows.Reconcile, workflow.RegisterOptions{Name: workflows.ReconcileWorkflowName})
	w.RegisterActivity(acts)
}

// Run runs the worker until ctx is done, then stops it, letting running
// activities finish within the stop timeout.
func Run(ctx context.Context, w sdkworker.Worker) error {
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	<-ctx.Done()
	w.Stop()
	return nil
}
