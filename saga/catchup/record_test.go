package catchup_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/pixbank/pix/internal/tooling/temporaltest"
	"github.com/pixbank/pix/saga/catchup"
)

// recordCatchUpEnv names the folder TestRecordCatchUpHistories writes the
// catch-up's histories into, for TestReplayRecordedHistories: a scheduled
// run and an operator's, recorded on a dev server with the activities
// answered by the test (a replay never runs them), as the current code
// runs them (the *_whole.json histories were recorded so by the release
// that listed a window in one part). Unset, the test does nothing:
//
//	PIX_RECORD_CATCHUP_HISTORIES=$PWD/saga/catchup/testdata go test -run TestRecordCatchUpHistories ./saga/catchup
const recordCatchUpEnv = "PIX_RECORD_CATCHUP_HISTORIES"

// catchUpAnswers are the activities of the catch-up as a recording run
// sees them: a window of two parts, each listed and advanced.
type catchUpAnswers struct{ window catchup.Window }

func (a *catchUpAnswers) BeginCatchUp(context.Context) (catchup.Window, error) {
	return a.window, nil
}

func (a *catchUpAnswers) BeginManualCatchUp(_ context.Context, w catchup.Window) (catchup.Window, error) {
	w.CoveredFrom = a.window.CoveredFrom
	return w, nil
}

func (a *catchUpAnswers) ListPSPWindow(context.Context, catchup.Window) (catchup.Counts, error) {
	return catchup.Counts{Pages: 3, Listed: 5, New: 2, Duplicate: 3}, nil
}

// ListPSPPart lists the leading half of each window, and a window of a
// minute whole.
func (a *catchUpAnswers) ListPSPPart(_ context.Context, w catchup.Window) (catchup.Part, error) {
	through := w.End
	if w.End.Sub(w.Start) > time.Minute {
		through = w.Start.Add(w.End.Sub(w.Start) / 2).Truncate(time.Second)
	}
	return catchup.Part{Through: through, Counts: catchup.Counts{Pages: 2, Listed: 3, New: 1, Duplicate: 2}}, nil
}

func (a *catchUpAnswers) AdvanceCatchUp(context.Context, catchup.Window) (bool, error) {
	return true, nil
}

func TestRecordCatchUpHistories(t *testing.T) {
	dir := os.Getenv(recordCatchUpEnv)
	if dir == "" {
		t.Skip(recordCatchUpEnv + " unset: nothing to record")
	}
	srv := temporaltest.StartT(t)
	c := srv.Client(t)
	const queue = "pix-catchup-record"
	covered := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	answers := &catchUpAnswers{window: catchup.Window{Start: covered.Add(-10 * time.Minute), End: covered.Add(4 * time.Minute), CoveredFrom: &covered}}
	w := sdkworker.New(c, queue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(catchup.Workflow, workflow.RegisterOptions{Name: catchup.WorkflowName})
	w.RegisterActivityWithOptions(answers, activity.RegisterOptions{SkipInvalidStructFunctions: true})
	require.NoError(t, w.Start())
	defer w.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	record := func(name string, in catchup.Input) {
		id := fmt.Sprintf("record-%s-%d", name, time.Now().UnixNano())
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, catchup.WorkflowName, in)
		require.NoError(t, err)
		require.NoError(t, run.Get(ctx, nil))
		var events historypb.History
		it := c.GetWorkflowHistory(ctx, id, run.GetRunID(), false, 0)
		for it.HasNext() {
			e, err := it.Next()
			require.NoError(t, err)
			events.Events = append(events.Events, e)
		}
		b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(&events)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".json"), append(b, '\n'), 0o644))
	}
	manual := catchup.Window{Start: covered.Add(-48 * time.Hour), End: covered.Add(-24 * time.Hour)}
	for _, r := range []struct {
		name string
		in   catchup.Input
	}{{"catchup_scheduled_parts", catchup.Input{}}, {"catchup_manual_parts", catchup.Input{Window: &manual}}} {
		record(r.name, r.in)
	}
}
