package scheduled_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/saga/scheduled"
)

var a *scheduled.Activities

// start is the test clock's start: the runs below sleep 3 and 30 days of it.
var start = time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC)

func newEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetStartTime(start)
	env.RegisterWorkflowWithOptions(scheduled.Workflow, workflow.RegisterOptions{Name: scheduled.WorkflowName})
	env.RegisterActivity(&scheduled.Activities{})
	t.Cleanup(func() { env.AssertExpectations(t) })
	return env
}

func row(id uuid.UUID, status string, runAt time.Time) scheduled.Scheduled {
	return scheduled.Scheduled{ID: id, AccountID: "acc-1", AmountCents: 15000, PixKey: "joao@example.com",
		ScheduledFor: runAt.Format(time.DateOnly), RunAt: runAt, Status: status}
}

func result(t *testing.T, env *testsuite.TestWorkflowEnvironment) scheduled.Scheduled {
	t.Helper()
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var out scheduled.Scheduled
	require.NoError(t, env.GetWorkflowResult(&out))
	return out
}

// The run sleeps on a durable timer until the date (3 days, 30 days of the
// test clock), then runs the PIX once, at its time and not before.
func TestItSleepsUntilTheDateThenRuns(t *testing.T) {
	for _, days := range []int{3, 30} {
		t.Run(time.Duration(days*24*int(time.Hour)).String(), func(t *testing.T) {
			env := newEnv(t)
			id := uuid.New()
			runAt := start.AddDate(0, 0, days)
			env.OnActivity(a.LoadScheduled, mock.Anything, id.String()).Return(row(id, scheduled.StatusScheduled, runAt), nil).Once()
			var ranAt time.Time
			executed := row(id, scheduled.StatusExecuted, runAt)
			transfer := uuid.New()
			executed.TransferID = &transfer
			env.OnActivity(a.RunScheduled, mock.Anything, id.String()).Run(func(mock.Arguments) { ranAt = env.Now() }).
				Return(executed, nil).Once()

			env.ExecuteWorkflow(scheduled.WorkflowName, scheduled.Input{ID: id.String()})

			out := result(t, env)
			require.Equal(t, scheduled.StatusExecuted, out.Status)
			require.Equal(t, &transfer, out.TransferID)
			require.False(t, ranAt.Before(runAt), "ran at %s, before its time %s", ranAt, runAt)
			require.Less(t, ranAt.Sub(runAt), time.Minute, "ran at its time")
		})
	}
}

// A cancel wakes the run: the row, read again, says cancelled, and the run
// ends so, at once, without running the PIX.
func TestACancelWakesTheRunWhichEndsCancelled(t *testing.T) {
	env := newEnv(t)
	id := uuid.New()
	runAt := start.AddDate(0, 0, 30)
	env.OnActivity(a.LoadScheduled, mock.Anything, id.String()).Return(row(id, scheduled.StatusScheduled, runAt), nil).Once()
	env.OnActivity(a.LoadScheduled, mock.Anything, id.String()).Return(row(id, scheduled.StatusCancelled, runAt), nil).Once()
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(scheduled.CancelSignal, nil) }, 10*24*time.Hour)

	env.ExecuteWorkflow(scheduled.WorkflowName, scheduled.Input{ID: id.String()})

	require.Equal(t, scheduled.StatusCancelled, result(t, env).Status)
	require.Less(t, env.Now().Sub(start), 11*24*time.Hour, "it ended on the cancel, not at the date")
	env.AssertNotCalled(t, "RunScheduled", mock.Anything, mock.Anything)
}

// A signal the row does not back (no cancel committed) changes nothing:
// the run sleeps again and runs at the date.
func TestASignalWithoutACancelChangesNothing(t *testing.T) {
	env := newEnv(t)
	id := uuid.New()
	runAt := start.AddDate(0, 0, 3)
	env.OnActivity(a.LoadScheduled, mock.Anything, id.String()).Return(row(id, scheduled.StatusScheduled, runAt), nil).Twice()
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(scheduled.CancelSignal, nil) }, 24*time.Hour)
	var ranAt time.Time
	env.OnActivity(a.RunScheduled, mock.Anything, id.String()).Run(func(mock.Arguments) { ranAt = env.Now() }).
		Return(row(id, scheduled.StatusExecuted, runAt), nil).Once()

	env.ExecuteWorkflow(scheduled.WorkflowName, scheduled.Input{ID: id.String()})

	require.Equal(t, scheduled.StatusExecuted, result(t, env).Status)
	require.False(t, ranAt.Before(runAt))
}

// A row cancelled before its run started: the run ends at once. One whose
// time has passed (a lost run started again late) runs at once.
func TestARowConcludedOrDueRunsAtOnce(t *testing.T) {
	env := newEnv(t)
	id := uuid.New()
	env.OnActivity(a.LoadScheduled, mock.Anything, id.String()).Return(row(id, scheduled.StatusCancelled, start.AddDate(0, 0, 3)), nil).Once()
	env.ExecuteWorkflow(scheduled.WorkflowName, scheduled.Input{ID: id.String()})
	require.Equal(t, scheduled.StatusCancelled, result(t, env).Status)
	require.Equal(t, start, env.Now().UTC())

	env = newEnv(t)
	env.OnActivity(a.LoadScheduled, mock.Anything, id.String()).Return(row(id, scheduled.StatusScheduled, start.Add(-time.Hour)), nil).Once()
	failed := row(id, scheduled.StatusFailed, start.Add(-time.Hour))
	reason := "insufficient_funds"
	failed.FailureReason = &reason
	env.OnActivity(a.RunScheduled, mock.Anything, id.String()).Return(failed, nil).Once()
	env.ExecuteWorkflow(scheduled.WorkflowName, scheduled.Input{ID: id.String()})
	out := result(t, env)
	require.Equal(t, scheduled.StatusFailed, out.Status)
	require.Equal(t, &reason, out.FailureReason)
	require.Equal(t, start, env.Now().UTC())
}
