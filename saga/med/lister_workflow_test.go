package med_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/saga/covered"
	"github.com/pixbank/pix/saga/med"
)

// listerRun runs the lister's workflow on the test clock over the parts
// throughs (each part's end, in turn; failing once first with failFirst),
// advances answering moved; it returns the result, the parts' windows and
// the advances asked.
func listerRun(t *testing.T, w covered.Window, throughs []time.Time, moved func(covered.Window) bool, failFirst bool) (med.ListerResult, []covered.Window, []covered.Window, time.Duration) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	l := &med.Lister{}
	env.RegisterWorkflowWithOptions(med.ListerWorkflow, workflow.RegisterOptions{Name: med.ListerWorkflowName})
	env.RegisterActivity(l)
	env.OnActivity(l.BeginDICTList, mock.Anything).Return(w, nil)
	var parts, advances []covered.Window
	env.OnActivity(l.ListDICTPart, mock.Anything, mock.Anything).Return(func(_ context.Context, w covered.Window) (med.ListPart, error) {
		if failFirst {
			failFirst = false
			return med.ListPart{}, errors.New("dict listInfractionReport: outcome unknown")
		}
		parts = append(parts, w)
		return med.ListPart{Through: throughs[len(parts)-1], Reports: 1, Refunds: 1}, nil
	})
	env.OnActivity(l.AdvanceDICTList, mock.Anything, mock.Anything).Return(func(_ context.Context, w covered.Window) (bool, error) {
		advances = append(advances, w)
		return moved(w), nil
	})
	start := env.Now()
	env.ExecuteWorkflow(med.ListerWorkflowName, med.ListerInput{})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var out med.ListerResult
	require.NoError(t, env.GetWorkflowResult(&out))
	return out, parts, advances, env.Now().Sub(start)
}

// A run lists its window part by part, each part from the last one's end;
// each part's end is recorded from the covered end the run began from or
// last recorded (a part within the overlap records nothing); a part whose
// list failed is retried on the test clock, nothing recorded meanwhile.
func TestTheListerWorkflowCoversItsWindowPartByPart(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	from := t0
	w := covered.Window{Start: t0.Add(-2 * time.Minute), End: t0.Add(time.Hour), CoveredFrom: &from}
	throughs := []time.Time{t0.Add(-time.Minute), t0.Add(20 * time.Minute), t0.Add(40 * time.Minute), t0.Add(time.Hour)}
	out, parts, advances, took := listerRun(t, w, throughs, func(covered.Window) bool { return true }, true)
	require.GreaterOrEqual(t, took, time.Second, "the failed part was retried after its backoff, on the test clock")
	require.Len(t, parts, 4)
	require.True(t, parts[0].Start.Equal(w.Start))
	for i := 1; i < len(parts); i++ {
		require.True(t, parts[i].Start.Equal(throughs[i-1]), "part %d starts where the last ended", i)
	}
	require.Len(t, advances, 3, "the part within the overlap records nothing")
	prev := t0
	for i, a := range advances {
		require.True(t, a.CoveredFrom.Equal(prev), "advance %d only from the end last recorded", i)
		require.True(t, a.End.Equal(throughs[i+1]))
		prev = a.End
	}
	require.Equal(t, 4, out.Parts)
	require.Equal(t, 4, out.Reports)
	require.True(t, out.CoveredUntil.Equal(t0.Add(time.Hour)))
}

// Another run moved the covered end meanwhile: this run's advance changes
// nothing, and it ends there, listing no more (the next run goes on from
// the covered end).
func TestTheListerWorkflowEndsWhenAnotherRunCovered(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	w := covered.Window{Start: t0.Add(-24 * time.Hour), End: t0}
	throughs := []time.Time{t0.Add(-12 * time.Hour), t0}
	out, parts, advances, _ := listerRun(t, w, throughs, func(covered.Window) bool { return false }, false)
	require.Len(t, parts, 1)
	require.Len(t, advances, 1)
	require.Nil(t, advances[0].CoveredFrom, "the first window's advance starts the covered end")
	require.Nil(t, out.CoveredUntil)
}
