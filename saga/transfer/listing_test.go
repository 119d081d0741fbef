package transfer_test

import (
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/workflows"
)

// status matches an upsert that sets PixStatus to want.
func status(want string) any {
	return mock.MatchedBy(func(sa temporal.SearchAttributes) bool {
		got, ok := sa.GetKeyword(workflows.AttrStatus)
		return ok && got == want
	})
}

func TestTransferUpsertsEachStep(t *testing.T) {
	env := newTransferEnv(t)
	env.OnActivity(a.SubmitTransfer, mock.Anything, ref).Return(pspSays(psp.StatusPending, ""), nil).Once()
	env.OnActivity(a.AwaitSettlement, mock.Anything, mock.Anything).Return(pspSays(psp.StatusSettled, ""), nil).Once()
	env.OnActivity(a.SettleTransfer, mock.Anything, ref).Return(nil).Once()
	env.OnUpsertTypedSearchAttributes(status(pix.TransferSubmitted)).Return(nil).Once()
	env.OnUpsertTypedSearchAttributes(status(pix.TransferSettled)).Return(nil).Once()

	_, err := runTransfer(t, env)
	require.NoError(t, err)
}

func TestRejectedTransferUpsertsRefunded(t *testing.T) {
	env := newTransferEnv(t)
	env.OnActivity(a.SubmitTransfer, mock.Anything, ref).Return(pspSays(psp.StatusRejected, "invalid key"), nil).Once()
	env.OnActivity(a.RefundTransfer, mock.Anything, mock.Anything).Return(nil).Once()
	env.OnUpsertTypedSearchAttributes(status(pix.TransferRefunded)).Return(nil).Once()

	_, err := runTransfer(t, env)
	require.NoError(t, err)
}
