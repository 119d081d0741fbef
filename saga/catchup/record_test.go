package catchup_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pixbank/pix/saga/catchup"
	"github.com/pixbank/pix/saga/sagatest"
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
	covered := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	answers := &catchUpAnswers{window: catchup.Window{Start: covered.Add(-10 * time.Minute), End: covered.Add(4 * time.Minute), CoveredFrom: &covered}}
	rec := sagatest.NewRecorder(t, recordCatchUpEnv, "pix-catchup-record",
		sagatest.Workflow{Func: catchup.Workflow, Name: catchup.WorkflowName}, answers)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	record := func(name string, in catchup.Input) {
		run := rec.Start(ctx, fmt.Sprintf("record-%s-%d", name, time.Now().UnixNano()), in)
		rec.Save(ctx, name, run, nil)
	}
	manual := catchup.Window{Start: covered.Add(-48 * time.Hour), End: covered.Add(-24 * time.Hour)}
	for _, r := range []struct {
		name string
		in   catchup.Input
	}{{"catchup_scheduled_parts", catchup.Input{}}, {"catchup_manual_parts", catchup.Input{Window: &manual}}} {
		record(r.name, r.in)
	}
}
