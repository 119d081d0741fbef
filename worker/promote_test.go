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

// A rollback to a release before versioning (docs/operations.md: its
// workers started, `set-current-version --unversioned`) leaves the
// deployment with no current version, as a first install has. A worker of
// the versioned build rolled back from, restarted while it drains (a crash,
// a rescheduled pod), must not take that for a first install: with
// TEMPORAL_WORKER_PROMOTE=first it would make its build current again and
// undo the operator's rollback, new transfers pinned to the build rolled
// back from.
func TestPromoteFirstKeepsARollbackToUnversioned(t *testing.T) {
	s := temporaltest.StartT(t)
	c := s.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	queues := runconf.TaskQueuesFor(fmt.Sprintf("pix-credit-r%d", rand.Uint64()))
	v := worker.Version(queues, "build-v")
	startBuild(t, c, queues, sagaOnBuildA, worker.Options{Version: v})
	require.NoError(t, worker.Promote(ctx, c, v, worker.PromoteFirst, slog.New(slog.DiscardHandler)))

	h := c.WorkerDeploymentClient().GetHandle(v.DeploymentName)
	_, err := h.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{BuildID: ""}) // --unversioned
	require.NoError(t, err)

	// The versioned build's worker starts again.
	require.NoError(t, worker.Promote(ctx, c, v, worker.PromoteFirst, slog.New(slog.DiscardHandler)))
	d, err := h.Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	require.NoError(t, err)
	require.Nil(t, d.Info.RoutingConfig.CurrentVersion, "the unversioned workers stay current")
}

// An operator rolling the first versioned build out gradually
// (set-ramping-version at 10%, the unversioned workers still current) has
// chosen its pace: a worker of that build starting with
// TEMPORAL_WORKER_PROMOTE=first must not make it current at once.
func TestPromoteFirstKeepsAnOperatorsRamp(t *testing.T) {
	s := temporaltest.StartT(t)
	c := s.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	queues := runconf.TaskQueuesFor(fmt.Sprintf("pix-credit-p%d", rand.Uint64()))
	v := worker.Version(queues, "build-v")
	startBuild(t, c, queues, sagaOnBuildA, worker.Options{Version: v})
	h := c.WorkerDeploymentClient().GetHandle(v.DeploymentName)
	require.Eventually(t, func() bool {
		_, err := h.SetRampingVersion(ctx, client.WorkerDeploymentSetRampingVersionOptions{BuildID: v.BuildID, Percentage: 10})
		return err == nil
	}, time.Minute, 200*time.Millisecond, "the version is known once its workers poll")

	require.NoError(t, worker.Promote(ctx, c, v, worker.PromoteFirst, slog.New(slog.DiscardHandler)))
	d, err := h.Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	require.NoError(t, err)
	require.Nil(t, d.Info.RoutingConfig.CurrentVersion, "the unversioned workers stay current")
	require.NotNil(t, d.Info.RoutingConfig.RampingVersion, "the ramp stays")
}
