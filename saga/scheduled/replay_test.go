package scheduled_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/saga/sagatest"
	"github.com/pixbank/pix/saga/scheduled"
)

// recorded is the workflow the recorded histories are of.
var recorded = sagatest.Workflow{Func: scheduled.Workflow, Name: scheduled.WorkflowName}

// The runs of the saga recorded on a Temporal server (testdata) replay on
// the workflow as it is now: a change that would break the runs open in
// production (30 days asleep) fails here. They replay whichever form the
// worker writes durations in (TEMPORAL_DURATION_WRITE_FORMAT): the saga's
// payloads hold none (saga/registry's TestNoPayloadHoldsATimeDuration), so
// a run asleep across the release that turns text on goes on as it was.
func TestReplayRecordedHistories(t *testing.T) {
	sagatest.ReplayRecordedHistories(t, recorded, 3, "executed, cancelled while asleep, failed")
}

// stubActivities stand for the saga's activities on the recording
// server: the workflow's history records their names and answers only.
type stubActivities struct {
	rows sagatest.Rows[scheduled.Scheduled]
}

func (s *stubActivities) set(r scheduled.Scheduled) { s.rows.Set(r.ID.String(), r) }

func (s *stubActivities) LoadScheduled(_ context.Context, id string) (scheduled.Scheduled, error) {
	return s.rows.Get(id), nil
}

func (s *stubActivities) RunScheduled(_ context.Context, id string) (scheduled.Scheduled, error) {
	r := s.rows.Get(id)
	if r.Status == scheduled.StatusScheduled {
		r.Status = scheduled.StatusExecuted
		if r.AmountCents > 1_000 {
			reason := "insufficient_funds"
			r.Status, r.FailureReason = scheduled.StatusFailed, &reason
		} else {
			transfer, e2e := uuid.New(), "E1234567820261202130000000000001"
			r.TransferID, r.EndToEndID = &transfer, &e2e
		}
	}
	return r, nil
}

// TestRecordHistories records the saga's histories on a Temporal dev
// server, when PIX_RECORD_HISTORIES (sagatest.RecordEnv) names a folder: a
// run that sleeps and executes, one woken by a cancel, one that fails.
//
//	PIX_RECORD_HISTORIES=$PWD/saga/scheduled/testdata go test ./saga/scheduled -run TestRecordHistories
func TestRecordHistories(t *testing.T) {
	stubs := &stubActivities{}
	rec := sagatest.NewRecorder(t, sagatest.RecordEnv, "pix-scheduled-record", recorded, stubs)
	ctx := context.Background()
	run := func(name string, amount int64, cancel bool) {
		id := uuid.New()
		row := scheduled.Scheduled{ID: id, AccountID: "acc-1", AmountCents: amount, PixKey: "joao@example.com",
			ScheduledFor: "2026-12-02", RunAt: time.Now().Add(2 * time.Second), Status: scheduled.StatusScheduled}
		stubs.set(row)
		wf := rec.Start(ctx, scheduled.WorkflowID(id.String()), scheduled.Input{ID: id.String()})
		if cancel {
			time.Sleep(500 * time.Millisecond)
			row.Status = scheduled.StatusCancelled
			stubs.set(row)
			require.NoError(t, rec.Client.SignalWorkflow(ctx, wf.GetID(), "", scheduled.CancelSignal, nil))
		}
		var out scheduled.Scheduled
		rec.Save(ctx, name, wf, &out)
		t.Logf("%s: %s, recorded", name, out.Status)
	}
	run("scheduled_executed", 100, false)
	run("scheduled_cancelled_asleep", 100, true)
	run("scheduled_failed", 5_000, false)
}
