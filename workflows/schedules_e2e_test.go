package workflows_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/pixbank/pix/internal/codec"
	"github.com/pixbank/pix/internal/payload"
	"github.com/pixbank/pix/internal/runconf"
	"github.com/pixbank/pix/internal/tooling/logtest"
	"github.com/pixbank/pix/internal/tooling/temporaltest"
	"github.com/pixbank/pix/saga/catchup"
	"github.com/pixbank/pix/saga/retention"
	"github.com/pixbank/pix/workflows"
)

// scheduleTest is a Temporal dev server's client whose payloads are
// encrypted (as a worker's with TEMPORAL_CODEC_KEYS), a ScheduleSync on
// it whose lines are kept, and task queues of the test's own (base
// prefix, then a number).
type scheduleTest struct {
	ctx        context.Context
	c          client.Client
	converters codec.Converters
	logs       *logtest.Lines
	schedules  workflows.ScheduleSync
	queues     runconf.TaskQueues
}

func newScheduleTest(t *testing.T, prefix string) scheduleTest {
	t.Helper()
	srv := temporaltest.StartT(t)
	keys, err := codec.ParseKeyRing("k1=" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x42}, codec.KeySize)))
	require.NoError(t, err)
	converters := codec.NewConverters(codec.New(keys))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	logs := &logtest.Lines{}
	return scheduleTest{ctx: ctx, c: srv.Client(t, converters.ApplyTo), converters: converters, logs: logs,
		schedules: workflows.ScheduleSync{DataConverter: converters.DataConverter, Log: logs.Logger()},
		queues:    runconf.TaskQueuesFor(fmt.Sprintf("%s%d", prefix, time.Now().UnixNano()))}
}

// A worker starting brings the retention's Schedule to the configuration:
// a changed INBOX_RETENTION and RETENTION_INTERVAL reach the Schedule made
// by an earlier start, an operator's pause (and its note) is kept, the
// change is logged, and a Schedule already as configured is not written,
// though its arguments are encrypted under a fresh nonce each time.
func TestSchedulesAreBroughtToTheConfiguration(t *testing.T) {
	st := newScheduleTest(t, "pix-credit-sched")
	ctx, c, converters, logs, schedules, queues := st.ctx, st.c, st.converters, st.logs, st.schedules, st.queues
	id := retention.ScheduleID(queues.Base)
	handle := c.ScheduleClient().GetHandle(ctx, id)

	first := retention.Input{BatchSize: 1000, MaxBatches: 100, OutboxRetention: payload.Duration(168 * time.Hour), InboxRetention: payload.Duration(720 * time.Hour)}
	require.NoError(t, retention.EnsureSchedule(ctx, c, schedules, queues, time.Hour, first))
	require.Equal(t, 1, logs.Count("schedule created"))
	require.NoError(t, handle.Pause(ctx, client.SchedulePauseOptions{Note: "paused by on-call: incident 42"}))
	paused, err := handle.Describe(ctx)
	require.NoError(t, err)

	// The next start, same configuration: nothing written.
	require.NoError(t, retention.EnsureSchedule(ctx, c, schedules, queues, time.Hour, first))
	again, err := handle.Describe(ctx)
	require.NoError(t, err)
	require.Equal(t, paused.Info.LastUpdateAt, again.Info.LastUpdateAt, "a Schedule as configured is not updated")
	require.Zero(t, logs.Count("schedule brought to the configuration"))

	// A start with INBOX_RETENTION=168h, the interval unchanged.
	changed := first
	changed.InboxRetention = payload.Duration(168 * time.Hour)
	require.NoError(t, retention.EnsureSchedule(ctx, c, schedules, queues, time.Hour, changed))
	d, err := handle.Describe(ctx)
	require.NoError(t, err)
	action := d.Schedule.Action.(*client.ScheduleWorkflowAction)
	require.Len(t, action.Args, 1)
	var stored retention.Input
	require.NoError(t, converters.DataConverter.FromPayload(action.Args[0].(*commonpb.Payload), &stored))
	require.Equal(t, changed, stored, "the running Schedule holds the new retention")
	require.Equal(t, queues.Maintenance, action.TaskQueue)
	require.True(t, d.Schedule.State.Paused, "the operator's pause is kept")
	require.Equal(t, "paused by on-call: incident 42", d.Schedule.State.Note)
	require.Equal(t, 1, logs.Count("schedule brought to the configuration"))
	require.Contains(t, logs.String(), `"changed":["arguments"]`)

	// Then RETENTION_INTERVAL=30m.
	require.NoError(t, retention.EnsureSchedule(ctx, c, schedules, queues, 30*time.Minute, changed))
	d, err = handle.Describe(ctx)
	require.NoError(t, err)
	require.Equal(t, []client.ScheduleIntervalSpec{{Every: 30 * time.Minute}}, d.Schedule.Spec.Intervals)
	require.True(t, d.Schedule.State.Paused)
	require.Equal(t, 2, logs.Count("schedule brought to the configuration"))
	require.Contains(t, logs.String(), `"changed":["interval"]`)

	// A Schedule an operator edited by hand (another queue, a cron) is
	// brought back too: the configuration is the source of truth.
	require.NoError(t, handle.Update(ctx, client.ScheduleUpdateOptions{DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
		in.Description.Schedule.Action.(*client.ScheduleWorkflowAction).TaskQueue = queues.Credits
		in.Description.Schedule.Spec = &client.ScheduleSpec{CronExpressions: []string{"0 3 * * *"}}
		return &client.ScheduleUpdate{Schedule: &in.Description.Schedule}, nil
	}}))
	require.NoError(t, retention.EnsureSchedule(ctx, c, schedules, queues, 30*time.Minute, changed))
	d, err = handle.Describe(ctx)
	require.NoError(t, err)
	require.Equal(t, []client.ScheduleIntervalSpec{{Every: 30 * time.Minute}}, d.Schedule.Spec.Intervals)
	require.Empty(t, d.Schedule.Spec.Calendars)
	require.Equal(t, queues.Maintenance, d.Schedule.Action.(*client.ScheduleWorkflowAction).TaskQueue)
	require.True(t, d.Schedule.State.Paused)
	require.Equal(t, 3, logs.Count("schedule brought to the configuration"))

	// Read-only (Differs, what the current build's workers check between
	// their writes): what differs is named, nothing is written.
	var found []workflows.ScheduleDifference
	check := schedules
	check.Differs = func(d workflows.ScheduleDifference) { found = append(found, d) }
	require.NoError(t, retention.EnsureSchedule(ctx, c, check, queues, time.Hour, first))
	require.Equal(t, []workflows.ScheduleDifference{{ID: id, Differs: []string{"interval", "arguments"}}}, found)
	unchanged, err := handle.Describe(ctx)
	require.NoError(t, err)
	require.Equal(t, d.Info.LastUpdateAt, unchanged.Info.LastUpdateAt, "a check writes nothing")
	require.Equal(t, []client.ScheduleIntervalSpec{{Every: 30 * time.Minute}}, unchanged.Schedule.Spec.Intervals)
	found = nil
	require.NoError(t, retention.EnsureSchedule(ctx, c, check, queues, 30*time.Minute, changed))
	require.Empty(t, found, "as configured")
	catchUp := c.ScheduleClient().GetHandle(ctx, catchup.ScheduleID(queues.Base))
	require.NoError(t, catchup.EnsureSchedule(ctx, c, check, queues, time.Minute))
	require.Equal(t, []workflows.ScheduleDifference{{ID: catchup.ScheduleID(queues.Base), Differs: []string{"missing"}}}, found)
	_, err = catchUp.Describe(ctx)
	var notFound *serviceerror.NotFound
	require.ErrorAs(t, err, &notFound, "a check creates nothing")
	require.NoError(t, catchup.EnsureSchedule(ctx, c, schedules, queues, time.Minute))
	found = nil
	require.NoError(t, catchup.EnsureSchedule(ctx, c, check, queues, 0))
	require.Equal(t, []workflows.ScheduleDifference{{ID: catchup.ScheduleID(queues.Base), Differs: []string{"exists"}}}, found)
	_, err = catchUp.Describe(ctx)
	require.NoError(t, err, "a check deletes nothing")
	require.NoError(t, catchup.EnsureSchedule(ctx, c, schedules, queues, 0))
	require.Equal(t, 1, logs.Count("schedule deleted: the configuration has none"), "a deletion is logged")
	require.NoError(t, catchup.EnsureSchedule(ctx, c, schedules, queues, 0))
	require.Equal(t, 1, logs.Count("schedule deleted: the configuration has none"), "one already gone: nothing done, nothing said")

	// Arguments written under a key since retired don't decode: they are
	// not taken as the configured ones, and are written again.
	require.False(t, workflows.ScheduleSync{DataConverter: converter.GetDefaultDataConverter(), Log: schedules.Log}.
		SameArgsForTest(action.Args, []any{changed}), "encrypted arguments never read as plain JSON")
}

// The retention Schedule's arguments follow TEMPORAL_DURATION_WRITE_FORMAT:
// a Schedule written with nanoseconds (by default, as the release before
// payload.Duration wrote it) is rewritten once a worker writes text, so
// that its runs' inputs read "720h0m0s" in the UI, and rewritten with
// nanoseconds again once a worker writes those (before a rollback to that
// release, which can't read the text). A Schedule already in the form the
// worker writes is not written, though its arguments are encrypted under
// a fresh nonce each time.
func TestTheSchedulesArgumentsFollowTheDurationFormat(t *testing.T) {
	st := newScheduleTest(t, "pix-credit-durations")
	ctx, c, converters, logs, schedules, queues := st.ctx, st.c, st.converters, st.logs, st.schedules, st.queues
	handle := c.ScheduleClient().GetHandle(ctx, retention.ScheduleID(queues.Base))
	in := retention.Input{BatchSize: 1000, MaxBatches: 100, OutboxRetention: payload.Duration(168 * time.Hour), InboxRetention: payload.Duration(720 * time.Hour)}
	// stored is the Schedule's argument as the UI shows it, decrypted.
	stored := func() map[string]any {
		d, err := handle.Describe(ctx)
		require.NoError(t, err)
		var raw json.RawMessage
		require.NoError(t, converters.DataConverter.FromPayload(d.Schedule.Action.(*client.ScheduleWorkflowAction).Args[0].(*commonpb.Payload), &raw))
		var shown map[string]any
		require.NoError(t, json.Unmarshal(raw, &shown))
		return shown
	}
	ensure := func(f payload.DurationFormat) {
		previous := payload.WriteDurations(f)
		defer payload.WriteDurations(previous)
		require.NoError(t, retention.EnsureSchedule(ctx, c, schedules, queues, time.Hour, in))
	}

	ensure(payload.DurationsNanoseconds)
	require.Equal(t, 1, logs.Count("schedule created"))
	require.Equal(t, float64(720*time.Hour), stored()["InboxRetention"])
	ensure(payload.DurationsNanoseconds)
	require.Zero(t, logs.Count("schedule brought to the configuration"), "as configured, in the form written")

	ensure(payload.DurationsText)
	require.Equal(t, 1, logs.Count("schedule brought to the configuration"))
	require.Contains(t, logs.String(), `"changed":["arguments"]`)
	require.Equal(t, "720h0m0s", stored()["InboxRetention"])
	require.Equal(t, "168h0m0s", stored()["OutboxRetention"])
	ensure(payload.DurationsText)
	require.Equal(t, 1, logs.Count("schedule brought to the configuration"), "as configured, in the form written")

	ensure(payload.DurationsNanoseconds)
	require.Equal(t, 2, logs.Count("schedule brought to the configuration"))
	require.Equal(t, float64(720*time.Hour), stored()["InboxRetention"])
}
