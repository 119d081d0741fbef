package block_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/saga/block"
)

var a *block.Activities

// start is the test clock's start: the runs below sleep 72 hours of it.
var start = time.Date(2026, 12, 6, 13, 0, 0, 0, time.UTC)

func newEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetStartTime(start)
	env.RegisterWorkflowWithOptions(block.Workflow, workflow.RegisterOptions{Name: block.WorkflowName})
	env.RegisterActivity(&block.Activities{})
	t.Cleanup(func() { env.AssertExpectations(t) })
	return env
}

func blockRow(id uuid.UUID, status string) block.Block {
	return block.Block{ID: id, EndToEndID: "E12345678202612061300abcdefghijk", AccountID: "acc-1", AmountCents: 4_000,
		Status: status, CreatedAt: start, ExpiresAt: start.Add(block.Duration)}
}

func ended(b block.Block, status, cause string) block.Block {
	b.Status, b.EndCause = status, &cause
	return b
}

func returning(b block.Block) block.Block {
	refund := "0123456789abcdef0123456789abcdef"
	b.Status, b.RefundID = block.StatusReturning, &refund
	return b
}

func result(t *testing.T, env *testsuite.TestWorkflowEnvironment) block.Block {
	t.Helper()
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var out block.Block
	require.NoError(t, env.GetWorkflowResult(&out))
	return out
}

// The run sleeps 72 hours on a durable timer, then releases the block,
// at its time and not before.
func TestTheRunReleasesAt72Hours(t *testing.T) {
	env := newEnv(t)
	id := uuid.New()
	b := blockRow(id, block.StatusActive)
	env.OnActivity(a.LoadBlock, mock.Anything, id.String()).Return(b, nil).Once()
	var expiredAt time.Time
	env.OnActivity(a.ExpireBlock, mock.Anything, id.String()).Run(func(mock.Arguments) { expiredAt = env.Now() }).
		Return(ended(b, block.StatusReleased, block.CauseExpired), nil).Once()

	env.ExecuteWorkflow(block.WorkflowName, block.Input{ID: id.String()})

	out := result(t, env)
	require.Equal(t, block.StatusReleased, out.Status)
	require.Equal(t, block.CauseExpired, *out.EndCause)
	require.False(t, expiredAt.Before(b.ExpiresAt), "released at %s, before its time %s", expiredAt, b.ExpiresAt)
	require.Less(t, expiredAt.Sub(b.ExpiresAt), time.Minute, "released at its time")
}

// A release wakes the run: the block, read again, says released, and the
// run ends at once, without expiring it.
func TestAReleaseWakesTheRun(t *testing.T) {
	env := newEnv(t)
	id := uuid.New()
	b := blockRow(id, block.StatusActive)
	env.OnActivity(a.LoadBlock, mock.Anything, id.String()).Return(b, nil).Once()
	env.OnActivity(a.LoadBlock, mock.Anything, id.String()).Return(ended(b, block.StatusReleased, block.CauseOperator), nil).Once()
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(block.ChangedSignal, nil) }, 5*time.Hour)

	env.ExecuteWorkflow(block.WorkflowName, block.Input{ID: id.String()})

	require.Equal(t, block.StatusReleased, result(t, env).Status)
	require.Less(t, env.Now().Sub(start), 6*time.Hour, "it ended on the release, not at 72 hours")
	env.AssertNotCalled(t, "ExpireBlock", mock.Anything, mock.Anything)
}

// A signal the block does not back changes nothing: the run sleeps again
// and releases at 72 hours.
func TestASignalWithoutAChangeChangesNothing(t *testing.T) {
	env := newEnv(t)
	id := uuid.New()
	b := blockRow(id, block.StatusActive)
	env.OnActivity(a.LoadBlock, mock.Anything, id.String()).Return(b, nil).Twice()
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(block.ChangedSignal, nil) }, 24*time.Hour)
	env.OnActivity(a.ExpireBlock, mock.Anything, id.String()).Return(ended(b, block.StatusReleased, block.CauseExpired), nil).Once()

	env.ExecuteWorkflow(block.WorkflowName, block.Input{ID: id.String()})

	require.Equal(t, block.StatusReleased, result(t, env).Status)
	require.False(t, env.Now().Before(b.ExpiresAt))
}

// A return wakes the run, which then waits for the devolução to end
// (returned), reading it at growing intervals, and never expires it.
func TestAReturnWaitsForItsDevolucao(t *testing.T) {
	env := newEnv(t)
	id := uuid.New()
	b := blockRow(id, block.StatusActive)
	env.OnActivity(a.LoadBlock, mock.Anything, id.String()).Return(b, nil).Once()
	env.OnActivity(a.LoadBlock, mock.Anything, id.String()).Return(returning(b), nil).Once()
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(block.ChangedSignal, nil) }, time.Hour)
	var reads []time.Duration
	env.OnActivity(a.SettleBlock, mock.Anything, id.String()).Run(func(mock.Arguments) { reads = append(reads, env.Now().Sub(start)) }).
		Return(returning(b), nil).Times(3)
	env.OnActivity(a.SettleBlock, mock.Anything, id.String()).Return(ended(returning(b), block.StatusReturned, block.CauseReturned), nil).Once()

	env.ExecuteWorkflow(block.WorkflowName, block.Input{ID: id.String()})

	out := result(t, env)
	require.Equal(t, block.StatusReturned, out.Status)
	require.Equal(t, []time.Duration{time.Hour + block.SettleFirst, time.Hour + 3*block.SettleFirst, time.Hour + 7*block.SettleFirst}, reads)
	env.AssertNotCalled(t, "ExpireBlock", mock.Anything, mock.Anything)
}

// The expiry that finds the block returned (a return took the lock at the
// same instant) waits for its devolução: not made, the block ends
// released.
func TestAnExpiryThatLostToAReturnWaitsForTheDevolucao(t *testing.T) {
	env := newEnv(t)
	id := uuid.New()
	b := blockRow(id, block.StatusActive)
	env.OnActivity(a.LoadBlock, mock.Anything, id.String()).Return(b, nil).Once()
	env.OnActivity(a.ExpireBlock, mock.Anything, id.String()).Return(returning(b), nil).Once()
	env.OnActivity(a.SettleBlock, mock.Anything, id.String()).
		Return(ended(returning(b), block.StatusReleased, block.CauseReturnNotMade), nil).Once()

	env.ExecuteWorkflow(block.WorkflowName, block.Input{ID: id.String()})

	out := result(t, env)
	require.Equal(t, block.StatusReleased, out.Status)
	require.Equal(t, block.CauseReturnNotMade, *out.EndCause)
}

// A block ended before its run started: the run ends at once.
func TestABlockEndedEndsTheRunAtOnce(t *testing.T) {
	env := newEnv(t)
	id := uuid.New()
	env.OnActivity(a.LoadBlock, mock.Anything, id.String()).Return(ended(blockRow(id, block.StatusActive), block.StatusReleased, block.CauseOperator), nil).Once()
	env.ExecuteWorkflow(block.WorkflowName, block.Input{ID: id.String()})
	require.Equal(t, block.StatusReleased, result(t, env).Status)
	require.Equal(t, start, env.Now().UTC())
}
