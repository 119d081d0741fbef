package activities_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
)

// Found by the fourth attack review: only the PSP's own refusal of a
// devolução (a 400/422 with the BCB's DevolucaoOperacaoInvalida) may lead,
// after the quiet period, to a reversal. businessRefusal used to trust any
// code, and the client makes one of every RFC 7807 body: the generic
// problem a framework or a gateway writes for any 400 ("about:blank", an
// RFC section) or a gateway's own error code passed for the PSP refusing
// the devolução (RECUSADA, reversed a minute later if the GETs found no
// record). Through the real HTTP client, each such answer is now a refused
// request (PSPRequestRefused: retried, a human looks), never RECUSADA, and
// nothing is reversed; the PSP's own code still is RECUSADA.
func TestOnlyThePSPsOwnCodeIsABusinessRefusal(t *testing.T) {
	for name, c := range map[string]struct {
		body    string
		refusal bool
	}{
		"about:blank":   {body: `{"type":"about:blank","title":"Bad Request","status":400}`},
		"rfc section":   {body: `{"type":"https://tools.ietf.org/html/rfc9110#section-15.5.1","title":"One or more validation errors occurred.","status":400}`},
		"gateway error": {body: `{"error":{"code":"bad_request","message":"request rejected by gateway"}}`},
		"the bcb's":     {body: `{"type":"https://pix.bcb.gov.br/api/v2/error/DevolucaoOperacaoInvalida","title":"Devolução inválida","status":400,"detail":"fora do prazo"}`, refusal: true},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPut {
					w.Header().Set("Content-Type", "application/problem+json")
					w.WriteHeader(http.StatusBadRequest)
					_, _ = io.WriteString(w, c.body)
					return
				}
				http.NotFound(w, r) // no record (or a gateway's 404: the same to the client)
			}))
			defer srv.Close()
			store := &memRefunds{r: pix.Refund{ID: unitRefundID, EndToEndID: "E1234567820261129120000000000001", AccountID: "acc-1",
				AmountCents: 2_500, Status: pix.RefundDebited}}
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestActivityEnvironment()
			a := &activities.Refunds{Store: store, PSP: psp.NewHTTPClient(srv.URL, 2*time.Second), Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))}
			env.RegisterActivity(a)

			v, err := env.ExecuteActivity(a.RequestRefund, unitRef)
			if !c.refusal {
				require.Equal(t, activities.ErrTypePSPRequestRefused, errorType(t, err), "%s", strings.TrimSpace(c.body))
				require.Zero(t, store.reversed)
				require.Equal(t, pix.RefundDebited, store.r.Status)
				return
			}
			require.NoError(t, err)
			var st activities.RefundState
			require.NoError(t, v.Get(&st))
			require.Equal(t, activities.RefundRefusedByPSP, st.Status)
			require.Contains(t, st.Reason, psp.CodeRefundRefused)
		})
	}
}

// Found by the fourth attack review, the stale-actor half: ReverseRefund
// on a refusal that finds the PSP holding the devolução after all (its
// record showed up late: what the quiet period is for) fails the run, and
// used to record nothing of that record: the fence the store checks under
// the lock (debited, no rtr_id, no notice) stayed open, so an earlier
// attempt of the same activity that got its 404 before the record appeared
// and reached the store after still reversed: money credited back while
// the PSP held the devolução in process. The record is now recorded at
// once, as RequestRefund does, and the late reversal changes nothing.
func TestReversalThatFindsARecordRecordsIt(t *testing.T) {
	store, env := refundUnit(t, pix.RefundDebited, &scriptedRefundPSP{gets: []refundAnswer{{status: psp.RefundInProcessing}}})
	refusedRef := activities.RefundRef{RefundID: unitRefundID, PSPRefused: true, Reason: "fora do prazo"}
	_, err := env.ExecuteActivity((&activities.Refunds{}).ReverseRefund, refusedRef)
	require.Equal(t, activities.ErrTypeReversalUnconfirmed, errorType(t, err))
	require.Equal(t, pix.RefundRequested, store.r.Status, "the PSP's record is recorded")
	require.NotNil(t, store.r.RtrID)

	// The late attempt (its GET answered 404 a moment earlier) now reaches
	// the store with refused=true: the fence holds.
	_, err = store.ReverseRefund(t.Context(), unitRefundID, "the psp refused the devolução", true)
	require.Error(t, err)
	require.Zero(t, store.reversed, "nothing credited back")
}
