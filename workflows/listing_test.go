package workflows_test

import (
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/internal/pix"
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

func TestDevServerFlagsRegisterEveryAttribute(t *testing.T) {
	flags := workflows.DevServerFlags()
	require.Len(t, flags, 2*len(workflows.SearchAttributes))
	require.Contains(t, flags, "PixAmountCents=Int")
	require.Contains(t, flags, "PixStatus=Keyword")
}

// A credit the dispatcher starts now names its listing version in its input
// and upserts its status without asking GetVersion (no version marker, no
// TemporalChangeVersion upsert in its history); a run started before that
// asks it, as it always did.
func TestCreditListingVersionIsTheInputs(t *testing.T) {
	for _, tc := range []struct {
		name       string
		version    workflow.Version
		getVersion int
	}{
		{"named by the input", workflows.CreditListingVersion, 0},
		{"started before inputs named it", 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t)
			env.OnActivity(a.CreditAccount, mock.Anything, mock.Anything).
				Return(activities.CreditResult{AccountID: "acc-1", AmountCents: 150, Credited: true}, nil).Once()
			env.OnUpsertTypedSearchAttributes(status(pix.StatusDone, "acc-1")).Return(nil).Once()
			asked := env.OnGetVersion("pix-search-attributes", workflow.DefaultVersion, 1).Return(workflow.Version(1))
			if tc.getVersion == 0 {
				asked.Never()
			} else {
				asked.Times(tc.getVersion)
			}
			in := input(5)
			in.ListingVersion = tc.version
			env.ExecuteWorkflow(workflows.CreditWorkflowName, in)
			require.NoError(t, env.GetWorkflowError())
		})
	}
}

// A listing version newer than the worker's fails the workflow task (it is
// retried until a worker that knows it takes the run), as GetVersion does.
func TestCreditOfANewerListingVersionIsRefused(t *testing.T) {
	env := newEnv(t)
	in := input(5)
	in.ListingVersion = workflows.CreditListingVersion + 1
	env.ExecuteWorkflow(workflows.CreditWorkflowName, in)
	var panicked *temporal.PanicError
	require.ErrorAs(t, env.GetWorkflowError(), &panicked)
	require.Contains(t, panicked.Error(), "listing version 3")
}
