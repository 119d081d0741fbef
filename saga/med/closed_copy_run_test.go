package med_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/saga/med"
)

// expiries counts the ExpireRequest activities a run asks.
type expiries struct {
	*med.Activities
	mu sync.Mutex
	n  int
}

func (e *expiries) ExpireRequest(ctx context.Context, at med.Report) (med.Report, error) {
	e.mu.Lock()
	e.n++
	e.mu.Unlock()
	return e.Activities.ExpireRequest(ctx, at)
}

// The run itself, not only Next on the store's row, closes a report whose
// request's CLOSED copy (the PSP's notice of our REJECTED close) was taken
// in before our record of the close (pix-med-closed-copy): the workflow
// reads the report as the activities' results carry it, so closedCopy
// needs refund_close_sent_at there. Seen failing while Report's
// RefundCloseSentAt was json:"-": the run asked ExpireRequest 500 times
// (each changing nothing, the store's guard) and continued as new, the
// request never closed, the money held.
func TestAClosedCopyTakenFirstIsClosedByTheRun(t *testing.T) {
	f := newFixture(t)
	c, r, past, late, a := f.closedCopyTaken()
	require.Equal(t, med.StepCloseRefund, med.RunStep(a.current(r), past))

	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.SetStartTime(past)
	env.RegisterWorkflowWithOptions(med.Workflow, workflow.RegisterOptions{Name: med.WorkflowName})
	acts := &expiries{Activities: &med.Activities{Store: late, BehindPSP: true, DICT: a.dict,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	env.RegisterActivity(acts)
	env.ExecuteWorkflow(med.WorkflowName, med.Input{ID: r.ID.String()})

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError(), "asked ExpireRequest %d times", acts.n)
	require.Zero(t, acts.n, "never the 72 hours' expiry")
	out := a.current(r)
	require.Equal(t, med.StatusEnded, out.Status)
	require.Equal(t, med.EndReleased, *out.EndCause)
	require.NotNil(t, out.RefundClosedAt, "our close recorded from the PSP's notice")
	f.requireMoney(c.AccountID, 10_000, 0)
	f.requireBooks()
}
