package refund_test

// The refund saga against a token endpoint that refuses us (a wrong client
// secret, credentials revoked for a while): no money moves on it, and once
// the token comes the PSP's refusal of a devolução still reaches its
// reversal (found by an attack review of issue 27's PSP client).

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/saga/refund"
	"github.com/pixbank/pix/saga/sagatest"
)

// refusingPSP refuses every devolução (400 PixDevolucaoInvalida: its valor
// exceeds the PIX's, say) and never holds a record of one (404
// NaoEncontrado); its token endpoint answers as tokenOK says (and, once
// tokenOK is false, so does the API to the token it holds). It counts the
// PUTs that reached it.
func refusingPSP(t *testing.T, tokenOK func() bool) (*psp.HTTPClient, *atomic.Int32) {
	t.Helper()
	var puts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/oauth/token" {
			w.Header().Set("Content-Type", "application/json")
			if !tokenOK() {
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = io.WriteString(w, `{"error":"invalid_client"}`)
				return
			}
			_, _ = io.WriteString(w, `{"access_token":"tok","token_type":"Bearer","expires_in":3600}`)
			return
		}
		switch {
		case !tokenOK():
			w.WriteHeader(http.StatusUnauthorized) // the client's credentials were revoked: the token it holds too
		case r.Method == http.MethodPut:
			puts.Add(1)
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"type":"https://pix.bcb.gov.br/api/v2/error/PixDevolucaoInvalida","title":"Devolução inválida","status":400,"detail":"excede o valor do pix"}`)
		default:
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"type":"https://pix.bcb.gov.br/api/v2/error/NaoEncontrado","title":"Não encontrado","status":404}`)
		}
	}))
	t.Cleanup(srv.Close)
	c, err := psp.New(psp.Config{BaseURL: srv.URL, Timeout: 2 * time.Second, TokenURL: srv.URL + "/oauth/token", ClientID: "bank", ClientSecret: "x"})
	require.NoError(t, err)
	return c, &puts
}

// The refund's first ask (MarkRefundAsked) is spent only by a PUT that may
// reach the PSP: a token endpoint refusing us (a wrong secret, an
// unreadable PSP_CLIENT_SECRET_FILE) or down sent nothing. It used to be
// spent before the client had a token: when the PSP then refused the
// devolução, the refusal could never again be RECUSADA, and the refund
// stayed debited, retried and alerting, until a human acted.
func TestTokenFailureSpendsNoFirstAsk(t *testing.T) {
	var tokenOK atomic.Bool
	client, puts := refusingPSP(t, tokenOK.Load)
	store := unitRefund(pix.RefundDebited)
	r, env := unitActivities(store, client)

	_, err := env.ExecuteActivity(r.RequestRefund, unitRef)
	require.Equal(t, activities.ErrTypePSPRequestRefused, sagatest.ErrorType(t, err))
	require.Zero(t, puts.Load(), "no PUT reached the PSP: the token endpoint refused us")
	require.False(t, store.asked, "nothing sent: the first ask is not spent")

	tokenOK.Store(true) // the operator fixes the secret
	st, err := sagatest.Run[refund.State](t, env, r.RequestRefund, unitRef)
	require.EqualValues(t, 1, puts.Load(), "the first PUT ever")
	require.NoError(t, err, "the PSP refused the first PUT it ever got and holds no record: RECUSADA expected, got %v", err)
	require.Equal(t, refund.RefusedByPSP, st.Status)
}

// The acceptance of issue 27, through the saga itself: a wrong client
// secret on the request's first attempt (the next attempt has the right
// one), then the PSP refuses the devolução and holds no record of it: the
// debit is reversed, once, on the attempt that got the refusal.
func TestTokenRefusedOnTheFirstAttemptThenRefusalIsReversed(t *testing.T) {
	var tokenRequests atomic.Int32
	client, puts := refusingPSP(t, func() bool { return tokenRequests.Add(1) > 1 })
	store := unitRefund(pix.RefundDebited)
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(refund.Workflow, workflow.RegisterOptions{Name: refund.WorkflowName})
	env.RegisterActivity(&refund.Activities{Store: store, PSP: client, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	env.ExecuteWorkflow(refund.WorkflowName, refund.Input{RefundID: unitRefundID, Settings: refund.DefaultRunSettings()})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var out refund.Output
	require.NoError(t, env.GetWorkflowResult(&out))
	require.Equal(t, pix.RefundReversed, out.Status)
	require.EqualValues(t, 1, puts.Load())
	require.Equal(t, 1, store.reversed)
}

// The RECUSADA decision is recorded: when the reversal's second look is
// refused until its run fails (the token endpoint refusing us for a couple
// of minutes, a 403), the next run goes straight to that second look. It
// used to ask again, get the same refusal, and, no longer its first ask,
// never reverse.
func TestRefusalOutlivesAFailedReversal(t *testing.T) {
	var tokenOK atomic.Bool
	tokenOK.Store(true)
	client, puts := refusingPSP(t, tokenOK.Load)
	store := unitRefund(pix.RefundDebited)
	r, env := unitActivities(store, client)

	st, err := sagatest.Run[refund.State](t, env, r.RequestRefund, unitRef)
	require.NoError(t, err)
	require.Equal(t, refund.RefusedByPSP, st.Status)

	tokenOK.Store(false) // during the quiet period the token endpoint refuses us: the run fails at its 8th attempt
	_, err = env.ExecuteActivity(r.ReverseRefund, refund.Ref{RefundID: unitRefundID, PSPRefused: true, Reason: st.Reason})
	require.Equal(t, activities.ErrTypePSPRequestRefused, sagatest.ErrorType(t, err))
	require.Zero(t, store.reversed)

	tokenOK.Store(true) // the next run (dispatcher's recheck)
	again, err := sagatest.Run[refund.State](t, env, r.RequestRefund, unitRef)
	require.NoError(t, err, "the PSP still refuses and holds no record; the next run can never reverse: %v", err)
	require.Equal(t, st, again, "the recorded refusal, with its reason")
	require.EqualValues(t, 1, puts.Load(), "not asked again")
	_, err = env.ExecuteActivity(r.ReverseRefund, refund.Ref{RefundID: unitRefundID, PSPRefused: true, Reason: again.Reason})
	require.NoError(t, err)
	require.Equal(t, 1, store.reversed)

	// A notice of the devolução since: the refusal no longer stands, and a
	// new run asks the PSP again (never reversed on it).
	store2 := unitRefund(pix.RefundDebited)
	r.Store = store2
	_, err = env.ExecuteActivity(r.RequestRefund, unitRef)
	require.NoError(t, err)
	store2.noticed = true
	_, err = env.ExecuteActivity(r.RequestRefund, unitRef)
	require.Equal(t, activities.ErrTypePSPRequestRefused, sagatest.ErrorType(t, err), "asked again, refused, not the first ask: a human looks")
	require.EqualValues(t, 3, puts.Load())
}
