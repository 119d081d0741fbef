package refund_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/internal/metrics"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp/psptest"
	"github.com/pixbank/pix/saga/refund"
	"github.com/pixbank/pix/saga/sagatest"
)

// TestTokenFailureNeverMovesARefund: the devolução's PUT, its check and its
// reversal, for a PSP that gives no token: retried (refused: counted in
// pix_psp_attention_total, alerting), never RECUSADA, never reversed.
func TestTokenFailureNeverMovesARefund(t *testing.T) {
	sagatest.EachTokenFailure(t, func(t *testing.T, fake *psptest.FakePSP, want string) {
		store := unitRefund(pix.RefundDebited)
		registry := metrics.New()
		r, env := unitActivities(store, fake.Client(t))
		r.Metrics = metrics.NewWorker(registry)

		_, err := env.ExecuteActivity(r.RequestRefund, unitRef)
		require.Equal(t, want, sagatest.ErrorType(t, err), "%v", err)
		for _, refusal := range []refund.Ref{unitRef, {RefundID: unitRefundID, PSPRefused: true, Reason: "x"}} {
			_, err = env.ExecuteActivity(r.ReverseRefund, refusal)
			require.Equal(t, want, sagatest.ErrorType(t, err), "%v", err)
		}
		_, err = env.ExecuteActivity(r.CheckRefund, unitRef)
		require.Equal(t, want, sagatest.ErrorType(t, err), "%v", err)

		require.Zero(t, store.reversed)
		require.Empty(t, store.calls, "nothing recorded")
		require.Equal(t, pix.RefundDebited, store.r.Status)
		require.Empty(t, fake.SeenCalls(), "no call reached the API")
		counted, err := testutil.GatherAndCount(registry, "pix_psp_attention_total")
		require.NoError(t, err)
		require.Equal(t, want == activities.ErrTypePSPRequestRefused, counted > 0, "a refusal is counted for the alert")
	})
}
