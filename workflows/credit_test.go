package workflows_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/internal/payload"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/runconf"
	"github.com/pixbank/pix/workflows"
)

const e2e = "E1234567820261129120000000000001"

var a *activities.Activities

func newEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.CreditPix, workflow.RegisterOptions{Name: workflows.CreditWorkflowName})
	env.RegisterActivity(&activities.Activities{})
	t.Cleanup(func() { env.AssertExpectations(t) })
	return env
}

func input(maxAttempts int32) workflows.CreditInput {
	r := runconf.DefaultRetrySettings()
	r.MaxAttempts = maxAttempts
	return workflows.CreditInput{EndToEndID: e2e, PriorAttempts: 2, Retry: r}
}

func TestCreditSucceeds(t *testing.T) {
	env := newEnv(t)
	env.OnActivity(a.CreditAccount, mock.Anything, activities.CreditInput{EndToEndID: e2e, PriorAttempts: 2}).
		Return(activities.CreditResult{AccountID: "acc-1", AmountCents: 150, Credited: true, BalanceAfter: 1150}, nil).Once()

	env.ExecuteWorkflow(workflows.CreditWorkflowName, input(5))

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var out workflows.CreditOutput
	require.NoError(t, env.GetWorkflowResult(&out))
	require.Equal(t, workflows.CreditOutput{Credited: true, AccountID: "acc-1", AmountCents: 150, BalanceAfter: 1150}, out)
}

func TestCreditRetriesThenSucceeds(t *testing.T) {
	env := newEnv(t)
	transient := temporal.NewApplicationError("account not found: acc-1", activities.ErrTypeAccountNotFound)
	env.OnActivity(a.CreditAccount, mock.Anything, mock.Anything).Return(activities.CreditResult{}, transient).Twice()
	env.OnActivity(a.CreditAccount, mock.Anything, mock.Anything).
		Return(activities.CreditResult{AccountID: "acc-1", AmountCents: 150, Credited: true}, nil).Once()

	env.ExecuteWorkflow(workflows.CreditWorkflowName, input(5))

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
}

func TestCreditExhaustsAttemptsAndFails(t *testing.T) {
	env := newEnv(t)
	transient := temporal.NewApplicationError("account not found: acc-x", activities.ErrTypeAccountNotFound)
	env.OnActivity(a.CreditAccount, mock.Anything, mock.Anything).Return(activities.CreditResult{}, transient).Times(3)
	env.OnActivity(a.MarkCreditFailed, mock.Anything, activities.MarkFailedInput{
		EndToEndID: e2e, Attempts: 2 + 3, Reason: "AccountNotFound: account not found: acc-x",
	}).Return(activities.MarkFailedResult{Status: pix.StatusFailed}, nil).Once()

	env.ExecuteWorkflow(workflows.CreditWorkflowName, input(3))

	require.True(t, env.IsWorkflowCompleted())
	err := env.GetWorkflowError()
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "want an application error, got %v", err)
	require.Equal(t, workflows.ErrTypeCreditFailed, appErr.Type())
	require.True(t, appErr.NonRetryable())
}

func TestCreditNonRetryableFailsAtOnce(t *testing.T) {
	env := newEnv(t)
	permanent := temporal.NewApplicationError("account is closed: acc-1", activities.ErrTypeAccountClosed)
	env.OnActivity(a.CreditAccount, mock.Anything, mock.Anything).Return(activities.CreditResult{}, permanent).Once()
	env.OnActivity(a.MarkCreditFailed, mock.Anything, activities.MarkFailedInput{
		EndToEndID: e2e, Attempts: 0, Reason: "AccountClosed: account is closed: acc-1",
	}).Return(activities.MarkFailedResult{Status: pix.StatusFailed}, nil).Once()

	env.ExecuteWorkflow(workflows.CreditWorkflowName, input(5))

	require.True(t, env.IsWorkflowCompleted())
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, env.GetWorkflowError(), &appErr)
	require.Equal(t, workflows.ErrTypeCreditFailed, appErr.Type())
}

// A credit that committed on an attempt whose success was lost: the closing
// write finds the row done and the run succeeds instead of failing.
func TestCreditFailureFindsRowDone(t *testing.T) {
	env := newEnv(t)
	env.OnActivity(a.CreditAccount, mock.Anything, mock.Anything).
		Return(activities.CreditResult{}, temporal.NewApplicationError("account not found: acc-1", activities.ErrTypeAccountNotFound)).Times(2)
	env.OnActivity(a.MarkCreditFailed, mock.Anything, mock.Anything).
		Return(activities.MarkFailedResult{Status: pix.StatusDone}, nil).Once()

	env.ExecuteWorkflow(workflows.CreditWorkflowName, input(2))

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
}

// A technical failure (database unreachable) says nothing about the PIX:
// when a round of attempts runs out on one, the row is not failed; another
// round follows.
func TestCreditTechnicalFailureStartsAnotherRound(t *testing.T) {
	env := newEnv(t)
	technical := temporal.NewApplicationError("technical failure: connection refused", activities.ErrTypeTechnicalFailure)
	env.OnActivity(a.CreditAccount, mock.Anything, activities.CreditInput{EndToEndID: e2e, PriorAttempts: 2}).
		Return(activities.CreditResult{}, technical).Times(3)
	env.OnActivity(a.CreditAccount, mock.Anything, activities.CreditInput{EndToEndID: e2e, PriorAttempts: 5}).
		Return(activities.CreditResult{}, technical).Once()
	env.OnActivity(a.CreditAccount, mock.Anything, activities.CreditInput{EndToEndID: e2e, PriorAttempts: 5}).
		Return(activities.CreditResult{AccountID: "acc-1", AmountCents: 1, Credited: true}, nil).Once()

	env.ExecuteWorkflow(workflows.CreditWorkflowName, input(3))

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
}

// A PIX that waits out a long outage continues as a new run now and then,
// keeping its attempt count, so that no history grows without bound.
func TestCreditLongOutageContinuesAsNew(t *testing.T) {
	env := newEnv(t)
	technical := temporal.NewApplicationError("technical failure: connection refused", activities.ErrTypeTechnicalFailure)
	env.OnActivity(a.CreditAccount, mock.Anything, mock.Anything).Return(activities.CreditResult{}, technical)

	env.ExecuteWorkflow(workflows.CreditWorkflowName, input(1))

	require.True(t, env.IsWorkflowCompleted())
	var cont *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &cont)
	var next workflows.CreditInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(cont.Input, &next))
	require.Equal(t, 2+50, next.PriorAttempts, "the prior attempts plus one per round")
}

func TestRetrySettingsValidate(t *testing.T) {
	require.NoError(t, runconf.DefaultRetrySettings().Validate())
	bad := runconf.DefaultRetrySettings()
	bad.MaxAttempts = 0
	require.Error(t, bad.Validate())
	bad = runconf.DefaultRetrySettings()
	bad.MaxInterval = payload.Duration(time.Millisecond)
	require.Error(t, bad.Validate())
}

func TestCreditWorkflowID(t *testing.T) {
	require.Equal(t, "pix-credit:"+e2e, workflows.CreditWorkflowID(e2e))
}
