package med_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
)

// wakes is how many fill wake-ups the tests send one run: an account of
// many small credits before its hold is full.
const wakes = 2_000

// maxTurns is the run's budget of turns (med.maxTurns) its rereads count
// toward.
const maxTurns = 500

// awaitingCredit is a report returned in part whose hold the wakes find
// unchanged (waitForCredits waits on).
func awaitingCredit() med.Report {
	r := received()
	r.Status, r.AnalysisResult = med.StatusAwaitingCredit, ptr(string(dict.Agreed))
	r.RefundRequestID, r.RefundRequestCents, r.RefundRequestState = ptr(uuid.New()), ptr(int64(10_000)), ptr(string(dict.RefundOpen))
	r.ReturnedCents, r.Returns, r.FirstRtrID, r.RefundClosedAt = 3_000, 1, ptr("D12345678202612061300abcdefghijk"), ptr(start)
	return r
}

// A burst of wake-ups (sent while the run slept, or at once) costs one
// reread of the report, not one each (issue 37, attack review r2 MED-3):
// each was a LoadReport, a timer's cancel and a new timer in the history.
func TestABurstOfWakesCostsOneReread(t *testing.T) {
	env, s := newRun(t, received())
	// One callback sends them all at once (fewer than the test
	// environment's 1,000 callbacks queued).
	const burst = 900
	env.RegisterDelayedCallback(func() {
		for range burst {
			env.SignalWorkflow(med.ChangedSignal, nil)
		}
	}, time.Hour)
	env.RegisterDelayedCallback(func() { analyse(s, dict.Disagreed) }, 2*time.Hour)

	env.ExecuteWorkflow(med.WorkflowName, med.Input{ID: s.r.ID.String()})

	out := result(t, env)
	require.Equal(t, med.EndReleased, *out.EndCause)
	require.LessOrEqual(t, len(s.called("LoadReport")), 10, "the burst of %d wakes reread one by one", burst)
}

// Wake-ups one after another during a wait (the analysis's, the credits'
// with the hold unchanged) count toward the run's turns: the run continues
// as new once they are spent, its history bounded, long before the last
// wake (issue 37, attack review r2 MED-3): each was a LoadReport, a timer's
// cancel and a new timer in one turn, thousands of them past Temporal's
// 51,200 events, the run terminated with the money held.
func TestWakesDuringAWaitContinueAsNewBeforeTheHistoryLimit(t *testing.T) {
	for name, r := range map[string]med.Report{"analysis": received(), "credits": awaitingCredit()} {
		t.Run(name, func(t *testing.T) {
			env, s := newRun(t, r)
			const every = 30 * time.Second
			// Each wake registers the next (the test environment queues
			// fewer than 1,000 callbacks).
			var wake func(i int)
			wake = func(i int) {
				if i < wakes {
					env.RegisterDelayedCallback(func() { env.SignalWorkflow(med.ChangedSignal, nil); wake(i + 1) }, every)
				}
			}
			wake(0)

			env.ExecuteWorkflow(med.WorkflowName, med.Input{ID: r.ID.String()})

			require.True(t, env.IsWorkflowCompleted())
			var cont *workflow.ContinueAsNewError
			require.ErrorAs(t, env.GetWorkflowError(), &cont)
			loads := s.called("LoadReport")
			t.Logf("%d rereads, continued as new at %s", len(loads), env.Now().Sub(start))
			require.LessOrEqual(t, len(loads), maxTurns+5, "rereads past the run's turns")
			require.True(t, env.Now().Before(start.Add(wakes*every)), "continued as new at %s, after the last wake", env.Now())
		})
	}
}

// Temporal's suggestion (the history long or large) ends a wait at its next
// wake: the run continues as new.
func TestAWaitContinuesAsNewWhenTemporalSuggestsIt(t *testing.T) {
	env, s := newRun(t, received())
	env.RegisterDelayedCallback(func() {
		env.SetContinueAsNewSuggested(true)
		env.SignalWorkflow(med.ChangedSignal, nil)
	}, time.Hour)

	env.ExecuteWorkflow(med.WorkflowName, med.Input{ID: s.r.ID.String()})

	require.True(t, env.IsWorkflowCompleted())
	var cont *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &cont)
	require.Less(t, env.Now().Sub(start), 2*time.Hour)
}
