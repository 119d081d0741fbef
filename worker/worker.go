package worker

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"golang.org/x/sync/errgroup"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/workflows"
)

// Options tune the workers.
type Options struct {
	// TaskQueues are the families' queues (workflows.TaskQueuesFor of
	// TEMPORAL_TASK_QUEUE).
	TaskQueues workflows.TaskQueues
	// StopTimeout is how long a stopping worker lets running activities
	// finish. Each family's worker has it.
	StopTimeout time.Duration
	// MaxConcurrentActivities bounds the activities running at once in each
	// family's worker (0: SDK default).
	MaxConcurrentActivities int
}

// Worker is the Temporal worker of one family, polling its queue.
type Worker struct {
	Family    workflows.Family
	TaskQueue string
	sdkworker.Worker
}

// New builds one worker per family (workflows.Families), each on its
// family's queue with its family's workflows and activities registered
// (RegisterFamily), all on client c: a dispatcher sharing c starts its runs
// eagerly on the family's worker.
func New(c client.Client, acts *activities.Activities, opts Options) []Worker {
	ws := make([]Worker, 0, len(workflows.Families))
	for _, f := range workflows.Families {
		q := opts.TaskQueues.Of(f)
		w := sdkworker.New(c, q, sdkworker.Options{
			WorkerStopTimeout:                  opts.StopTimeout,
			MaxConcurrentActivityExecutionSize: opts.MaxConcurrentActivities,
		})
		RegisterFamily(w, acts, f)
		ws = append(ws, Worker{Family: f, TaskQueue: q, Worker: w})
	}
	return ws
}

// Registry is what workflows and activities are registered on: a worker,
// a replayer, a test environment.
type Registry interface {
	RegisterWorkflowWithOptions(any, workflow.RegisterOptions)
	RegisterActivity(any)
}

// RegisterFamily registers what family f's worker runs on w: the family's
// workflows and their activities. The credits' worker also runs, for now,
// the other families' workflows and activities, see below.
func RegisterFamily(w Registry, acts *activities.Activities, f workflows.Family) {
	switch f {
	case workflows.Credits:
		registerCredits(w, acts)
		// Deploy safety: until this release, every family ran on the
		// credits' queue (pix-credit). Transfer runs started before it
		// go on there, their activities scheduled on the same queue, and a
		// retention or reconciliation run started by a schedule not yet
		// moved (EnsureRetentionSchedule moves it at the worker's start)
		// does too. The credits' worker keeps running them so they
		// complete. Remove these two lines in a later release, once no
		// transfer, retention or reconciliation run started before this
		// release is open (a transfer's saga lasts hours at most; check
		// with `temporal workflow list --query "TaskQueue = 'pix-credit'
		// AND WorkflowType != 'PixCredit' AND ExecutionStatus = 'Running'"`).
		registerTransfers(w, acts)
		registerMaintenance(w, acts)
	case workflows.Transfers:
		registerTransfers(w, acts)
	case workflows.Maintenance:
		registerMaintenance(w, acts)
	default:
		panic(fmt.Sprintf("worker: unknown workflow family %q", f))
	}
}

// Register registers every family's workflows and activities on w. Tests
// use it with their own workers and replayers.
func Register(w Registry, acts *activities.Activities) {
	registerCredits(w, acts)
	registerTransfers(w, acts)
	registerMaintenance(w, acts)
}

func registerCredits(w Registry, acts *activities.Activities) {
	w.RegisterWorkflowWithOptions(workflows.CreditPix, workflow.RegisterOptions{Name: workflows.CreditWorkflowName})
	w.RegisterActivity(acts.CreditAccount) // a local activity
	w.RegisterActivity(acts.MarkCreditFailed)
}

func registerTransfers(w Registry, acts *activities.Activities) {
	w.RegisterWorkflowWithOptions(workflows.TransferPix, workflow.RegisterOptions{Name: workflows.TransferWorkflowName})
	w.RegisterActivity(acts.SubmitTransfer)
	w.RegisterActivity(acts.AwaitSettlement)
	w.RegisterActivity(acts.SettleTransfer)
	w.RegisterActivity(acts.RefundTransfer)
}

func registerMaintenance(w Registry, acts *activities.Activities) {
	w.RegisterWorkflowWithOptions(workflows.Retention, workflow.RegisterOptions{Name: workflows.RetentionWorkflowName})
	w.RegisterWorkflowWithOptions(workflows.Reconcile, workflow.RegisterOptions{Name: workflows.ReconcileWorkflowName})
	w.RegisterActivity(acts.DeleteExpiredIdempotencyKeys)
	w.RegisterActivity(acts.DeletePublishedEvents)
	w.RegisterActivity(acts.DeleteDoneInboxRows)
	w.RegisterActivity(acts.ReconcileBooks)
}

// Run starts the workers together and runs them until ctx is done, or
// until one of them fails to start; then it stops them all, each letting
// its running activities finish within the stop timeout (they stop at
// once, so the timeouts do not add up).
func Run(ctx context.Context, ws ...Worker) error {
	g, ctx := errgroup.WithContext(ctx)
	for _, w := range ws {
		g.Go(func() error {
			if err := w.Start(); err != nil {
				return fmt.Errorf("start the %s worker on %s: %w", w.Family, w.TaskQueue, err)
			}
			<-ctx.Done()
			w.Stop()
			return nil
		})
	}
	return g.Wait()
}
