//go:build e2e

package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/internal/codec"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/workflows"
)

// Before each workflow family had a task queue of its own, the worker
// created the retention's and the reconciliation's Schedules starting their
// runs on the credits' queue (TEMPORAL_TASK_QUEUE). A worker of this
// release finds them under the same IDs and moves them to the maintenance
// queue, leaving the rest of them as they were; their runs then run there.
func TestSchedulesOnTheOldQueueAreMovedToTheMaintenanceQueue(t *testing.T) {
	ctx := context.Background()
	base := "pix-credit-" + randomSuffix()
	c := shared.Client(t, func(o *client.Options) { codec.NewConverters(codec.New(e2eCodecKeys)).ApplyTo(o) })
	ids := []string{workflows.RetentionScheduleID(base), workflows.ReconcileScheduleID(base)}
	for i, name := range []string{workflows.RetentionWorkflowName, workflows.ReconcileWorkflowName} {
		var args []any
		if name == workflows.RetentionWorkflowName {
			args = []any{activities.RetentionInput{BatchSize: 10, MaxBatches: 1, OutboxRetention: time.Hour, InboxRetention: time.Hour}}
		}
		_, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{
			ID:     ids[i],
			Spec:   client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: 7 * time.Hour}}},
			Action: &client.ScheduleWorkflowAction{ID: ids[i], Workflow: name, Args: args, TaskQueue: base},
		})
		require.NoError(t, err)
	}

	s := newStack(t, shared, func(cfg *config.Config) { cfg.TemporalTaskQueue = base })
	maintenance := s.cfg.TaskQueues().Maintenance
	require.Equal(t, strings.Replace(base, "credit", "maintenance", 1), maintenance)
	for _, id := range ids {
		handle := c.ScheduleClient().GetHandle(ctx, id)
		var d *client.ScheduleDescription
		require.Eventually(t, func() bool {
			var err error
			d, err = handle.Describe(ctx)
			require.NoError(t, err)
			return d.Schedule.Action.(*client.ScheduleWorkflowAction).TaskQueue == maintenance
		}, 30*time.Second, 100*time.Millisecond, "the worker moves %s to %s", id, maintenance)
		require.Equal(t, 7*time.Hour, d.Schedule.Spec.Intervals[0].Every, "the rest of the schedule is kept")

		// Ensured again (another worker starting): nothing to change.
		queues := s.cfg.TaskQueues()
		require.NoError(t, workflows.EnsureRetentionSchedule(ctx, c, queues, time.Minute, activities.RetentionInput{}))
		require.NoError(t, workflows.EnsureReconcileSchedule(ctx, c, queues, time.Minute))
		again, err := handle.Describe(ctx)
		require.NoError(t, err)
		require.Equal(t, d.Info.LastUpdateAt, again.Info.LastUpdateAt, "a schedule on the right queue is not updated")
		require.Equal(t, 7*time.Hour, again.Schedule.Spec.Intervals[0].Every)
	}

	// The moved reconciliation runs, on the maintenance queue.
	require.NoError(t, s.reconcileNow())
	desc, err := c.ScheduleClient().GetHandle(ctx, workflows.ReconcileScheduleID(base)).Describe(ctx)
	require.NoError(t, err)
	run := desc.Info.RecentActions[len(desc.Info.RecentActions)-1].StartWorkflowResult
	exec, err := c.DescribeWorkflow(ctx, run.WorkflowID, run.FirstExecutionRunID)
	require.NoError(t, err)
	require.Equal(t, maintenance, exec.TaskQueueName)
}

// A transfer's saga started before each family had a task queue of its own
// runs on the credits' queue: the credits' worker still runs it (and its
// activities) to the end.
func TestTransferStartedOnTheCreditsQueueStillCompletes(t *testing.T) {
	ctx := context.Background()
	s := newStack(t, shared, func(c *config.Config) { c.DispatcherEnabled = false })
	s.openAccount("acc-1", 10_000)
	r := s.sendPix(uuid.NewString(), "acc-1", 1_000, "old-queue@example.com")
	require.Equal(t, http.StatusCreated, r.Status, "%v", r.Body)
	id := r.Body["id"].(string)

	queues := s.cfg.TaskQueues()
	started, err := workflows.StartTransfer(ctx, s.client(), queues.Credits, workflows.TransferInput{TransferID: id, Settings: s.cfg.Transfer()}, workflows.Listing{})
	require.NoError(t, err)
	require.True(t, started)
	s.waitTransfer(id, pix.TransferSettled, 30*time.Second)
	exec, err := s.client().DescribeWorkflow(ctx, workflows.TransferWorkflowID(id), "")
	require.NoError(t, err)
	require.Equal(t, queues.Credits, exec.TaskQueueName, "it ran where it was started")
	require.EqualValues(t, 9_000, s.balance("acc-1"))
	s.assertBooksBalance()
}
