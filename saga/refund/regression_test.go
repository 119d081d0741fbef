package refund_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/saga/refund"
	"github.com/pixbank/pix/saga/sagatest"
)

// Found by the fourth attack review: only the PSP's own refusal of a
// devolução may lead, after the quiet period, to a reversal. The client
// makes a RequestError of every RFC 7807 body: the generic problem a
// framework or a gateway writes for any 400 ("about:blank", an RFC
// section), a gateway's own error code, a type that ends like the spec's
// but is another host's, or the code of no release of the spec
// (DevolucaoOperacaoInvalida, which this service once waited for) must not
// pass for the PSP refusing the devolução. Through the real HTTP client,
// each such answer is a refused request (PSPRequestRefused: retried, a
// human looks), never RECUSADA, and nothing is reversed; the spec's 400
// PixDevolucaoInvalida, matched in full, with the spec's 404 NaoEncontrado
// to the GET, is RECUSADA. A bare 404 to the GET (a gateway's, a wrong
// path's) is no proof that the PSP holds no record: refused too.
func TestOnlyThePSPsOwnCodeIsABusinessRefusal(t *testing.T) {
	const spec = `{"type":"https://pix.bcb.gov.br/api/v2/error/PixDevolucaoInvalida","title":"Devolução inválida","status":400,"detail":"fora do prazo"}`
	const noRecord = `{"type":"https://pix.bcb.gov.br/api/v2/error/NaoEncontrado","title":"Não encontrado","status":404}`
	for name, c := range map[string]struct {
		body, get string
		refusal   bool
	}{
		"about:blank":        {body: `{"type":"about:blank","title":"Bad Request","status":400}`, get: noRecord},
		"rfc section":        {body: `{"type":"https://tools.ietf.org/html/rfc9110#section-15.5.1","title":"One or more validation errors occurred.","status":400}`, get: noRecord},
		"gateway error":      {body: `{"error":{"code":"bad_request","message":"request rejected by gateway"}}`, get: noRecord},
		"gateway's code":     {body: `{"error":{"code":"PixDevolucaoInvalida","message":"x"}}`, get: noRecord},
		"another host's":     {body: `{"type":"https://gateway.example/error/PixDevolucaoInvalida","title":"x","status":400}`, get: noRecord},
		"the invented code":  {body: `{"type":"https://pix.bcb.gov.br/api/v2/error/DevolucaoOperacaoInvalida","title":"x","status":400}`, get: noRecord},
		"a bare 404 to GET":  {body: spec, get: ""},
		"the spec's refusal": {body: spec, get: noRecord, refusal: true},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPut {
					w.Header().Set("Content-Type", "application/problem+json")
					w.WriteHeader(http.StatusBadRequest)
					_, _ = io.WriteString(w, c.body)
					return
				}
				if c.get == "" {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Type", "application/problem+json")
				w.WriteHeader(http.StatusNotFound)
				_, _ = io.WriteString(w, c.get)
			}))
			defer srv.Close()
			store := unitRefund(pix.RefundDebited)
			a, env := unitActivities(store, psp.NewHTTPClient(srv.URL, 2*time.Second))

			st, err := sagatest.Run[refund.State](t, env, a.RequestRefund, unitRef)
			if !c.refusal {
				require.Equal(t, activities.ErrTypePSPRequestRefused, sagatest.ErrorType(t, err), "%s", strings.TrimSpace(c.body))
				require.Zero(t, store.reversed)
				require.Equal(t, pix.RefundDebited, store.r.Status)
				return
			}
			require.NoError(t, err)
			require.Equal(t, refund.RefusedByPSP, st.Status)
			require.Contains(t, st.Reason, "PixDevolucaoInvalida")
			require.Contains(t, st.Reason, "fora do prazo")
		})
	}
}

// Issue 27: the spec lists among PixDevolucaoInvalida's violations "an
// {id} already used by another devolução for that e2eid". A PUT that made
// the devolução and lost its answer is retried (the next attempt, or the
// next run) with the same id, and a PSP that follows the spec may answer
// that retry 400 PixDevolucaoInvalida. The saga used to take that for a
// refused request (not its first ask) and never followed the devolução the
// PSP had made. Now the PSP's record decides on any attempt: our devolução
// there is followed as accepted (recorded as requested with its rtrId);
// no record, on a refund asked before, still reverses nothing.
func TestRefusalOfARetriedPUTFollowsTheRecord(t *testing.T) {
	const refusal = `{"type":"https://pix.bcb.gov.br/api/v2/error/PixDevolucaoInvalida","title":"Devolução inválida","status":400,"detail":"id já utilizado"}`
	const rtrID = "D12345678202611291200abcdef12345"
	const e2e = "E1234567820261129120000000000001"
	for name, held := range map[string]bool{"the psp made it": true, "no record": false} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.Method == http.MethodPut:
					w.Header().Set("Content-Type", "application/problem+json")
					w.WriteHeader(http.StatusBadRequest)
					_, _ = io.WriteString(w, refusal)
				case held:
					_, _ = io.WriteString(w, `{"id":"`+unitRefundID+`","rtrId":"`+rtrID+`","valor":"25.00","natureza":"ORIGINAL",`+
						`"horario":{"solicitacao":"2026-11-29T12:00:00Z"},"status":"EM_PROCESSAMENTO"}`)
				default:
					w.Header().Set("Content-Type", "application/problem+json")
					w.WriteHeader(http.StatusNotFound)
					_, _ = io.WriteString(w, `{"type":"https://pix.bcb.gov.br/api/v2/error/PixDevolucaoNaoEncontrada","title":"x","status":404}`)
				}
			}))
			defer srv.Close()
			store := &memRefunds{r: pix.Refund{ID: unitRefundID, EndToEndID: e2e, AccountID: "acc-1", AmountCents: 2_500, Status: pix.RefundDebited}}
			store.asked = true // the first PUT reached the PSP; its answer was lost
			a, env := unitActivities(store, psp.NewHTTPClient(srv.URL, 2*time.Second))

			st, err := sagatest.Run[refund.State](t, env, a.RequestRefund, unitRef)
			if !held {
				require.Equal(t, activities.ErrTypePSPRequestRefused, sagatest.ErrorType(t, err))
				require.Equal(t, pix.RefundDebited, store.r.Status)
				require.Zero(t, store.reversed)
				return
			}
			require.NoError(t, err)
			require.Equal(t, string(psp.RefundInProcessing), st.Status)
			require.Equal(t, rtrID, st.RtrID)
			require.Equal(t, pix.RefundRequested, store.r.Status, "followed as accepted")
			require.Equal(t, rtrID, *store.r.RtrID)
			require.Zero(t, store.reversed)
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
	store, env := refundUnit(pix.RefundDebited, &scriptedRefundPSP{gets: []refundAnswer{{status: psp.RefundInProcessing}}})
	refusedRef := refund.Ref{RefundID: unitRefundID, PSPRefused: true, Reason: "fora do prazo"}
	_, err := env.ExecuteActivity(act.ReverseRefund, refusedRef)
	require.Equal(t, refund.ErrTypeReversalUnconfirmed, sagatest.ErrorType(t, err))
	require.Equal(t, pix.RefundRequested, store.r.Status, "the PSP's record is recorded")
	require.NotNil(t, store.r.RtrID)

	// The late attempt (its GET answered 404 a moment earlier) now reaches
	// the store with refused=true: the fence holds.
	_, err = store.ReverseRefund(t.Context(), unitRefundID, "the psp refused the devolução", true)
	require.Error(t, err)
	require.Zero(t, store.reversed, "nothing credited back")
}
