package med_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
)

// stoppedExpiry is a report AGREED whose 72 hours passed an hour before
// start: its run expires it at once.
func stoppedExpiry() med.Report {
	r := received()
	r.Status, r.AnalysisResult = med.StatusAwaitingRequest, ptr(string(dict.Agreed))
	closed := start.Add(-80 * time.Hour)
	r.ClosedAt, r.RequestDueAt = &closed, ptr(start.Add(-time.Hour))
	return r
}

// A run stopped at the DICT waits ProblemRetryAfter before it tries the
// step again; a wake that finds the run's turns spent (here Temporal
// suggesting continue-as-new as a fill wakes it) ends that run, and the
// next run goes on with the wait (Input.RetryAt) rather than trying the
// stopped step at its start. (Attack review r4 LOW-1: the next run had
// Input{ID} only and listed the DICT again at once.)
func TestAStoppedWaitEndedByTheTurnsBudgetGoesOnInTheNextRun(t *testing.T) {
	r := stoppedExpiry()
	env, s := newRun(t, r)
	s.stops = map[string]int{"ExpireRequest": 10}
	env.RegisterDelayedCallback(func() {
		env.SetContinueAsNewSuggested(true)
		env.SignalWorkflow(med.ChangedSignal, nil) // a fill of the report's hold
	}, 10*time.Minute)

	env.ExecuteWorkflow(med.WorkflowName, med.Input{ID: r.ID.String()})
	require.True(t, env.IsWorkflowCompleted())
	var cont *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &cont)
	stoppedAt := s.called("ExpireRequest")
	require.Len(t, stoppedAt, 1)
	var next med.Input
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(cont.Input, &next))
	require.Equal(t, r.ID.String(), next.ID)
	require.True(t, next.RetryAt.Equal(stoppedAt[0].Add(med.ProblemRetryAfter)), "carried: %s", next.RetryAt)

	env2, s2 := newRun(t, s.r)
	s2.stops = map[string]int{"ExpireRequest": 1}
	env2.SetStartTime(env.Now())
	env2.ExecuteWorkflow(med.WorkflowName, next)
	out := result(t, env2)
	require.Equal(t, med.EndReleased, *out.EndCause)
	tries := s2.called("ExpireRequest")
	require.Len(t, tries, 2)
	require.False(t, tries[0].Before(stoppedAt[0].Add(med.ProblemRetryAfter)),
		"the stopped step tried at %s, %s after its stop", tries[0], tries[0].Sub(stoppedAt[0]))
	require.GreaterOrEqual(t, tries[1].Sub(tries[0]), med.ProblemRetryAfter)
}

// The wait carried goes on only while the report is as it stopped: a
// change since (another generation) and the step is tried at once; an
// input without RetryAt (a run continued as new before it was carried)
// tries the step at once as before.
func TestACarriedStoppedWaitEndsAtAChangeOrWithoutIt(t *testing.T) {
	for name, in := range map[string]func(med.Report) med.Input{
		"changed since": func(r med.Report) med.Input {
			return med.Input{ID: r.ID.String(), RetryAt: start.Add(5 * time.Hour), RetryGen: r.Gen - 1}
		},
		"none carried": func(r med.Report) med.Input { return med.Input{ID: r.ID.String()} },
	} {
		t.Run(name, func(t *testing.T) {
			r := stoppedExpiry()
			env, s := newRun(t, r)
			env.ExecuteWorkflow(med.WorkflowName, in(r))
			require.Equal(t, med.EndReleased, *result(t, env).EndCause)
			require.Equal(t, []time.Time{start}, s.called("ExpireRequest"))
		})
	}
	r := stoppedExpiry()
	env, s := newRun(t, r)
	env.ExecuteWorkflow(med.WorkflowName, med.Input{ID: r.ID.String(), RetryAt: start.Add(5 * time.Hour), RetryGen: r.Gen})
	require.Equal(t, med.EndReleased, *result(t, env).EndCause)
	require.Equal(t, []time.Time{start.Add(5 * time.Hour)}, s.called("ExpireRequest"), "as it stopped: waited on")
}
