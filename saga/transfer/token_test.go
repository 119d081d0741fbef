package transfer_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp/psptest"
	"github.com/pixbank/pix/saga/transfer"
)

// TestTokenFailureNeverMovesATransfer: the submission and the compensation
// of a transfer whose PSP gives no token are retried (refused: counted,
// alerting), never a rejection, never refunded.
func TestTokenFailureNeverMovesATransfer(t *testing.T) {
	for _, c := range psptest.TokenFailures {
		t.Run(c.Name, func(t *testing.T) {
			fake := psptest.NewFakePSP(t)
			fake.TokenAnswer = c.Answer
			s, env, tr := transferSetup(t, fake.Client(t))
			want := activities.ErrTypePSPUnavailable
			if c.Refused {
				want = activities.ErrTypePSPRequestRefused
			}
			_, err := submit(t, env, tr)
			require.Equal(t, want, errorType(t, err), "%v", err)
			_, err = env.ExecuteActivity(a.RefundTransfer, transfer.RefundInput{TransferID: tr.ID, Reason: "x"})
			require.Equal(t, want, errorType(t, err), "%v", err)

			got, err := s.GetTransfer(context.Background(), uuid.MustParse(tr.ID))
			require.NoError(t, err)
			require.Equal(t, pix.TransferDebited, got.Status, "neither submitted nor refunded")
			acc, err := s.GetAccount(context.Background(), "acc-1")
			require.NoError(t, err)
			require.EqualValues(t, 9_000, acc.BalanceCents, "the debit stands; nothing credited back")
			require.Empty(t, fake.SeenCalls(), "no call reached the API")
		})
	}
}

// errorType is the type of an activity's application error.
func errorType(t *testing.T, err error) string {
	t.Helper()
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	return appErr.Type()
}
