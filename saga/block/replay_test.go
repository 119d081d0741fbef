package block_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/saga/block"
	"github.com/pixbank/pix/saga/sagatest"
)

// recorded is the workflow the recorded histories are of.
var recorded = sagatest.Workflow{Func: block.Workflow, Name: block.WorkflowName}

// The runs of the saga recorded on a Temporal server (testdata) replay on
// the workflow as it is now: a change that would break the runs open in
// production (72 hours asleep, then waiting on a devolução) fails here,
// whichever form the worker writes durations in.
func TestReplayRecordedHistories(t *testing.T) {
	sagatest.ReplayRecordedHistories(t, recorded, 3, "expired, released while asleep, returned")
}

// stubActivities stand for the saga's activities on the recording
// server: the workflow's history records their names and answers only.
type stubActivities struct{ rows sagatest.Rows[block.Block] }

func (s *stubActivities) set(b block.Block) { s.rows.Set(b.ID.String(), b) }

func (s *stubActivities) LoadBlock(_ context.Context, id string) (block.Block, error) {
	return s.rows.Get(id), nil
}

func (s *stubActivities) ExpireBlock(_ context.Context, id string) (block.Block, error) {
	return s.end(id, block.StatusActive, block.StatusReleased, block.CauseExpired), nil
}

func (s *stubActivities) SettleBlock(_ context.Context, id string) (block.Block, error) {
	return s.end(id, block.StatusReturning, block.StatusReturned, block.CauseReturned), nil
}

// end ends the block id as status for cause if it is still in status from,
// as the store's guarded updates do; it is the block as it is then.
func (s *stubActivities) end(id, from, status, cause string) block.Block {
	return s.rows.Change(id, func(b block.Block) block.Block {
		if b.Status == from {
			b = ended(b, status, cause)
		}
		return b
	})
}

// TestRecordHistories records the saga's histories on a Temporal dev
// server, when PIX_RECORD_HISTORIES (sagatest.RecordEnv) names a folder: a
// run that sleeps and expires, one woken by a release, one woken by a
// return that waits for its devolução.
//
//	PIX_RECORD_HISTORIES=$PWD/saga/block/testdata go test ./saga/block -run TestRecordHistories
func TestRecordHistories(t *testing.T) {
	stubs := &stubActivities{}
	rec := sagatest.NewRecorder(t, sagatest.RecordEnv, "pix-block-record", recorded, stubs)
	ctx := context.Background()
	run := func(name string, change func(block.Block) block.Block) {
		id := uuid.New()
		b := blockRow(id, block.StatusActive)
		b.CreatedAt, b.ExpiresAt = time.Now(), time.Now().Add(2*time.Second)
		if change != nil {
			b.ExpiresAt = time.Now().Add(time.Hour)
		}
		stubs.set(b)
		wf := rec.Start(ctx, block.WorkflowID(id.String()), block.Input{ID: id.String()})
		if change != nil {
			time.Sleep(500 * time.Millisecond)
			stubs.set(change(b))
			require.NoError(t, rec.Client.SignalWorkflow(ctx, wf.GetID(), "", block.ChangedSignal, nil))
		}
		var out block.Block
		rec.Save(ctx, name, wf, &out)
		t.Logf("%s: %s, recorded", name, out.Status)
	}
	run("block_expired", nil)
	run("block_released_asleep", func(b block.Block) block.Block { return ended(b, block.StatusReleased, block.CauseOperator) })
	run("block_returned", returning)
}
