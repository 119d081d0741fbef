package transfer_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp/psptest"
	"github.com/pixbank/pix/saga/sagatest"
	"github.com/pixbank/pix/saga/transfer"
)

// TestTokenFailureNeverMovesATransfer: the submission and the compensation
// of a transfer whose PSP gives no token are retried (refused: counted,
// alerting), never a rejection, never refunded.
func TestTokenFailureNeverMovesATransfer(t *testing.T) {
	sagatest.EachTokenFailure(t, func(t *testing.T, fake *psptest.FakePSP, want string) {
		s, env, tr := transferSetup(t, fake.Client(t))
		_, err := submit(t, env, tr)
		require.Equal(t, want, sagatest.ErrorType(t, err), "%v", err)
		_, err = env.ExecuteActivity(a.RefundTransfer, transfer.RefundInput{TransferID: tr.ID, Reason: "x"})
		require.Equal(t, want, sagatest.ErrorType(t, err), "%v", err)

		require.Equal(t, pix.TransferDebited, statusOf(t, s, tr), "neither submitted nor refunded")
		acc, err := s.GetAccount(context.Background(), "acc-1")
		require.NoError(t, err)
		require.EqualValues(t, 9_000, acc.BalanceCents, "the debit stands; nothing credited back")
		require.Empty(t, fake.SeenCalls(), "no call reached the API")
	})
}
