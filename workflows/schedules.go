package workflows

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
)

// ScheduleConfig is what the configuration says one of the service's
// Temporal Schedules is: every interval, never overlapping, it starts
// Workflow with Args on TaskQueue, under the workflow ID ID.
type ScheduleConfig struct {
	ID        string
	TaskQueue string
	Every     time.Duration
	Workflow  string
	Args      []any
}

// ScheduleSync brings the service's Schedules to the configuration (a
// worker's start, its build's promotion: worker.KeepSchedules), or, with
// Differs set, only tells how they differ from it.
type ScheduleSync struct {
	// DataConverter is the one the Temporal client writes with: a
	// Schedule's arguments are read back with it to be compared (with
	// TEMPORAL_CODEC_KEYS they are encrypted, under a fresh nonce each
	// time, so the stored bytes can't be compared).
	DataConverter converter.DataConverter
	// Log gets a line for every Schedule created, changed or deleted.
	Log *slog.Logger
	// Differs, when set, makes the sync read-only: nothing is created,
	// changed or deleted, and each Schedule that differs from the
	// configuration is handed to Differs instead. The current build's
	// workers check so between their writes, which come only at their
	// start and their build's promotion: two pools of one build with
	// other settings would otherwise write theirs in turn.
	Differs func(ScheduleDifference)
}

// ScheduleDifference is how one of the service's Schedules differs from
// the configuration: the fields a sync would change ("interval",
// "overlap", "action", "workflow", "workflow_id", "task_queue",
// "arguments"), "missing" (one the configuration has, not created), or
// "exists" (one the configuration has none of, as PSP_CATCHUP_INTERVAL=0,
// not deleted).
type ScheduleDifference struct {
	ID      string   `json:"schedule_id"`
	Differs []string `json:"differs"`
}

// Ensure creates the Schedule want describes, or brings an existing one to
// it: its interval, its action (workflow, arguments, task queue, workflow
// ID) and its overlap policy. The configuration is the source of truth: a
// retention period (INBOX_RETENTION) is the data-retention policy, and a
// Schedule that kept the values of its first creation would silently
// apply an old one. What an operator decides at run time is kept: a
// paused Schedule stays paused, with its note. A Schedule already as
// configured is not written (its update time says when it last changed).
// Every change is logged with the fields it changed. Read-only (Differs),
// it only reads the Schedule.
func (s ScheduleSync) Ensure(ctx context.Context, c client.Client, want ScheduleConfig) error {
	if s.Differs != nil {
		d, err := c.ScheduleClient().GetHandle(ctx, want.ID).Describe(ctx)
		var notFound *serviceerror.NotFound
		switch {
		case errors.As(err, &notFound):
			s.Differs(ScheduleDifference{ID: want.ID, Differs: []string{"missing"}})
		case err != nil:
			return fmt.Errorf("describe schedule %s: %w", want.ID, err)
		default:
			if changed := s.differences(d.Schedule, want); len(changed) > 0 {
				s.Differs(ScheduleDifference{ID: want.ID, Differs: changed})
			}
		}
		return nil
	}
	_, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:      want.ID,
		Spec:    want.spec(),
		Overlap: enums.SCHEDULE_OVERLAP_POLICY_SKIP,
		Action:  want.action(),
	})
	switch {
	case err == nil:
		s.Log.Info("schedule created", "schedule_id", want.ID, "every", want.Every.String(), "workflow", want.Workflow, "task_queue", want.TaskQueue)
		return nil
	case !errors.Is(err, temporal.ErrScheduleAlreadyRunning):
		return fmt.Errorf("create schedule %s: %w", want.ID, err)
	}
	var changed []string
	err = c.ScheduleClient().GetHandle(ctx, want.ID).Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			schedule := in.Description.Schedule
			changed = s.differences(schedule, want)
			if len(changed) == 0 {
				return nil, temporal.ErrSkipScheduleUpdate
			}
			spec := want.spec()
			schedule.Spec = &spec
			schedule.Action = want.action()
			if schedule.Policy == nil {
				schedule.Policy = &client.SchedulePolicies{}
			}
			schedule.Policy.Overlap = enums.SCHEDULE_OVERLAP_POLICY_SKIP
			// schedule.State (paused, note) is sent back as it was read.
			return &client.ScheduleUpdate{Schedule: &schedule}, nil
		},
	})
	if err != nil {
		return fmt.Errorf("bring schedule %s to the configuration: %w", want.ID, err)
	}
	if len(changed) > 0 {
		paused := false
		if d, err := c.ScheduleClient().GetHandle(ctx, want.ID).Describe(ctx); err == nil {
			paused = d.Schedule.State.Paused
		}
		s.Log.Info("schedule brought to the configuration", "schedule_id", want.ID, "changed", changed,
			"every", want.Every.String(), "task_queue", want.TaskQueue, "paused", paused)
	}
	return nil
}

// Remove deletes the Schedule id, one the configuration has none of (why
// says which setting: "PSP_CATCHUP_INTERVAL=0"); a Schedule already gone
// is not an error. The deletion is logged. Read-only (Differs), it only
// reads the Schedule.
func (s ScheduleSync) Remove(ctx context.Context, c client.Client, id, why string) error {
	h := c.ScheduleClient().GetHandle(ctx, id)
	var err error
	if s.Differs != nil {
		_, err = h.Describe(ctx)
	} else {
		err = h.Delete(ctx)
	}
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return nil
	case err != nil && s.Differs != nil:
		return fmt.Errorf("describe schedule %s: %w", id, err)
	case err != nil:
		return fmt.Errorf("delete schedule %s (%s): %w", id, why, err)
	case s.Differs != nil:
		s.Differs(ScheduleDifference{ID: id, Differs: []string{"exists"}})
	default:
		s.Log.Info("schedule deleted: the configuration has none", "schedule_id", id, "because", why)
	}
	return nil
}

func (want ScheduleConfig) spec() client.ScheduleSpec {
	return client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: want.Every}}}
}

func (want ScheduleConfig) action() *client.ScheduleWorkflowAction {
	return &client.ScheduleWorkflowAction{ID: want.ID, Workflow: want.Workflow, Args: want.Args, TaskQueue: want.TaskQueue}
}

// differences names what of schedule differs from want: nothing when it is
// as configured.
func (s ScheduleSync) differences(schedule client.Schedule, want ScheduleConfig) []string {
	var changed []string
	if spec := schedule.Spec; spec == nil || len(spec.Calendars) > 0 || len(spec.CronExpressions) > 0 || len(spec.Skip) > 0 ||
		!slices.Equal(spec.Intervals, want.spec().Intervals) {
		changed = append(changed, "interval")
	}
	if schedule.Policy == nil || schedule.Policy.Overlap != enums.SCHEDULE_OVERLAP_POLICY_SKIP {
		changed = append(changed, "overlap")
	}
	action, ok := schedule.Action.(*client.ScheduleWorkflowAction)
	if !ok {
		return append(changed, "action")
	}
	if action.Workflow != want.Workflow {
		changed = append(changed, "workflow")
	}
	if action.ID != want.ID {
		changed = append(changed, "workflow_id")
	}
	if action.TaskQueue != want.TaskQueue {
		changed = append(changed, "task_queue")
	}
	if !s.sameArgs(action.Args, want.Args) {
		changed = append(changed, "arguments")
	}
	return changed
}

// sameArgs tells whether the arguments a Schedule holds (payloads, as a
// description gives them) decode to the configured ones, written in the
// form this worker writes them: a retention period stored as integer
// nanoseconds by a release before payload.Duration decodes to the same
// value, but a worker writing text (TEMPORAL_DURATION_WRITE_FORMAT) brings
// it to "720h0m0s", and one writing nanoseconds brings a text one back
// (before a rollback to such a release, which can't read it). One that no
// longer decodes (written under a key since retired) is not the same.
func (s ScheduleSync) sameArgs(stored, want []any) bool {
	if len(stored) != len(want) {
		return false
	}
	for i, arg := range stored {
		p, ok := arg.(*commonpb.Payload)
		if !ok {
			return false
		}
		got := reflect.New(reflect.TypeOf(want[i]))
		if err := s.DataConverter.FromPayload(p, got.Interface()); err != nil {
			return false
		}
		if !reflect.DeepEqual(got.Elem().Interface(), want[i]) {
			return false
		}
		if !s.sameForm(p, want[i]) {
			return false
		}
	}
	return true
}

// sameForm tells whether the payload stored holds the JSON this worker's
// data converter writes for want (compared decoded: with
// TEMPORAL_CODEC_KEYS the stored bytes are encrypted under a fresh nonce
// each time).
func (s ScheduleSync) sameForm(stored *commonpb.Payload, want any) bool {
	written, err := s.DataConverter.ToPayload(want)
	if err != nil {
		return false
	}
	var got, wrote json.RawMessage
	if s.DataConverter.FromPayload(stored, &got) != nil || s.DataConverter.FromPayload(written, &wrote) != nil {
		return false
	}
	return bytes.Equal(got, wrote)
}
