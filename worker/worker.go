package worker

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"golang.org/x/sync/errgroup"

	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/workflows"
)

// Options tune the workers.
type Options struct {
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
// family's queue (env.Queues) with what the family's sagas register
// (RegisterFamily), all on client c: a dispatcher sharing c starts its runs
// eagerly on the family's worker. pixd passes registry.All.
func New(c client.Client, sagas []saga.Descriptor, env saga.Env, opts Options) []Worker {
	ws := make([]Worker, 0, len(workflows.Families))
	for _, f := range workflows.Families {
		q := env.Queues.Of(f)
		w := sdkworker.New(c, q, sdkworker.Options{
			WorkerStopTimeout:                  opts.StopTimeout,
			MaxConcurrentActivityExecutionSize: opts.MaxConcurrentActivities,
		})
		RegisterFamily(w, sagas, env, f)
		ws = append(ws, Worker{Family: f, TaskQueue: q, Worker: w})
	}
	return ws
}

// Registry is what workflows and activities are registered on: a worker,
// a replayer, a test environment.
type Registry = saga.Registry

// RegisterFamily registers what family f's worker runs on w: the workflows
// and activities of the sagas of family f, then of those that are also on
// f (saga.Descriptor.AlsoOn: for now the credits' worker also runs the
// transfers' and the maintenance's, for deploy safety). A family without
// a saga is a wiring mistake: it panics.
func RegisterFamily(w Registry, sagas []saga.Descriptor, env saga.Env, f workflows.Family) {
	registered := false
	for _, d := range sagas {
		if d.Family == f {
			d.Register(w, env)
			registered = true
		}
	}
	if !registered {
		panic(fmt.Sprintf("worker: workflow family %q has no saga (registry.All)", f))
	}
	for _, d := range sagas {
		if slices.Contains(d.AlsoOn, f) {
			d.Register(w, env)
		}
	}
}

// Register registers every saga's workflows and activities on w, once
// each. Tests use it with their own workers and replayers.
func Register(w Registry, sagas []saga.Descriptor, env saga.Env) {
	for _, d := range sagas {
		d.Register(w, env)
	}
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
