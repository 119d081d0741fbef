package transfer_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/saga/transfer"
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

// TestTokenFailureNeverMovesATransfer: the submission and the compensation
// of a transfer whose PSP gives no token are retried (refused: counted,
// alerting), never a rejection, never refunded.
func TestTokenFailureNeverMovesATransfer(t *testing.T) {
	for name, c := range tokenFailures {
		t.Run(name, func(t *testing.T) {
			client, apiCalls := tokenFailingPSP(t, c.answer)
			s, env, tr := transferSetup(t, client)
			_, err := submit(t, env, tr)
			require.Equal(t, c.wantType, errorType(t, err), "%v", err)
			_, err = env.ExecuteActivity(a.RefundTransfer, transfer.RefundInput{TransferID: tr.ID, Reason: "x"})
			require.Equal(t, c.wantType, errorType(t, err), "%v", err)

			got, err := s.GetTransfer(context.Background(), uuid.MustParse(tr.ID))
			require.NoError(t, err)
			require.Equal(t, pix.TransferDebited, got.Status, "neither submitted nor refunded")
			acc, err := s.GetAccount(context.Background(), "acc-1")
			require.NoError(t, err)
			require.EqualValues(t, 9_000, acc.BalanceCents, "the debit stands; nothing credited back")
			require.Zero(t, apiCalls.Load())
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
