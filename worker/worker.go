package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"golang.org/x/sync/errgroup"

	"github.com/pixbank/pix/internal/buildinfo"
	"github.com/pixbank/pix/internal/runconf"
	"github.com/pixbank/pix/saga"
)

// Options tune the workers.
type Options struct {
	// StopTimeout is how long a stopping worker lets running activities
	// finish. Each family's worker has it.
	StopTimeout time.Duration
	// MaxConcurrentActivities bounds the activities running at once in each
	// family's worker (0: SDK default).
	MaxConcurrentActivities int
	// WorkflowTaskPollers is how many workflow task polls each family's
	// worker keeps open (0: the SDK's default, 2). Half of them wait on
	// the worker's sticky queue, the others on the family's task queue,
	// whose partitions (4 by default) each hold their own tasks: with
	// fewer normal polls than partitions, a task can land in a partition
	// no poll waits on, and Temporal's matching forwards it to another
	// partition's poll only while the backlogs are young (under 5 s). A
	// pinned saga's first task always goes through matching (its start is
	// not eager: StartsOnTheCurrentBuild); with one normal poll, a
	// devolução's waited there more than 30 s (docs/scaling.md, "Several
	// task queue partitions").
	WorkflowTaskPollers int
	// Version, when set, makes every family's worker a version of a
	// Temporal Worker Deployment (Worker Versioning): Temporal then sends
	// each run's tasks to the build the run is on (its saga's Versioning:
	// pinned to the build it started on, or moved to the current build).
	// The zero value: an unversioned worker, as before versioning.
	Version sdkworker.WorkerDeploymentVersion
}

// Version is the Worker Deployment version pixd's workers register as
// (TEMPORAL_WORKER_VERSIONING): the deployment named by the task queues'
// base, so one service's workers are one deployment whatever their
// family (its queues are released and switched together, one
// set-current-version per release), and the build id the binary's
// version (internal/buildinfo), so two different builds never share one.
func Version(queues runconf.TaskQueues, buildID string) sdkworker.WorkerDeploymentVersion {
	return sdkworker.WorkerDeploymentVersion{DeploymentName: queues.Base, BuildID: buildID}
}

// ThisBuild is the version of this binary's workers under queues.
func ThisBuild(queues runconf.TaskQueues) sdkworker.WorkerDeploymentVersion {
	return Version(queues, buildinfo.Read().Version)
}

// Worker is the Temporal worker of one family, polling its queue.
type Worker struct {
	Family    runconf.Family
	TaskQueue string
	sdkworker.Worker
}

// New builds one worker per family (runconf.Families), each on its
// family's queue (env.Queues) with what the family's sagas register
// (RegisterFamily), all on client c: a dispatcher sharing c starts its runs
// eagerly on the family's worker. pixd passes registry.All.
func New(c client.Client, sagas []saga.Descriptor, env saga.Env, opts Options) []Worker {
	ws := make([]Worker, 0, len(runconf.Families))
	for _, f := range runconf.Families {
		q := env.Queues.Of(f)
		w := sdkworker.New(c, q, sdkworker.Options{
			WorkerStopTimeout:                  opts.StopTimeout,
			MaxConcurrentActivityExecutionSize: opts.MaxConcurrentActivities,
			MaxConcurrentWorkflowTaskPollers:   opts.WorkflowTaskPollers,
			DeploymentOptions: sdkworker.DeploymentOptions{
				UseVersioning: opts.Version != sdkworker.WorkerDeploymentVersion{},
				Version:       opts.Version,
			},
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
func RegisterFamily(w Registry, sagas []saga.Descriptor, env saga.Env, f runconf.Family) {
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

// When a starting worker makes its build the current version of its
// deployment (TEMPORAL_WORKER_PROMOTE): the build new runs start on (a
// dispatcher's eager start aside: it starts its runs on its own build),
// and AutoUpgrade runs move to.
const (
	// PromoteFirst: only when the deployment has never had a current
	// version (a first install, or the first versioned release over
	// unversioned workers, whose open runs then go on on it as on any new
	// release before versioning); not after an operator made the
	// unversioned workers current (a rollback) nor while one ramps a build
	// from them. A later build waits for an operator's set-current-version:
	// the production default.
	PromoteFirst = "first"
	// PromoteAlways: every build, as it starts (development, tests).
	PromoteAlways = "always"
	// PromoteNever: the operator promotes every build, the first too.
	PromoteNever = "never"
)

// Promote makes v current as mode says (PromoteFirst, PromoteAlways,
// PromoteNever), once v's workers poll: call it beside Run. It logs what
// it did, or what the operator has to do; it returns nil when ctx ends
// first (a stop while starting).
func Promote(ctx context.Context, c client.Client, v sdkworker.WorkerDeploymentVersion, mode string, log *slog.Logger) error {
	if mode == PromoteNever {
		log.Info("worker build not promoted (TEMPORAL_WORKER_PROMOTE=never)", "deployment", v.DeploymentName, "build_id", v.BuildID)
		return nil
	}
	h := c.WorkerDeploymentClient().GetHandle(v.DeploymentName)
	for {
		var token []byte
		if mode == PromoteFirst {
			d, err := h.Describe(ctx, client.WorkerDeploymentDescribeOptions{})
			if ctx.Err() != nil {
				return nil // stopped while starting: nothing to promote
			}
			if err != nil && !versionUnknownYet(err) {
				if !transient(err) {
					return fmt.Errorf("describe worker deployment %s: %w", v.DeploymentName, err)
				}
				log.Warn("worker build promotion: Temporal did not answer; asked again", "deployment", v.DeploymentName, "error", err)
			}
			if err == nil {
				if current := d.Info.RoutingConfig.CurrentVersion; current != nil {
					if *current != v {
						log.Info("worker build is not the current version: an operator promotes it (docs/operations.md)",
							"deployment", v.DeploymentName, "build_id", v.BuildID, "current_build_id", current.BuildID)
					}
					return nil
				}
				if rc := d.Info.RoutingConfig; !rc.CurrentVersionChangedTime.IsZero() || rc.RampingVersion != nil {
					// None current, but an operator chose so: set-current-version
					// --unversioned (a rollback to a release before versioning),
					// or a ramp from the unversioned workers. A first install
					// never had a current version nor a ramp; this build, the one
					// rolled back from restarting while it drains, or the one
					// ramped, must not undo the operator's choice.
					// TestPromoteFirstKeepsARollbackToUnversioned, ...AnOperatorsRamp.
					log.Info("worker build not promoted: an operator chose the unversioned workers as current (a rollback, a ramp); an operator promotes it (docs/operations.md)",
						"deployment", v.DeploymentName, "build_id", v.BuildID, "current_version_changed", rc.CurrentVersionChangedTime, "ramping", rc.RampingVersion != nil)
					return nil
				}
				token = d.ConflictToken // none current, ever: only if still none
			}
		}
		if token != nil || mode == PromoteAlways {
			_, err := h.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{BuildID: v.BuildID, ConflictToken: token})
			if ctx.Err() != nil {
				return nil // stopped while starting; the next start asks again
			}
			if err == nil {
				log.Info("worker build promoted to the current version", "deployment", v.DeploymentName, "build_id", v.BuildID, "promote", mode)
				return nil
			}
			if !versionUnknownYet(err) {
				if !transient(err) {
					return fmt.Errorf("make %s:%s the current version: %w", v.DeploymentName, v.BuildID, err)
				}
				log.Warn("worker build promotion: Temporal did not answer; asked again", "deployment", v.DeploymentName, "error", err)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

// SetCurrentVersion makes v the current version of its deployment, once
// v's workers poll (asked again every second until then, or until ctx
// ends): what `temporal worker deployment set-current-version` does.
func SetCurrentVersion(ctx context.Context, c client.Client, v sdkworker.WorkerDeploymentVersion) error {
	h := c.WorkerDeploymentClient().GetHandle(v.DeploymentName)
	for {
		_, err := h.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{BuildID: v.BuildID})
		// A Temporal that did not answer this time (its deployment
		// workflow slow on a busy server: the call's own deadline) is
		// asked again too, until ctx ends.
		if err == nil || !versionUnknownYet(err) && !(transient(err) && ctx.Err() == nil) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("make %s:%s the current version: %w", v.DeploymentName, v.BuildID, err)
		case <-time.After(time.Second):
		}
	}
}

// transient tells the errors of a Temporal that did not answer this time
// (down, overloaded, slow): a worker keeps running and asks again rather
// than exiting over its build's promotion.
func transient(err error) bool {
	var unavailable *serviceerror.Unavailable
	var exhausted *serviceerror.ResourceExhausted
	var deadline *serviceerror.DeadlineExceeded
	return errors.As(err, &unavailable) || errors.As(err, &exhausted) || errors.As(err, &deadline) || errors.Is(err, context.DeadlineExceeded)
}

// versionUnknownYet tells the errors of a version (or deployment) whose
// workers have not polled yet, which the next poll ends: Temporal knows a
// version only from its pollers ("Worker Deployment not found", "Version
// not found in deployment"); a conflict token gone stale (another worker
// promoted meanwhile) is asked again too.
func versionUnknownYet(err error) bool {
	var notFound *serviceerror.NotFound
	var stale *serviceerror.FailedPrecondition
	return errors.As(err, &notFound) || errors.As(err, &stale)
}
