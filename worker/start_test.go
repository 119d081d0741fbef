package worker_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/pixbank/pix/internal/runconf"
	"github.com/pixbank/pix/internal/tooling/temporaltest"
	"github.com/pixbank/pix/worker"
)

// Build B is current; build A, draining, still runs its dispatchers. An
// eager start from A's process (as durable.StartOnce starts) pins the run
// to A, whatever is current: stopped, A would strand it. Started through
// worker.StartsOnTheCurrentBuild, as pixd's dispatchers start a pinned
// saga, the run begins on B. Each build has its own client, as each pixd
// process has: an eager start is served by a worker of the starting
// client.
func TestAPinnedSagaStartedByADrainingBuildRunsOnTheCurrentOne(t *testing.T) {
	s := temporaltest.StartT(t)
	onA, onB := s.Client(t), s.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	queues := runconf.TaskQueuesFor(fmt.Sprintf("pix-credit-e%d", rand.Uint64()))
	a, b := worker.Version(queues, "build-a"), worker.Version(queues, "build-b")
	startBuild(t, onA, queues, sagaOnBuildA, worker.Options{Version: a})
	require.NoError(t, worker.Promote(ctx, onA, a, worker.PromoteFirst, slog.New(slog.DiscardHandler)))
	startBuild(t, onB, queues, sagaOnBuildB, worker.Options{Version: b})
	require.NoError(t, worker.SetCurrentVersion(ctx, onB, b))

	start := func(c client.Client, id string) (client.WorkflowRun, string) {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queues.Credits, EnableEagerStart: true}, twoBuildSaga)
		require.NoError(t, err)
		return run, buildOf(t, c, run)
	}
	eager, build := start(onA, "eager-from-a")
	require.Equal(t, "build-a", build, "the hazard: an eager start pins the run to the starting build")
	routed, build := start(worker.StartsOnTheCurrentBuild(onA), "routed-from-a")
	require.Equal(t, "build-b", build, "through StartsOnTheCurrentBuild, the run begins on the current build")
	require.Equal(t, "A", finish(t, onA, eager))
	require.Equal(t, "B", finish(t, onA, routed))
}

// buildOf waits until run's first workflow task completed and returns the
// build it completed on.
func buildOf(t *testing.T, c client.Client, run client.WorkflowRun) string {
	t.Helper()
	var build string
	require.Eventually(t, func() bool {
		desc, err := c.DescribeWorkflow(context.Background(), run.GetID(), run.GetRunID())
		require.NoError(t, err)
		info := desc.RawResponse.GetWorkflowExecutionInfo()
		build = info.GetVersioningInfo().GetDeploymentVersion().GetBuildId()
		return desc.RawResponse.GetPendingWorkflowTask() == nil && info.GetHistoryLength() > 3
	}, 45*time.Second, 50*time.Millisecond, "run %s: its first workflow task", run.GetID())
	return build
}
