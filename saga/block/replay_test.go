package block_test

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
	"github.com/pixbank/pix/saga/block"
)

// recordEnv names the folder TestRecordHistories writes the histories
// into (testdata, to record them anew after a deliberate change of the
// workflow's history: a new version of it):
//
//	PIX_RECORD_HISTORIES=$PWD/saga/block/testdata go test ./saga/block -run TestRecordHistories
const recordEnv = "PIX_RECORD_HISTORIES"

// The runs of the saga recorded on a Temporal server (testdata) replay on
// the workflow as it is now: a change that would break the runs open in
// production (72 hours asleep, then waiting on a devolução) fails here,
// whichever form the worker writes durations in.
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	require.NoError(t, err)
	require.Len(t, files, 3, "expired, released while asleep, returned")
	for _, f := range []payload.DurationFormat{payload.DurationsNanoseconds, payload.DurationsText} {
		previous := payload.WriteDurations(f)
		for _, file := range files {
			t.Run(string(f)+"/"+filepath.Base(file), func(t *testing.T) {
				r := worker.NewWorkflowReplayer()
				r.RegisterWorkflowWithOptions(block.Workflow, workflow.RegisterOptions{Name: block.WorkflowName})
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
	rows map[string]block.Block
}

func (s *stubActivities) set(b block.Block) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows[b.ID.String()] = b
}

func (s *stubActivities) LoadBlock(_ context.Context, id string) (block.Block, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rows[id], nil
}

func (s *stubActivities) ExpireBlock(_ context.Context, id string) (block.Block, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.rows[id]
	if b.Status == block.StatusActive {
		b = ended(b, block.StatusReleased, block.CauseExpired)
		s.rows[id] = b
	}
	return b, nil
}

func (s *stubActivities) SettleBlock(_ context.Context, id string) (block.Block, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.rows[id]
	if b.Status == block.StatusReturning {
		b = ended(b, block.StatusReturned, block.CauseReturned)
		s.rows[id] = b
	}
	return b, nil
}

// TestRecordHistories records the saga's histories on a Temporal dev
// server, when PIX_RECORD_HISTORIES names a folder: a run that sleeps and
// expires, one woken by a release, one woken by a return that waits for
// its devolução.
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
	const queue = "pix-block-record"
	stubs := &stubActivities{rows: map[string]block.Block{}}
	w := worker.New(c, queue, worker.Options{})
	w.RegisterWorkflowWithOptions(block.Workflow, workflow.RegisterOptions{Name: block.WorkflowName})
	w.RegisterActivity(stubs)
	require.NoError(t, w.Start())
	defer w.Stop()

	run := func(name string, change func(block.Block) block.Block) {
		id := uuid.New()
		b := blockRow(id, block.StatusActive)
		b.CreatedAt, b.ExpiresAt = time.Now(), time.Now().Add(2*time.Second)
		if change != nil {
			b.ExpiresAt = time.Now().Add(time.Hour)
		}
		stubs.set(b)
		wf, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: block.WorkflowID(id.String()), TaskQueue: queue},
			block.WorkflowName, block.Input{ID: id.String()})
		require.NoError(t, err)
		if change != nil {
			time.Sleep(500 * time.Millisecond)
			stubs.set(change(b))
			require.NoError(t, c.SignalWorkflow(ctx, wf.GetID(), "", block.ChangedSignal, nil))
		}
		var out block.Block
		require.NoError(t, wf.Get(ctx, &out))
		var events []*historypb.HistoryEvent
		it := c.GetWorkflowHistory(ctx, wf.GetID(), wf.GetRunID(), false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			e, err := it.Next()
			require.NoError(t, err)
			events = append(events, e)
		}
		b2, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(&historypb.History{Events: events})
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".json"), append(b2, '\n'), 0o644))
		t.Logf("%s: %s, recorded", name, out.Status)
	}
	run("block_expired", nil)
	run("block_released_asleep", func(b block.Block) block.Block { return ended(b, block.StatusReleased, block.CauseOperator) })
	run("block_returned", returning)
}
