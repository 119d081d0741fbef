package catchup_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/saga/catchup"
)

func newCatchUpEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(catchup.Workflow, workflow.RegisterOptions{Name: catchup.WorkflowName})
	env.RegisterActivity(&catchup.Activities{})
	t.Cleanup(func() { env.AssertExpectations(t) })
	return env
}

// forbidAdvance fails the test if the run calls AdvanceCatchUp.
func forbidAdvance(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
	env.OnActivity(catchUp.AdvanceCatchUp, mock.Anything, mock.Anything).Return(func(context.Context, catchup.Window) (bool, error) {
		t.Error("AdvanceCatchUp ran: the covered window moved")
		return true, nil
	}).Maybe()
}

var (
	coveredEnd = time.Date(2026, 12, 3, 11, 59, 0, 0, time.UTC)
	window     = catchup.Window{Start: coveredEnd.Add(-10 * time.Minute), End: coveredEnd.Add(time.Minute), CoveredFrom: &coveredEnd}
)

// covering is w's leading part up to through, fenced by from: what the run
// asks AdvanceCatchUp to record.
func covering(w catchup.Window, from *time.Time, through time.Time) catchup.Window {
	w.CoveredFrom, w.End = from, through
	return w
}

// rest is w from start on, fenced by from.
func rest(w catchup.Window, from *time.Time, start time.Time) catchup.Window {
	w.CoveredFrom, w.Start = from, start
	return w
}

// A scheduled run lists the window its Begin decided, in one part when it
// fits, and then records its end.
func TestPSPCatchUpScheduledRunAdvancesAfterListing(t *testing.T) {
	env := newCatchUpEnv(t)
	counts := catchup.Counts{Pages: 2, Listed: 3, New: 1, Duplicate: 2}
	env.OnActivity(catchUp.BeginCatchUp, mock.Anything).Return(window, nil).Once()
	env.OnActivity(catchUp.ListPSPPart, mock.Anything, window).Return(catchup.Part{Through: window.End, Counts: counts}, nil).Once()
	env.OnActivity(catchUp.AdvanceCatchUp, mock.Anything, window).Return(true, nil).Once()

	env.ExecuteWorkflow(catchup.WorkflowName, catchup.Input{})

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var out catchup.Result
	require.NoError(t, env.GetWorkflowResult(&out))
	require.Equal(t, counts, out.Counts)
	require.True(t, out.Advanced)
	require.Equal(t, 1, out.Parts)
	require.True(t, out.CoveredUntil.Equal(window.End))
}

// A window larger than one listing takes is listed part by part, and the
// covered end advances after each part, from the end the part before
// recorded: what a run covered stays covered whatever happens next.
func TestPSPCatchUpListsALargeWindowPartByPart(t *testing.T) {
	env := newCatchUpEnv(t)
	first, second := coveredEnd.Add(20*time.Second), coveredEnd.Add(40*time.Second)
	part := catchup.Counts{Pages: 1000, Listed: 2000, New: 2000}
	env.OnActivity(catchUp.BeginCatchUp, mock.Anything).Return(window, nil).Once()
	env.OnActivity(catchUp.ListPSPPart, mock.Anything, window).Return(catchup.Part{Through: first, Counts: part}, nil).Once()
	env.OnActivity(catchUp.AdvanceCatchUp, mock.Anything, covering(window, &coveredEnd, first)).Return(true, nil).Once()
	env.OnActivity(catchUp.ListPSPPart, mock.Anything, rest(window, &first, first)).Return(catchup.Part{Through: second, Counts: part}, nil).Once()
	env.OnActivity(catchUp.AdvanceCatchUp, mock.Anything, covering(rest(window, &first, first), &first, second)).Return(true, nil).Once()
	env.OnActivity(catchUp.ListPSPPart, mock.Anything, rest(window, &second, second)).Return(catchup.Part{Through: window.End, Counts: part}, nil).Once()
	env.OnActivity(catchUp.AdvanceCatchUp, mock.Anything, rest(window, &second, second)).Return(true, nil).Once()

	env.ExecuteWorkflow(catchup.WorkflowName, catchup.Input{})

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var out catchup.Result
	require.NoError(t, env.GetWorkflowResult(&out))
	require.Equal(t, 3, out.Parts)
	require.Equal(t, 6000, out.Counts.New)
	require.True(t, out.CoveredUntil.Equal(window.End))
	require.Equal(t, window, out.Window, "the window the run began with")
}

// A part that ends before the covered end (the run lists the overlap
// first) records nothing: the covered end never moves back, and the run
// goes on to the next part.
func TestPSPCatchUpPartWithinTheOverlapRecordsNothing(t *testing.T) {
	env := newCatchUpEnv(t)
	early := window.Start.Add(time.Minute) // before coveredEnd
	env.OnActivity(catchUp.BeginCatchUp, mock.Anything).Return(window, nil).Once()
	env.OnActivity(catchUp.ListPSPPart, mock.Anything, window).Return(catchup.Part{Through: early}, nil).Once()
	env.OnActivity(catchUp.ListPSPPart, mock.Anything, rest(window, &coveredEnd, early)).Return(catchup.Part{Through: window.End}, nil).Once()
	env.OnActivity(catchUp.AdvanceCatchUp, mock.Anything, rest(window, &coveredEnd, early)).Return(true, nil).Once()

	env.ExecuteWorkflow(catchup.WorkflowName, catchup.Input{})

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var out catchup.Result
	require.NoError(t, env.GetWorkflowResult(&out))
	require.True(t, out.Advanced)
	require.Equal(t, 2, out.Parts)
	require.True(t, out.CoveredUntil.Equal(window.End))
}

// A run stops at the first part whose advance finds the covered end moved
// by another run (a late run changes nothing): the next run goes on from
// where that one left it.
func TestPSPCatchUpStopsWhenAnotherRunCovered(t *testing.T) {
	env := newCatchUpEnv(t)
	first := coveredEnd.Add(20 * time.Second)
	env.OnActivity(catchUp.BeginCatchUp, mock.Anything).Return(window, nil).Once()
	env.OnActivity(catchUp.ListPSPPart, mock.Anything, window).Return(catchup.Part{Through: first, Counts: catchup.Counts{Pages: 1}}, nil).Once()
	env.OnActivity(catchUp.AdvanceCatchUp, mock.Anything, covering(window, &coveredEnd, first)).Return(false, nil).Once()

	env.ExecuteWorkflow(catchup.WorkflowName, catchup.Input{})

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var out catchup.Result
	require.NoError(t, env.GetWorkflowResult(&out))
	require.False(t, out.Advanced)
	require.Equal(t, 1, out.Parts)
}

// A listing that fails for good records nothing of its part: the next run
// lists on from the covered end.
func TestPSPCatchUpFailedListingAdvancesNothing(t *testing.T) {
	env := newCatchUpEnv(t)
	env.OnActivity(catchUp.BeginCatchUp, mock.Anything).Return(window, nil).Once()
	env.OnActivity(catchUp.ListPSPPart, mock.Anything, window).
		Return(catchup.Part{}, temporal.NewNonRetryableApplicationError("psp refused", activities.ErrTypePSPRequestRefused, nil)).Once()

	forbidAdvance(t, env)

	env.ExecuteWorkflow(catchup.WorkflowName, catchup.Input{})

	require.True(t, env.IsWorkflowCompleted())
	require.Error(t, env.GetWorkflowError())
}

// A listing that fails a few times is retried by Temporal, and the run
// still records its window once it succeeds.
func TestPSPCatchUpRetriesTheListing(t *testing.T) {
	env := newCatchUpEnv(t)
	env.OnActivity(catchUp.BeginCatchUp, mock.Anything).Return(window, nil).Once()
	env.OnActivity(catchUp.ListPSPPart, mock.Anything, window).
		Return(catchup.Part{}, temporal.NewApplicationError("psp down", activities.ErrTypePSPUnavailable)).Twice()
	env.OnActivity(catchUp.ListPSPPart, mock.Anything, window).Return(catchup.Part{Through: window.End, Counts: catchup.Counts{Pages: 1}}, nil).Once()
	env.OnActivity(catchUp.AdvanceCatchUp, mock.Anything, window).Return(true, nil).Once()

	env.ExecuteWorkflow(catchup.WorkflowName, catchup.Input{})

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
}

// An operator's window that starts after the covered end is listed as
// asked, and moves no covered window.
func TestPSPCatchUpOperatorWindowAfterTheCoveredEndMovesNothing(t *testing.T) {
	env := newCatchUpEnv(t)
	asked := catchup.Window{Start: coveredEnd.Add(time.Hour), End: coveredEnd.Add(2 * time.Hour)}
	manual := asked
	manual.Manual = true
	env.OnActivity(catchUp.BeginManualCatchUp, mock.Anything, asked).Return(manual, nil).Once()
	env.OnActivity(catchUp.ListPSPPart, mock.Anything, manual).Return(catchup.Part{Through: manual.End, Counts: catchup.Counts{Pages: 1, Listed: 4, New: 4}}, nil).Once()
	forbidAdvance(t, env)

	env.ExecuteWorkflow(catchup.WorkflowName, catchup.Input{Window: &asked})

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var out catchup.Result
	require.NoError(t, env.GetWorkflowResult(&out))
	require.False(t, out.Advanced)
	require.Equal(t, 4, out.Counts.New)
}

// An operator's window that starts at or before the covered end moves it
// part by part, as a scheduled run does; once its fence was moved by
// another run, it lists on and moves nothing more.
func TestPSPCatchUpOperatorWindowFromTheCoveredEndAdvancesIt(t *testing.T) {
	env := newCatchUpEnv(t)
	asked := catchup.Window{Start: coveredEnd.Add(-time.Hour), End: coveredEnd.Add(-time.Hour + 30*time.Minute)}
	manual := asked
	manual.Manual, manual.CoveredFrom = true, &coveredEnd
	asked.End = coveredEnd.Add(time.Hour)
	manual.End = asked.End
	first, second := coveredEnd.Add(10*time.Minute), coveredEnd.Add(20*time.Minute)
	env.OnActivity(catchUp.BeginManualCatchUp, mock.Anything, asked).Return(manual, nil).Once()
	env.OnActivity(catchUp.ListPSPPart, mock.Anything, manual).Return(catchup.Part{Through: first}, nil).Once()
	env.OnActivity(catchUp.AdvanceCatchUp, mock.Anything, covering(manual, &coveredEnd, first)).Return(true, nil).Once()
	env.OnActivity(catchUp.ListPSPPart, mock.Anything, rest(manual, &first, first)).Return(catchup.Part{Through: second}, nil).Once()
	env.OnActivity(catchUp.AdvanceCatchUp, mock.Anything, covering(rest(manual, &first, first), &first, second)).Return(false, nil).Once()
	env.OnActivity(catchUp.ListPSPPart, mock.Anything, rest(manual, nil, second)).Return(catchup.Part{Through: manual.End}, nil).Once()

	env.ExecuteWorkflow(catchup.WorkflowName, catchup.Input{Window: &asked})

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var out catchup.Result
	require.NoError(t, env.GetWorkflowResult(&out))
	require.True(t, out.Advanced)
	require.True(t, out.CoveredUntil.Equal(first), "the last end it recorded")
	require.Equal(t, 3, out.Parts)
}

// A run that listed PartsPerRun parts continues as new with the
// rest of its window, its fence and its counts: its history stays small
// however far behind it is.
func TestPSPCatchUpContinuesAsNewAfterManyParts(t *testing.T) {
	env := newCatchUpEnv(t)
	long := window // a first run: its lookback
	long.Start, long.CoveredFrom = coveredEnd.Add(-24*time.Hour), nil
	env.OnActivity(catchUp.BeginCatchUp, mock.Anything).Return(long, nil).Once()
	env.OnActivity(catchUp.ListPSPPart, mock.Anything, mock.Anything).Return(func(_ context.Context, w catchup.Window) (catchup.Part, error) {
		return catchup.Part{Through: w.Start.Add(time.Minute), Counts: catchup.Counts{Pages: 1}}, nil
	})
	env.OnActivity(catchUp.AdvanceCatchUp, mock.Anything, mock.Anything).Return(true, nil)

	env.ExecuteWorkflow(catchup.WorkflowName, catchup.Input{})

	require.True(t, env.IsWorkflowCompleted())
	var cont *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &cont)
	var next catchup.Input
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(cont.Input, &next))
	require.True(t, next.Continued)
	through := long.Start.Add(catchup.PartsPerRun * time.Minute)
	require.True(t, next.Window.Start.Equal(through), "the rest of the window: from %s", next.Window.Start)
	require.True(t, next.Window.CoveredFrom.Equal(through), "fenced by the last end recorded")
	require.True(t, next.Window.End.Equal(long.End))
	require.Equal(t, catchup.PartsPerRun, next.Sofar.Parts)
	require.Equal(t, long, next.Sofar.Window)

	// The next run goes on from there, without asking Begin again.
	env = newCatchUpEnv(t)
	rest := *next.Window
	env.OnActivity(catchUp.ListPSPPart, mock.Anything, rest).Return(catchup.Part{Through: rest.End, Counts: catchup.Counts{Pages: 1}}, nil).Once()
	env.OnActivity(catchUp.AdvanceCatchUp, mock.Anything, rest).Return(true, nil).Once()
	env.ExecuteWorkflow(catchup.WorkflowName, next)
	require.NoError(t, env.GetWorkflowError())
	var out catchup.Result
	require.NoError(t, env.GetWorkflowResult(&out))
	require.Equal(t, catchup.PartsPerRun+1, out.Parts)
	require.Equal(t, catchup.PartsPerRun+1, out.Counts.Pages)
	require.True(t, out.CoveredUntil.Equal(long.End))
}

// The Schedule's and an operator's runs have IDs of their own, derived
// from the task queue base.
func TestPSPCatchUpIDs(t *testing.T) {
	require.Equal(t, "pix-psp-catchup:pix-credit", catchup.ScheduleID("pix-credit"))
	require.Equal(t, "pix-psp-catchup-window:pix-credit:2026-12-02T00:00:00Z/2026-12-03T00:00:00Z",
		catchup.WindowWorkflowID("pix-credit", time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)))
}
