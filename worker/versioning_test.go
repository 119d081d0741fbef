package worker_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/internal/runconf"
	"github.com/pixbank/pix/internal/tooling/temporaltest"
	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/saga/registry"
	"github.com/pixbank/pix/worker"
)

// The saga of the two builds below, by its recorded name: one
// implementation per build, registered under the same name, as a release
// changes a saga's code.
const twoBuildSaga = "TwoBuildSaga"

// sagaOnBuildA waits for the signal "go", then ends with "A".
func sagaOnBuildA(ctx workflow.Context) (string, error) {
	workflow.GetSignalChannel(ctx, "go").Receive(ctx, nil)
	return "A", nil
}

// sagaOnBuildB is build B's change to it, incompatible with A's runs: a
// timer before the wait, which a history written by A does not have (a
// new step without workflow.GetVersion). B replaying a run A started
// fails with a nondeterminism error.
func sagaOnBuildB(ctx workflow.Context) (string, error) {
	if err := workflow.Sleep(ctx, time.Millisecond); err != nil {
		return "", err
	}
	workflow.GetSignalChannel(ctx, "go").Receive(ctx, nil)
	return "B", nil
}

// buildSagas are a build's sagas: the two-build saga on the credits'
// family, pinned, and an empty saga on each other family (worker.New wants
// one per family).
func buildSagas(fn any) []saga.Descriptor {
	none := func(saga.Env) any { return nil }
	noActivities := func(any) []any { return nil }
	sagas := []saga.Descriptor{{Name: "two-build", Family: runconf.Credits, Versioning: workflow.VersioningBehaviorPinned,
		Workflows: map[string]any{twoBuildSaga: fn}, Deps: none, Activities: noActivities}}
	for _, f := range runconf.Families[1:] {
		sagas = append(sagas, saga.Descriptor{Name: string(f), Family: f, Versioning: workflow.VersioningBehaviorAutoUpgrade,
			Workflows: map[string]any{"Idle" + string(f): func(workflow.Context) error { return nil }}, Deps: none, Activities: noActivities})
	}
	return sagas
}

// startBuild runs a build's workers (worker.New, worker.Run, as pixd
// worker does) until the returned stop is called (or the test ends).
func startBuild(t *testing.T, c client.Client, queues runconf.TaskQueues, fn any, opts worker.Options) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ws := worker.New(c, buildSagas(fn), saga.Env{Queues: queues}, opts)
	done := make(chan error, 1)
	go func() { done <- worker.Run(ctx, ws...) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			require.NoError(t, <-done)
		}
	}
	t.Cleanup(stop)
	return stop
}

// runOn starts a run of the two-build saga (no eager start: Temporal
// routes it, to the current version) and waits until its first workflow
// task ran, on a build it returns ("" for an unversioned worker).
func runOn(t *testing.T, c client.Client, queues runconf.TaskQueues, id string) (client.WorkflowRun, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queues.Credits}, twoBuildSaga)
	require.NoError(t, err)
	return run, buildOf(t, c, run)
}

// finish signals run and returns its result.
func finish(t *testing.T, c client.Client, run client.WorkflowRun) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, c.SignalWorkflow(ctx, run.GetID(), run.GetRunID(), "go", nil))
	var got string
	require.NoError(t, run.Get(ctx, &got), "run %s", run.GetID())
	return got
}

// An upgrade to a build with an incompatible change to a pinned saga, and
// the rollback from it, with Worker Versioning as pixd worker registers
// (worker.Version: the deployment named by the queues' base): runs begun
// on build A finish on A while B takes the new ones; rolled back (A
// current again), runs begun on B finish on B, which keeps running while
// it drains, and the new ones go to A. Nothing is stranded, and nothing
// replays on the other build's code. TestWithoutVersioningTheChangeBreaksTheOldRuns
// shows the change is incompatible: without versioning, B fails A's run.
func TestAnUpgradeAndItsRollbackStrandNothing(t *testing.T) {
	s := temporaltest.StartT(t)
	c := s.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	queues := runconf.TaskQueuesFor(fmt.Sprintf("pix-credit-v%d", rand.Uint64()))
	a, b := worker.Version(queues, "build-a"), worker.Version(queues, "build-b")

	// Build A alone: the first build of the deployment, promoted as
	// pixd's default (TEMPORAL_WORKER_PROMOTE=first) promotes it.
	startBuild(t, c, queues, sagaOnBuildA, worker.Options{Version: a})
	require.NoError(t, worker.Promote(ctx, c, a, worker.PromoteFirst, slog.New(slog.DiscardHandler)))
	onA, build := runOn(t, c, queues, "begun-on-a")
	require.Equal(t, "build-a", build)

	// Build B starts beside it: "first" leaves A current (an operator
	// promotes B); new runs still go to A.
	stopB := startBuild(t, c, queues, sagaOnBuildB, worker.Options{Version: b})
	require.NoError(t, worker.Promote(ctx, c, b, worker.PromoteFirst, slog.New(slog.DiscardHandler)))
	alsoOnA, build := runOn(t, c, queues, "begun-on-a-beside-b")
	require.Equal(t, "build-a", build)

	// The operator promotes B: new runs go to B, A's runs finish on A.
	require.NoError(t, worker.SetCurrentVersion(ctx, c, b))
	onB, build := runOn(t, c, queues, "begun-on-b")
	require.Equal(t, "build-b", build)
	require.Equal(t, "A", finish(t, c, onA), "a run begun on A finishes on A's code")

	// The rollback: A current again. New runs go to A; B's pinned run
	// finishes on B, still running (draining).
	require.NoError(t, worker.SetCurrentVersion(ctx, c, a))
	afterRollback, build := runOn(t, c, queues, "begun-after-rollback")
	require.Equal(t, "build-a", build)
	require.Equal(t, "B", finish(t, c, onB), "a run begun on B finishes on B's code after the rollback")
	require.Equal(t, "A", finish(t, c, alsoOnA))
	require.Equal(t, "A", finish(t, c, afterRollback))

	// Nothing is left open: B, drained, can stop.
	require.Eventually(t, func() bool {
		n, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{
			Query: fmt.Sprintf("TaskQueue = '%s' AND ExecutionStatus = 'Running'", queues.Credits)})
		require.NoError(t, err)
		return n.GetCount() == 0
	}, 30*time.Second, 100*time.Millisecond, "no run left open")
	stopB()
}

// The control of the test above: the same two builds without Worker
// Versioning (TEMPORAL_WORKER_VERSIONING=false, as before it), upgraded by
// stopping A and starting B. B takes A's open run, replays A's history
// with its own code, and fails its workflow task on the nondeterminism:
// the run is stuck (a hand-made GetVersion, or a flag as
// CREDIT_LISTING_IN_INPUT, was the only way around it).
func TestWithoutVersioningTheChangeBreaksTheOldRuns(t *testing.T) {
	s := temporaltest.StartT(t)
	c := s.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	queues := runconf.TaskQueuesFor(fmt.Sprintf("pix-credit-u%d", rand.Uint64()))

	stopA := startBuild(t, c, queues, sagaOnBuildA, worker.Options{})
	run, build := runOn(t, c, queues, "begun-on-a")
	require.Empty(t, build, "an unversioned worker")
	stopA()
	startBuild(t, c, queues, sagaOnBuildB, worker.Options{})
	require.NoError(t, c.SignalWorkflow(ctx, run.GetID(), run.GetRunID(), "go", nil))
	require.Eventually(t, func() bool {
		iter := c.GetWorkflowHistory(ctx, run.GetID(), run.GetRunID(), false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for iter.HasNext() {
			e, err := iter.Next()
			require.NoError(t, err)
			if f := e.GetWorkflowTaskFailedEventAttributes(); f != nil {
				return f.GetCause() == enums.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR
			}
		}
		return false
	}, time.Minute, 100*time.Millisecond, "build B fails A's run on the nondeterminism")
	d, err := c.DescribeWorkflow(ctx, run.GetID(), run.GetRunID())
	require.NoError(t, err)
	require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_RUNNING, d.RawResponse.GetWorkflowExecutionInfo().GetStatus(), "stuck, neither done nor failed")
}

// Every saga of pixd registers on versioned workers: the SDK panics at
// registration on a workflow without a versioning behaviour.
func TestEverySagaRegistersOnVersionedWorkers(t *testing.T) {
	c, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
	require.NoError(t, err)
	defer c.Close()
	queues := runconf.TaskQueuesFor(runconf.CreditTaskQueue)
	require.NotPanics(t, func() {
		ws := worker.New(c, registry.All, saga.Env{Queues: queues}, worker.Options{Version: worker.ThisBuild(queues)})
		require.Len(t, ws, len(runconf.Families))
	})
	require.Equal(t, runconf.CreditTaskQueue, worker.ThisBuild(queues).DeploymentName)
	require.NotEmpty(t, worker.ThisBuild(queues).BuildID)
}
