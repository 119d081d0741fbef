//go:build e2e

package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"

	"github.com/pixbank/pix/cmd/pixd/app"
	"github.com/pixbank/pix/internal/codec"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/payload"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/runconf"
	"github.com/pixbank/pix/saga/reconcile"
	"github.com/pixbank/pix/saga/retention"
	"github.com/pixbank/pix/saga/transfer"
	"github.com/pixbank/pix/workflows"
)

// Each family's worker keeps WORKER_WORKFLOW_TASK_POLLERS workflow task
// polls open, half of them on the family's task queue: one at least for
// each of the queue's partitions, so that a pinned saga's first task,
// which always goes through matching, finds a poll wherever it lands
// (worker.Options.WorkflowTaskPollers). With the SDK's default, 2 (one
// normal), a devolução's first task waited more than 30 s in a partition
// no poll reached (TestRefundNotMadeIsReversedOnce on a loaded machine).
func TestEachFamilyPollsEveryPartitionOfItsQueue(t *testing.T) {
	s := newStack(t, shared, nil)
	for _, f := range runconf.Families {
		queue := s.cfg.TaskQueues().Of(f)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			normal, sticky := s.numPollers(queue, "workflow_task"), s.numPollers(queue, "workflow_sticky_task")
			assert.Equal(c, float64(s.cfg.WorkerWorkflowTaskPollers), normal+sticky, "every poll open while idle")
			assert.GreaterOrEqual(c, normal, float64(devServerPartitions), "a poll of the normal queue for each partition")
		}, 30*time.Second, 100*time.Millisecond, "the %s's worker polls %s", f, queue)
	}
}

// Before each workflow family had a task queue of its own, the worker
// created the retention's and the reconciliation's Schedules starting their
// runs on the credits' queue (TEMPORAL_TASK_QUEUE), at the intervals of
// their first creation. A worker of this release finds them under the same
// IDs and brings them to its configuration: the maintenance queue, its
// intervals, its retention periods; their runs then run there.
func TestSchedulesOnTheOldQueueAreMovedToTheMaintenanceQueue(t *testing.T) {
	ctx := context.Background()
	base := "pix-credit-" + randomSuffix()
	c := shared.Client(t, func(o *client.Options) { codec.NewConverters(codec.New(e2eCodecKeys)).ApplyTo(o) })
	ids := []string{retention.ScheduleID(base), reconcile.ScheduleID(base)}
	for i, name := range []string{retention.WorkflowName, reconcile.WorkflowName} {
		var args []any
		if name == retention.WorkflowName {
			args = []any{retention.Input{BatchSize: 10, MaxBatches: 1, OutboxRetention: payload.Duration(time.Hour), InboxRetention: payload.Duration(time.Hour)}}
		}
		_, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{
			ID:     ids[i],
			Spec:   client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: 7 * time.Hour}}},
			Action: &client.ScheduleWorkflowAction{ID: ids[i], Workflow: name, Args: args, TaskQueue: base},
		})
		require.NoError(t, err)
	}
	created := time.Now()

	s := newStack(t, shared, func(cfg *config.Config) { cfg.TemporalTaskQueue = base })
	maintenance := s.cfg.TaskQueues().Maintenance
	require.Equal(t, strings.Replace(base, "credit", "maintenance", 1), maintenance)
	kept := retention.DefaultSettings() // the stack sets none of the retention's, nor of the reconciliation's
	intervals := map[string]time.Duration{ids[0]: kept.Interval, ids[1]: reconcile.DefaultSettings().Interval}
	descriptions := map[string]*client.ScheduleDescription{}
	for _, id := range ids {
		handle := c.ScheduleClient().GetHandle(ctx, id)
		var d *client.ScheduleDescription
		// A description can show the updated action while its
		// LastUpdateAt is still the creation's (seen in CI): wait for
		// both, so the restart below is compared with the update.
		require.Eventually(t, func() bool {
			var err error
			d, err = handle.Describe(ctx)
			require.NoError(t, err)
			return d.Schedule.Action.(*client.ScheduleWorkflowAction).TaskQueue == maintenance && d.Info.LastUpdateAt.After(created)
		}, 30*time.Second, 100*time.Millisecond, "the worker moves %s to %s", id, maintenance)
		require.Equal(t, intervals[id], d.Schedule.Spec.Intervals[0].Every, "the configured interval replaces the first creation's")
		descriptions[id] = d
	}
	require.Equal(t, payload.Duration(kept.InboxRetention), retentionOf(t, c, base).InboxRetention)

	// The worker restarts, its configuration unchanged: nothing to write.
	// Its first start's sync has ended first (it moved both Schedules
	// before it created the catch-up's; a kill in between cut it short,
	// unsaid), so that the restarted worker's is the second said.
	s.waitLog("schedules brought to this worker's configuration: its build is current", 1)
	s.killWorker()
	s.startWorker()
	s.waitLog("worker running", 2)
	// Its build current, the restarted worker brings the Schedules to its
	// configuration (worker.KeepSchedules), then says so: compared once it
	// has, however long that took.
	s.waitLog("schedules brought to this worker's configuration: its build is current", 2)
	for _, id := range ids {
		again, err := c.ScheduleClient().GetHandle(ctx, id).Describe(ctx)
		require.NoError(t, err)
		require.Equal(t, descriptions[id].Info.LastUpdateAt, again.Info.LastUpdateAt, "a schedule as configured is not updated")
	}

	// The moved reconciliation runs, on the maintenance queue.
	require.NoError(t, s.reconcileNow())
	desc, err := c.ScheduleClient().GetHandle(ctx, reconcile.ScheduleID(base)).Describe(ctx)
	require.NoError(t, err)
	run := desc.Info.RecentActions[len(desc.Info.RecentActions)-1].StartWorkflowResult
	exec, err := c.DescribeWorkflow(ctx, run.WorkflowID, run.FirstExecutionRunID)
	require.NoError(t, err)
	require.Equal(t, maintenance, exec.TaskQueueName)
}

// INBOX_RETENTION is the data-retention policy (LGPD): changed, it reaches
// the running retention Schedule when the worker restarts, and a pause the
// operator made stays.
func TestAChangedInboxRetentionReachesTheScheduleAfterARestart(t *testing.T) {
	ctx := context.Background()
	base := "pix-credit-" + randomSuffix()
	c := shared.Client(t, func(o *client.Options) { codec.NewConverters(codec.New(e2eCodecKeys)).ApplyTo(o) })
	onBase := func(cfg *config.Config) { cfg.TemporalTaskQueue = base }
	before := newStack(t, shared, onBase, app.WithSettings(map[string]string{"INBOX_RETENTION": "720h"}))
	handle := c.ScheduleClient().GetHandle(ctx, retention.ScheduleID(base))
	require.Eventually(t, func() bool {
		_, err := handle.Describe(ctx)
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "the first start creates the Schedule")
	require.Equal(t, payload.Duration(720*time.Hour), retentionOf(t, c, base).InboxRetention)
	require.NoError(t, handle.Pause(ctx, client.SchedulePauseOptions{Note: "on-call: paused during the incident"}))
	before.killWorker()

	after := newStack(t, shared, onBase, app.WithSettings(map[string]string{"INBOX_RETENTION": "168h"}))
	after.waitLog("schedule brought to the configuration", 1)
	require.Equal(t, payload.Duration(168*time.Hour), retentionOf(t, c, base).InboxRetention, "the restarted worker brought the Schedule to INBOX_RETENTION")
	d, err := handle.Describe(ctx)
	require.NoError(t, err)
	require.True(t, d.Schedule.State.Paused, "the operator's pause is kept")
	require.Equal(t, "on-call: paused during the incident", d.Schedule.State.Note)
}

// waitLog waits until the service has logged msg n times.
func (s *stack) waitLog(msg string, n int) {
	s.t.Helper()
	require.Eventually(s.t, func() bool {
		return strings.Count(s.logs.String(), `"msg":"`+msg+`"`) >= n
	}, 30*time.Second, 50*time.Millisecond, "the service logs %q %d times", msg, n)
}

// retentionOf reads the retention periods the running retention Schedule
// of base starts its runs with.
func retentionOf(t *testing.T, c client.Client, base string) retention.Input {
	t.Helper()
	d, err := c.ScheduleClient().GetHandle(context.Background(), retention.ScheduleID(base)).Describe(context.Background())
	require.NoError(t, err)
	args := d.Schedule.Action.(*client.ScheduleWorkflowAction).Args
	require.Len(t, args, 1)
	var in retention.Input
	require.NoError(t, codec.NewConverters(codec.New(e2eCodecKeys)).DataConverter.FromPayload(args[0].(*commonpb.Payload), &in))
	return in
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
	started, err := transfer.Start(ctx, s.client(), queues.Credits, transfer.Input{TransferID: id, Settings: s.transferRun()}, workflows.Listing{})
	require.NoError(t, err)
	require.True(t, started)
	s.waitTransfer(id, pix.TransferSettled, 30*time.Second)
	exec, err := s.client().DescribeWorkflow(ctx, transfer.WorkflowID(id), "")
	require.NoError(t, err)
	require.Equal(t, queues.Credits, exec.TaskQueueName, "it ran where it was started")
	require.EqualValues(t, 9_000, s.balance("acc-1"))
	s.assertBooksBalance()
}

// transferRun is the transfer's runs' settings as the stack's worker reads
// them (its configuration, and the stack's own settings).
func (s *stack) transferRun() transfer.RunSettings {
	s.t.Helper()
	set, err := transfer.SettingsFrom(config.LookupIn(s.settings))
	require.NoError(s.t, err)
	return set.Run(s.cfg)
}
