package activities_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/internal/metrics"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
)

// tokenFailures are the two ways the OAuth 2.0 token endpoint fails a
// call: it refuses our client (a refused request: counted, retried,
// alerting) or it is down (unknown: retried). Either way no call reaches
// the API, and no money may move.
var tokenFailures = map[string]struct {
	answer   func(w http.ResponseWriter)
	wantType string
}{
	"refused (invalid_client)": {func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":"invalid_client"}`)
	}, activities.ErrTypePSPRequestRefused},
	"refused (invalid_scope)": {func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":"invalid_scope"}`)
	}, activities.ErrTypePSPRequestRefused},
	"down (503)": {func(w http.ResponseWriter) { w.WriteHeader(http.StatusServiceUnavailable) }, activities.ErrTypePSPUnavailable},
	"down (cut)": {func(http.ResponseWriter) { panic(http.ErrAbortHandler) }, activities.ErrTypePSPUnavailable},
}

// tokenFailingPSP is a PSP whose token endpoint answers with answer; it
// counts the calls that reach its API.
func tokenFailingPSP(t *testing.T, answer func(http.ResponseWriter)) (*psp.HTTPClient, *atomic.Int32) {
	t.Helper()
	var apiCalls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/oauth/token" {
			answer(w)
			return
		}
		apiCalls.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	c, err := psp.New(psp.Config{BaseURL: srv.URL, Timeout: 2 * time.Second, TokenURL: srv.URL + "/oauth/token", ClientID: "bank", ClientSecret: "secret"})
	require.NoError(t, err)
	return c, &apiCalls
}

// TestTokenFailureNeverMovesARefund: the devolução's PUT, its check and its
// reversal, for a PSP that gives no token: retried (refused: counted in
// pix_psp_attention_total, alerting), never RECUSADA, never reversed.
func TestTokenFailureNeverMovesARefund(t *testing.T) {
	for name, c := range tokenFailures {
		t.Run(name, func(t *testing.T) {
			client, apiCalls := tokenFailingPSP(t, c.answer)
			store := &memRefunds{r: pix.Refund{ID: unitRefundID, EndToEndID: "E1234567820261129120000000000001", AccountID: "acc-1",
				AmountCents: 2_500, Status: pix.RefundDebited}}
			registry := metrics.New()
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestActivityEnvironment()
			r := &activities.Refunds{Store: store, PSP: client, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Metrics: metrics.NewWorker(registry)}
			env.RegisterActivity(r)

			_, err := env.ExecuteActivity(r.RequestRefund, unitRef)
			require.Equal(t, c.wantType, errorType(t, err), "%v", err)
			for _, refusal := range []activities.RefundRef{unitRef, {RefundID: unitRefundID, PSPRefused: true, Reason: "x"}} {
				_, err = env.ExecuteActivity(r.ReverseRefund, refusal)
				require.Equal(t, c.wantType, errorType(t, err), "%v", err)
			}
			_, err = env.ExecuteActivity(r.CheckRefund, unitRef)
			require.Equal(t, c.wantType, errorType(t, err), "%v", err)

			require.Zero(t, store.reversed)
			require.Empty(t, store.calls, "nothing recorded")
			require.Equal(t, pix.RefundDebited, store.r.Status)
			require.Zero(t, apiCalls.Load())
			counted, err := testutil.GatherAndCount(registry, "pix_psp_attention_total")
			require.NoError(t, err)
			require.Equal(t, c.wantType == activities.ErrTypePSPRequestRefused, counted > 0, "a refusal is counted for the alert")
		})
	}
}
