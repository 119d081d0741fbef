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

// Deps is what the families' activities are built from: one struct of
// dependencies per saga's activities.
type Deps struct {
	// Activities are the credits', transfers' and maintenance activities.
	Activities *activities.Activities
	Refunds    *activities.Refunds
	// CatchUp are the PSP catch-up's (maintenance family).
	CatchUp *activities.CatchUp
}

// New builds one worker per family (workflows.Families), each on its
// family's queue with its family's workflows and activities registered
// (RegisterFamily), all on client c: a dispatcher sharing c starts its runs
// eagerly on the family's worker.
func New(c client.Client, deps Deps, opts Options) []Worker {
	ws := make([]Worker, 0, len(workflows.Families))
	for _, f := range workflows.Families {
		q := opts.TaskQueues.Of(f)
		w := sdkworker.New(c, q, sdkworker.Options{
			WorkerStopTimeout:                  opts.StopTimeout,
			MaxConcurrentActivityExecutionSize: opts.MaxConcurrentActivities,
		})
		RegisterFamily(w, deps, f)
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

// families registers each family's workflows and activities: the list a new
// saga's family is registered in, with its register function in the
// saga's own file.
var families = map[workflows.Family]func(Registry, Deps){
	workflows.Credits:     registerCredits,
	workflows.Transfers:   registerTransfers,
	workflows.Maintenance: func(w Registry, d Deps) { registerMaintenance(w, d); registerCatchUp(w, d) },
	workflows.Refunds:     registerRefunds,
}

// RegisterFamily registers what family f's worker runs on w: the family's
// workflows and their activities. The credits' worker also runs, for now,
// the transfers' and the maintenance's, see below.
func RegisterFamily(w Registry, deps Deps, f workflows.Family) {
	register, ok := families[f]
	if !ok {
		panic(fmt.Sprintf("worker: workflow family %q has no register function", f))
	}
	register(w, deps)
	if f == workflows.Credits {
		// Deploy safety: until the release that gave each family a queue,
		// every family ran on the credits' queue (pix-credit). Transfer
		// runs started before it go on there, their activities scheduled on
		// the same queue, and a retention or reconciliation run started by
		// a schedule not yet moved (EnsureRetentionSchedule moves it at the
		// worker's start) does too. The credits' worker keeps running them
		// so they complete. Remove these two lines in a later release, once
		// no transfer, retention or reconciliation run started before that
		// release is open (a transfer's saga lasts hours at most; check
		// with `temporal workflow list --query "TaskQueue = 'pix-credit'
		// AND WorkflowType != 'PixCredit' AND ExecutionStatus = 'Running'"`).
		registerTransfers(w, deps)
		registerMaintenance(w, deps)
	}
}

// Register registers every family's workflows and activities on w. Tests
// use it with their own workers and replayers.
func Register(w Registry, deps Deps) {
	for _, f := range workflows.Families {
		families[f](w, deps)
	}
}

func registerCredits(w Registry, d Deps) {
	w.RegisterWorkflowWithOptions(workflows.CreditPix, workflow.RegisterOptions{Name: workflows.CreditWorkflowName})
	w.RegisterActivity(d.Activities.CreditAccount) // a local activity
	w.RegisterActivity(d.Activities.MarkCreditFailed)
}

func registerTransfers(w Registry, d Deps) {
	w.RegisterWorkflowWithOptions(workflows.TransferPix, workflow.RegisterOptions{Name: workflows.TransferWorkflowName})
	w.RegisterActivity(d.Activities.SubmitTransfer)
	w.RegisterActivity(d.Activities.AwaitSettlement)
	w.RegisterActivity(d.Activities.SettleTransfer)
	w.RegisterActivity(d.Activities.RefundTransfer)
}

func registerMaintenance(w Registry, d Deps) {
	w.RegisterWorkflowWithOptions(workflows.Retention, workflow.RegisterOptions{Name: workflows.RetentionWorkflowName})
	w.RegisterWorkflowWithOptions(workflows.Reconcile, workflow.RegisterOptions{Name: workflows.ReconcileWorkflowName})
	w.RegisterActivity(d.Activities.DeleteExpiredIdempotencyKeys)
	w.RegisterActivity(d.Activities.DeletePublishedEvents)
	w.RegisterActivity(d.Activities.DeleteDoneInboxRows)
	w.RegisterActivity(d.Activities.ReconcileBooks)
}

// registerCatchUp registers the PSP catch-up, on the maintenance queue
// only: it never ran on the credits' queue (unlike registerMaintenance's).
func registerCatchUp(w Registry, d Deps) {
	w.RegisterWorkflowWithOptions(workflows.PSPCatchUp, workflow.RegisterOptions{Name: workflows.PSPCatchUpWorkflowName})
	w.RegisterActivity(d.CatchUp)
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
