package workflows_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/workflows"
)

var catchUp *activities.CatchUp

func newCatchUpEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.PSPCatchUp, workflow.RegisterOptions{Name: workflows.PSPCatchUpWorkflowName})
	env.RegisterActivity(&activities.CatchUp{})
	t.Cleanup(func() { env.AssertExpectations(t) })
	return env
}

// forbidBegin and forbidAdvance fail the test if the run calls them.
func forbidBegin(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
	env.OnActivity(catchUp.BeginCatchUp, mock.Anything).Return(func(context.Context) (activities.CatchUpWindow, error) {
		t.Error("BeginCatchUp ran")
		return activities.CatchUpWindow{}, nil
	}).Maybe()
}

func forbidAdvance(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
	env.OnActivity(catchUp.AdvanceCatchUp, mock.Anything, mock.Anything).Return(func(context.Context, activities.CatchUpWindow) (bool, error) {
		t.Error("AdvanceCatchUp ran: the covered window moved")
		return true, nil
	}).Maybe()
}

var (
	coveredEnd = time.Date(2026, 12, 3, 11, 59, 0, 0, time.UTC)
	window     = activities.CatchUpWindow{Start: coveredEnd.Add(-10 * time.Minute), End: coveredEnd.Add(time.Minute), CoveredFrom: &coveredEnd}
)

// A scheduled run lists the window its Begin decided, and then records its
// end.
func TestPSPCatchUpScheduledRunAdvancesAfterListing(t *testing.T) {
	env := newCatchUpEnv(t)
	counts := activities.CatchUpCounts{Pages: 2, Listed: 3, New: 1, Duplicate: 2}
	env.OnActivity(catchUp.BeginCatchUp, mock.Anything).Return(window, nil).Once()
	env.OnActivity(catchUp.ListPSPWindow, mock.Anything, window).Return(counts, nil).Once()
	env.OnActivity(catchUp.AdvanceCatchUp, mock.Anything, window).Return(true, nil).Once()

	env.ExecuteWorkflow(workflows.PSPCatchUpWorkflowName, workflows.PSPCatchUpInput{})

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var out workflows.PSPCatchUpResult
	require.NoError(t, env.GetWorkflowResult(&out))
	require.Equal(t, counts, out.Counts)
	require.True(t, out.Advanced)
}

// A listing that fails for good records nothing: the next run lists the
// window again.
func TestPSPCatchUpFailedListingAdvancesNothing(t *testing.T) {
	env := newCatchUpEnv(t)
	env.OnActivity(catchUp.BeginCatchUp, mock.Anything).Return(window, nil).Once()
	env.OnActivity(catchUp.ListPSPWindow, mock.Anything, window).
		Return(activities.CatchUpCounts{}, temporal.NewNonRetryableApplicationError("psp refused", activities.ErrTypePSPRequestRefused, nil)).Once()

	forbidAdvance(t, env)

	env.ExecuteWorkflow(workflows.PSPCatchUpWorkflowName, workflows.PSPCatchUpInput{})

	require.True(t, env.IsWorkflowCompleted())
	require.Error(t, env.GetWorkflowError())
}

// A listing that fails a few times is retried by Temporal, and the run
// still records its window once it succeeds.
func TestPSPCatchUpRetriesTheListing(t *testing.T) {
	env := newCatchUpEnv(t)
	env.OnActivity(catchUp.BeginCatchUp, mock.Anything).Return(window, nil).Once()
	env.OnActivity(catchUp.ListPSPWindow, mock.Anything, window).
		Return(activities.CatchUpCounts{}, temporal.NewApplicationError("psp down", activities.ErrTypePSPUnavailable)).Twice()
	env.OnActivity(catchUp.ListPSPWindow, mock.Anything, window).Return(activities.CatchUpCounts{Pages: 1}, nil).Once()
	env.OnActivity(catchUp.AdvanceCatchUp, mock.Anything, window).Return(true, nil).Once()

	env.ExecuteWorkflow(workflows.PSPCatchUpWorkflowName, workflows.PSPCatchUpInput{})

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
}

// An operator's window is listed as asked, and moves no covered window:
// neither Begin nor Advance runs.
func TestPSPCatchUpOperatorWindowMovesNothing(t *testing.T) {
	env := newCatchUpEnv(t)
	asked := activities.CatchUpWindow{Start: coveredEnd.Add(-48 * time.Hour), End: coveredEnd.Add(-24 * time.Hour)}
	manual := asked
	manual.Manual = true
	env.OnActivity(catchUp.ListPSPWindow, mock.Anything, manual).Return(activities.CatchUpCounts{Pages: 1, Listed: 4, New: 4}, nil).Once()
	forbidBegin(t, env)
	forbidAdvance(t, env)

	env.ExecuteWorkflow(workflows.PSPCatchUpWorkflowName, workflows.PSPCatchUpInput{Window: &asked})

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var out workflows.PSPCatchUpResult
	require.NoError(t, env.GetWorkflowResult(&out))
	require.False(t, out.Advanced)
	require.Equal(t, 4, out.Counts.New)
}

// The Schedule's and an operator's runs have IDs of their own, derived
// from the task queue base.
func TestPSPCatchUpIDs(t *testing.T) {
	require.Equal(t, "pix-psp-catchup:pix-credit", workflows.PSPCatchUpScheduleID("pix-credit"))
	require.Equal(t, "pix-psp-catchup-window:pix-credit:2026-12-02T00:00:00Z/2026-12-03T00:00:00Z",
		workflows.PSPCatchUpWindowWorkflowID("pix-credit", time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)))
}
