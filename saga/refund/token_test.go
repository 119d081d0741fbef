package refund_test

import (
	"io"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/internal/metrics"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp/psptest"
	"github.com/pixbank/pix/saga/refund"
)

// TestTokenFailureNeverMovesARefund: the devolução's PUT, its check and its
// reversal, for a PSP that gives no token: retried (refused: counted in
// pix_psp_attention_total, alerting), never RECUSADA, never reversed.
func TestTokenFailureNeverMovesARefund(t *testing.T) {
	for _, c := range psptest.TokenFailures {
		t.Run(c.Name, func(t *testing.T) {
			fake := psptest.NewFakePSP(t)
			fake.TokenAnswer = c.Answer
			want := activities.ErrTypePSPUnavailable
			if c.Refused {
				want = activities.ErrTypePSPRequestRefused
			}
			store := &memRefunds{r: pix.Refund{ID: unitRefundID, EndToEndID: "E1234567820261129120000000000001", AccountID: "acc-1",
				AmountCents: 2_500, Status: pix.RefundDebited}}
			registry := metrics.New()
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestActivityEnvironment()
			r := &refund.Activities{Store: store, PSP: fake.Client(t), Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Metrics: metrics.NewWorker(registry)}
			env.RegisterActivity(r)

			_, err := env.ExecuteActivity(r.RequestRefund, unitRef)
			require.Equal(t, want, errorType(t, err), "%v", err)
			for _, refusal := range []refund.Ref{unitRef, {RefundID: unitRefundID, PSPRefused: true, Reason: "x"}} {
				_, err = env.ExecuteActivity(r.ReverseRefund, refusal)
				require.Equal(t, want, errorType(t, err), "%v", err)
			}
			_, err = env.ExecuteActivity(r.CheckRefund, unitRef)
			require.Equal(t, want, errorType(t, err), "%v", err)

			require.Zero(t, store.reversed)
			require.Empty(t, store.calls, "nothing recorded")
			require.Equal(t, pix.RefundDebited, store.r.Status)
			require.Empty(t, fake.SeenCalls(), "no call reached the API")
			counted, err := testutil.GatherAndCount(registry, "pix_psp_attention_total")
			require.NoError(t, err)
			require.Equal(t, c.Refused, counted > 0, "a refusal is counted for the alert")
		})
	}
}
