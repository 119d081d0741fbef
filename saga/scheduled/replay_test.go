package scheduled_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/pixbank/pix/internal/payload"
	"github.com/pixbank/pix/internal/tooling/temporaltest"
	"github.com/pixbank/pix/saga/scheduled"
)

// recordEnv names the folder TestRecordHistories writes the histories
// into (testdata, to record them anew after a deliberate change of the
// workflow's history: a new version of it):
//
//	PIX_RECORD_HISTORIES=$PWD/saga/scheduled/testdata go test ./saga/scheduled -run TestRecordHistories
const recordEnv = "PIX_RECORD_HISTORIES"

// The runs of the saga recorded on a Temporal server (testdata) replay on
// the workflow as it is now: a change that would break the runs open in
// production (30 days asleep) fails here. They replay whichever form the
// worker writes durations in (TEMPORAL_DURATION_WRITE_FORMAT): the saga's
// payloads hold none (saga/registry's TestNoPayloadHoldsATimeDuration), so
// a run asleep across the release that turns text on goes on as it was.
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	require.NoError(t, err)
	require.Len(t, files, 3, "executed, cancelled while asleep, failed")
	for _, f := range []payload.DurationFormat{payload.DurationsNanoseconds, payload.DurationsText} {
		previous := payload.WriteDurations(f)
		for _, file := range files {
			t.Run(string(f)+"/"+filepath.Base(file), func(t *testing.T) {
				r := worker.NewWorkflowReplayer()
				r.RegisterWorkflowWithOptions(scheduled.Workflow, workflow.RegisterOptions{Name: scheduled.WorkflowName})
				require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, file))
			})
		}
		payload.WriteDurations(previous)
	}
}

// stubActivities stand for the saga's activities on the recording
// server: the workflow's history records their names and answers only.
type stubActivities struct {
	mu   sync.Mutex
	rows map[string]scheduled.Scheduled
}

func (s *stubActivities) set(r scheduled.Scheduled) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows[r.ID.String()] = r
}

func (s *stubActivities) LoadScheduled(_ context.Context, id string) (scheduled.Scheduled, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rows[id], nil
}

func (s *stubActivities) RunScheduled(_ context.Context, id string) (scheduled.Scheduled, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rows[id]
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
// server, when PIX_RECORD_HISTORIES names a folder: a run that sleeps and
// executes, one woken by a cancel, one that fails.
func TestRecordHistories(t *testing.T) {
	dir := os.Getenv(recordEnv)
	if dir == "" {
		t.Skip(recordEnv + " unset: nothing to record")
	}
	ctx := context.Background()
	srv := temporaltest.StartT(t)
	c, err := client.Dial(client.Options{HostPort: srv.Address})
	require.NoError(t, err)
	defer c.Close()
	const queue = "pix-scheduled-record"
	stubs := &stubActivities{rows: map[string]scheduled.Scheduled{}}
	w := worker.New(c, queue, worker.Options{})
	w.RegisterWorkflowWithOptions(scheduled.Workflow, workflow.RegisterOptions{Name: scheduled.WorkflowName})
	w.RegisterActivity(stubs)
	require.NoError(t, w.Start())
	defer w.Stop()

	run := func(name string, amount int64, cancel bool) {
		id := uuid.New()
		row := scheduled.Scheduled{ID: id, AccountID: "acc-1", AmountCents: amount, PixKey: "joao@example.com",
			ScheduledFor: "2026-12-02", RunAt: time.Now().Add(2 * time.Second), Status: scheduled.StatusScheduled}
		stubs.set(row)
		wf, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: scheduled.WorkflowID(id.String()), TaskQueue: queue},
			scheduled.WorkflowName, scheduled.Input{ID: id.String()})
		require.NoError(t, err)
		if cancel {
			time.Sleep(500 * time.Millisecond)
			row.Status = scheduled.StatusCancelled
			stubs.set(row)
			require.NoError(t, c.SignalWorkflow(ctx, wf.GetID(), "", scheduled.CancelSignal, nil))
		}
		var out scheduled.Scheduled
		require.NoError(t, wf.Get(ctx, &out))
		var events []*historypb.HistoryEvent
		it := c.GetWorkflowHistory(ctx, wf.GetID(), wf.GetRunID(), false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			e, err := it.Next()
			require.NoError(t, err)
			events = append(events, e)
		}
		b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(&historypb.History{Events: events})
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".json"), append(b, '\n'), 0o644))
		t.Logf("%s: %s, recorded", name, out.Status)
	}
	run("scheduled_executed", 100, false)
	run("scheduled_cancelled_asleep", 100, true)
	run("scheduled_failed", 5_000, false)
}
