package workflows_test

import (
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/workflows"
)

// status matches an upsert that sets PixStatus to want (and, when account is
// not empty, PixAccountId to account).
func status(want, account string) any {
	return mock.MatchedBy(func(sa temporal.SearchAttributes) bool {
		got, ok := sa.GetKeyword(workflows.AttrStatus)
		if !ok || got != want {
			return false
		}
		if account == "" {
			return true
		}
		acc, ok := sa.GetKeyword(workflows.AttrAccountID)
		return ok && acc == account
	})
}

func TestCreditUpsertsDoneAndTheResolvedAccount(t *testing.T) {
	env := newEnv(t)
	env.OnActivity(a.CreditAccount, mock.Anything, mock.Anything).
		Return(activities.CreditResult{AccountID: "acc-by-key", AmountCents: 150, Credited: true}, nil).Once()
	env.OnUpsertTypedSearchAttributes(status(pix.StatusDone, "acc-by-key")).Return(nil).Once()

	env.ExecuteWorkflow(workflows.CreditWorkflowName, input(5))

	require.NoError(t, env.GetWorkflowError())
}

func TestFailedCreditUpsertsFailed(t *testing.T) {
	env := newEnv(t)
	env.OnActivity(a.CreditAccount, mock.Anything, mock.Anything).
		Return(activities.CreditResult{}, temporal.NewApplicationError("account is closed", activities.ErrTypeAccountClosed)).Once()
	env.OnActivity(a.MarkCreditFailed, mock.Anything, mock.Anything).Return(activities.MarkFailedResult{Status: pix.StatusFailed}, nil).Once()
	env.OnUpsertTypedSearchAttributes(status(pix.StatusFailed, "")).Return(nil).Once()

	env.ExecuteWorkflow(workflows.CreditWorkflowName, input(5))

	require.Error(t, env.GetWorkflowError())
}

func TestTransferUpsertsEachStep(t *testing.T) {
	env := newTransferEnv(t)
	env.OnActivity(a.SubmitTransfer, mock.Anything, ref).Return(pspSays(psp.StatusPending, ""), nil).Once()
	env.OnActivity(a.AwaitSettlement, mock.Anything, mock.Anything).Return(pspSays(psp.StatusSettled, ""), nil).Once()
	env.OnActivity(a.SettleTransfer, mock.Anything, ref).Return(nil).Once()
	env.OnUpsertTypedSearchAttributes(status(pix.TransferSubmitted, "")).Return(nil).Once()
	env.OnUpsertTypedSearchAttributes(status(pix.TransferSettled, "")).Return(nil).Once()

	_, err := runTransfer(t, env)
	require.NoError(t, err)
}

func TestRejectedTransferUpsertsRefunded(t *testing.T) {
	env := newTransferEnv(t)
	env.OnActivity(a.SubmitTransfer, mock.Anything, ref).Return(pspSays(psp.StatusRejected, "invalid key"), nil).Once()
	env.OnActivity(a.RefundTransfer, mock.Anything, mock.Anything).Return(nil).Once()
	env.OnUpsertTypedSearchAttributes(status(pix.TransferRefunded, "")).Return(nil).Once()

	_, err := runTransfer(t, env)
	require.NoError(t, err)
}

func TestDevServerFlagsRegisterEveryAttribute(t *testing.T) {
	flags := workflows.DevServerFlags()
	require.Len(t, flags, 2*len(workflows.SearchAttributes))
	require.Contains(t, flags, "PixAmountCents=Int")
	require.Contains(t, flags, "PixStatus=Keyword")
}
