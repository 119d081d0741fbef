package pspsimtests_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/internal/tooling/pspsim"
	"github.com/pixbank/pix/internal/webhooksig"
	"github.com/pixbank/pix/tooling/pspspec"
)

var rtrIDPattern = regexp.MustCompile(`^D99999999[0-9]{12}[a-zA-Z0-9]{11}$`)

func refundReq(n int, id string, cents int64) psp.RefundRequest {
	return psp.RefundRequest{EndToEndID: pixID(n), ID: id, AmountCents: cents}
}

// pixID is a PIX received numbered n (another range than the transfers').
func pixID(n int) string { return id(900000 + n) }

func refundURL(base string, n int, refundID string) string {
	return base + "/pix/" + pixID(n) + "/devolucao/" + refundID
}

func (e *env) setRefundBehavior(t *testing.T, n int, body string) {
	t.Helper()
	code, resp := do(t, http.MethodPut, e.url+"/refund-behaviors/"+pixID(n), body)
	require.Equal(t, http.StatusNoContent, code, "%s", resp)
}

func (e *env) refund(t *testing.T, n int, refundID string) pspsim.RefundView {
	t.Helper()
	v, ok := e.sim.Refund(pixID(n), refundID)
	require.True(t, ok, "the psp has no devolução %s of %s", refundID, pixID(n))
	return v
}

// putRefund sends a PUT over raw HTTP (see send).
func putRefund(t *testing.T, url, body string) (int, []byte, error) {
	t.Helper()
	return send(t, http.MethodPut, url, body)
}

func TestRefundReturns(t *testing.T) {
	t.Parallel()
	e := setup(t)
	start := e.clock.Now()
	code, body, err := putRefund(t, refundURL(e.url, 1, "dev1"), `{"valor":"10.50","natureza":"ORIGINAL","descricao":"estorno"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, code, "%s", body)
	var got map[string]any
	require.NoError(t, json.Unmarshal(body, &got))
	rtrID, _ := got["rtrId"].(string)
	require.Regexp(t, rtrIDPattern, rtrID)
	require.Equal(t, "D99999999202611291200", rtrID[:21], "the ISPB and the minute")
	require.JSONEq(t, `{"id":"dev1","rtrId":"`+rtrID+`","valor":"10.50","natureza":"ORIGINAL","descricao":"estorno",
		"horario":{"solicitacao":"2026-11-29T12:00:00Z"},"status":"EM_PROCESSAMENTO"}`, string(body))

	e.clock.Advance(pspsim.DefaultSettleAfter - time.Millisecond)
	r, err := e.client.RefundStatus(t.Context(), pixID(1), "dev1")
	require.NoError(t, err)
	require.Equal(t, psp.RefundInProcessing, r.Status)

	e.clock.Advance(time.Millisecond)
	r, err = e.client.RefundStatus(t.Context(), pixID(1), "dev1")
	require.NoError(t, err)
	require.Equal(t, psp.RefundResult{EndToEndID: pixID(1), ID: "dev1", RtrID: rtrID, AmountCents: 1050, Status: psp.RefundReturned,
		RequestedAt: start, SettledAt: start.Add(pspsim.DefaultSettleAfter)}, r)

	code, body = do(t, http.MethodGet, refundURL(e.url, 1, "dev1"), "")
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, `{"id":"dev1","rtrId":"`+rtrID+`","valor":"10.50","natureza":"ORIGINAL","descricao":"estorno",
		"horario":{"solicitacao":"2026-11-29T12:00:00Z","liquidacao":"2026-11-29T12:00:00.1Z"},"status":"DEVOLVIDO"}`, string(body))
}

func TestRefundThroughTheClient(t *testing.T) {
	t.Parallel()
	e := setup(t)
	req := refundReq(1, "dev1", 1500)
	r, err := e.client.RequestRefund(t.Context(), req)
	require.NoError(t, err)
	require.True(t, r.Matches(req))
	require.Equal(t, psp.RefundInProcessing, r.Status)
	v := e.refund(t, 1, "dev1")
	require.Equal(t, "ORIGINAL", v.Nature, "the client's default")
	require.Equal(t, r.RtrID, v.RtrID)
}

func TestRefundIsIdempotent(t *testing.T) {
	t.Parallel()
	e := setup(t)
	req := refundReq(1, "dev1", 1500)
	req.Description = "estorno"
	first, err := e.client.RequestRefund(t.Context(), req)
	require.NoError(t, err)

	// The same PUT: 200, the devolução as it stands, once.
	e.clock.Advance(pspsim.DefaultSettleAfter)
	again, err := e.client.RequestRefund(t.Context(), req)
	require.NoError(t, err)
	require.Equal(t, first.RtrID, again.RtrID)
	require.Equal(t, psp.RefundReturned, again.Status)
	code, _, err := putRefund(t, refundURL(e.url, 1, "dev1"), `{"valor":"15.00","natureza":"ORIGINAL","descricao":"estorno"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	require.Len(t, e.sim.Refunds(pixID(1)), 1)
	require.Equal(t, 3, e.refund(t, 1, "dev1").Received)

	// The same id with another body: 400 PixDevolucaoInvalida (the id is
	// already another devolução's), nothing changed; the API Pix has no 409.
	for name, body := range map[string]string{
		"valor":     `{"valor":"15.01","natureza":"ORIGINAL","descricao":"estorno"}`,
		"descricao": `{"valor":"15.00","natureza":"ORIGINAL","descricao":"outra"}`,
		"natureza":  `{"valor":"15.00","natureza":"RETIRADA","descricao":"estorno"}`,
	} {
		t.Run(name, func(t *testing.T) {
			code, resp, err := putRefund(t, refundURL(e.url, 1, "dev1"), body)
			require.NoError(t, err)
			require.Equal(t, http.StatusBadRequest, code, "%s", resp)
			p := problem(t, resp)
			require.Equal(t, pspsim.ProblemPixDevolucaoInvalida, p.name)
			require.JSONEq(t, `[{"razao":"id já utilizado por outra devolução","propriedade":"id","valor":"dev1"}]`, string(p.violacoes))
		})
	}
	v := e.refund(t, 1, "dev1")
	require.Equal(t, int64(1500), v.AmountCents)
	require.Equal(t, "estorno", v.Description)

	// The same id under another PIX is another devolução.
	_, err = e.client.RequestRefund(t.Context(), refundReq(2, "dev1", 99))
	require.NoError(t, err)

	// An absent natureza is ORIGINAL: the same body.
	code, body, err := putRefund(t, refundURL(e.url, 3, "x"), `{"valor":"1.00"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, code, "%s", body)
	code, _, err = putRefund(t, refundURL(e.url, 3, "x"), `{"valor":"1.00","natureza":"ORIGINAL"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
}

func TestRefundNotDone(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setRefundBehavior(t, 1, `{"mode":"not_done","settle_after":"200ms","reason":"saldo insuficiente"}`)
	r, err := e.client.RequestRefund(t.Context(), refundReq(1, "dev1", 100))
	require.NoError(t, err)
	require.Equal(t, psp.RefundInProcessing, r.Status)
	require.Empty(t, r.Reason, "the motivo shows with the outcome")

	e.clock.Advance(200 * time.Millisecond)
	r, err = e.client.RefundStatus(t.Context(), pixID(1), "dev1")
	require.NoError(t, err)
	require.Equal(t, psp.RefundNotDone, r.Status)
	require.Equal(t, "saldo insuficiente", r.Reason)
	require.True(t, r.SettledAt.IsZero())

	code, body := do(t, http.MethodGet, refundURL(e.url, 1, "dev1"), "")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, string(body), `"motivo":"saldo insuficiente"`)
	require.NotContains(t, string(body), "liquidacao")
}

func TestRefundReject(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setRefundBehavior(t, 1, `{"mode":"reject"}`)
	code, body, err := putRefund(t, refundURL(e.url, 1, "dev1"), `{"valor":"1.00"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, code, "a devolução refused is a devolução made: %s", body)
	require.Contains(t, string(body), `"status":"NAO_REALIZADO"`)
	require.Contains(t, string(body), `"motivo":"`+pspsim.DefaultRefundReason+`"`)

	r, err := e.client.RequestRefund(t.Context(), refundReq(1, "dev1", 100))
	require.NoError(t, err, "NAO_REALIZADO is a result")
	require.Equal(t, psp.RefundNotDone, r.Status)
	require.Equal(t, pspsim.DefaultRefundReason, r.Reason)
}

func TestRefundFailCreatesNothing(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setRefundBehavior(t, 1, `{"mode":"fail","times":2}`)
	req := refundReq(1, "dev1", 100)
	for range 2 {
		_, err := e.client.RequestRefund(t.Context(), req)
		require.ErrorIs(t, err, psp.ErrTransient)
		_, err = e.client.RefundStatus(t.Context(), pixID(1), "dev1")
		require.ErrorIs(t, err, psp.ErrNotFound, "a failed PUT makes nothing")
	}
	r, err := e.client.RequestRefund(t.Context(), req)
	require.NoError(t, err)
	require.True(t, r.Matches(req))
	require.Equal(t, 3, e.refund(t, 1, "dev1").Received, "the 503s count too")
	require.Equal(t, []pspsim.RefundBehaviorView{{EndToEndID: pixID(1), Behavior: pspsim.RefundBehavior{Mode: pspsim.RefundModeFail, Times: 2}, Requests: 3}},
		e.sim.RefundBehaviors())
}

func TestRefundLoseResponse(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setRefundBehavior(t, 1, `{"mode":"lose_response","times":2}`)
	for n := 1; n <= 2; n++ {
		code, body, err := putRefund(t, refundURL(e.url, 1, "dev1"), `{"valor":"1.00"}`)
		require.Error(t, err, "PUT %d was answered %d %s; want the connection cut", n, code, body)
		require.Len(t, e.sim.Refunds(pixID(1)), 1, "made by the first, lost, PUT")
	}
	rtrID := e.refund(t, 1, "dev1").RtrID
	code, body, err := putRefund(t, refundURL(e.url, 1, "dev1"), `{"valor":"1.00"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, "%s", body)
	require.Contains(t, string(body), rtrID)
	require.Equal(t, 3, e.refund(t, 1, "dev1").Received)
}

// TestRefundLostAnswerThroughTheClient: the answer is lost, the PUT
// repeated returns the devolução made.
func TestRefundLostAnswerThroughTheClient(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setRefundBehavior(t, 1, `{"mode":"lose_response","times":1}`)
	req := refundReq(1, "dev1", 100)
	_, err := e.client.RequestRefund(t.Context(), req)
	require.ErrorIs(t, err, psp.ErrTransient)
	r, err := e.client.RequestRefund(t.Context(), req)
	require.NoError(t, err)
	require.True(t, r.Matches(req))
	require.Equal(t, e.refund(t, 1, "dev1").RtrID, r.RtrID)
}

func TestRefundUnauthorized(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setRefundBehavior(t, 1, `{"mode":"unauthorized","times":1}`)
	code, body, err := putRefund(t, refundURL(e.url, 1, "dev1"), `{"valor":"1.00"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, code)
	require.Empty(t, body, "RFC 6750: the challenge is in WWW-Authenticate")
	_, ok := e.sim.Refund(pixID(1), "dev1")
	require.False(t, ok, "a refused PUT makes nothing")

	r, err := e.client.RequestRefund(t.Context(), refundReq(1, "dev1", 100))
	require.NoError(t, err)
	require.Equal(t, psp.RefundInProcessing, r.Status)

	e.setRefundBehavior(t, 1, `{"mode":"unauthorized"}`)
	_, err = e.client.RequestRefund(t.Context(), refundReq(1, "dev1", 100))
	require.Equal(t, psp.AnswerRequestRefused, psp.Classify(err), "%v", err)
}

func TestRefundStayProcessing(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setRefundBehavior(t, 1, `{"mode":"stay_processing"}`)
	_, err := e.client.RequestRefund(t.Context(), refundReq(1, "dev1", 100))
	require.NoError(t, err)
	e.clock.Advance(365 * 24 * time.Hour)
	r, err := e.client.RefundStatus(t.Context(), pixID(1), "dev1")
	require.NoError(t, err)
	require.Equal(t, psp.RefundInProcessing, r.Status)
}

func TestRefundSettleAfterOfTheBehavior(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setRefundBehavior(t, 1, `{"mode":"return","settle_after":"2s"}`)
	_, err := e.client.RequestRefund(t.Context(), refundReq(1, "dev1", 100))
	require.NoError(t, err)
	e.clock.Advance(time.Second)
	require.Equal(t, psp.RefundInProcessing, e.refund(t, 1, "dev1").Status)
	e.clock.Advance(time.Second)
	require.Equal(t, psp.RefundReturned, e.refund(t, 1, "dev1").Status)
	// Another PIX has no behaviour: the default.
	_, err = e.client.RequestRefund(t.Context(), refundReq(2, "dev1", 100))
	require.NoError(t, err)
	e.clock.Advance(pspsim.DefaultSettleAfter)
	require.Equal(t, psp.RefundReturned, e.refund(t, 2, "dev1").Status)
}

func TestRefundLimit(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setRefundBehavior(t, 1, `{"mode":"return","limit_cents":1000}`)
	want := map[string]psp.RefundStatus{"a": psp.RefundInProcessing, "b": psp.RefundNotDone, "c": psp.RefundInProcessing, "d": psp.RefundNotDone}
	for _, step := range []struct {
		id    string
		cents int64
	}{{"a", 600}, {"b", 500}, {"c", 400}, {"d", 1}} {
		code, body, err := putRefund(t, refundURL(e.url, 1, step.id), `{"valor":"`+psp.FormatValor(step.cents)+`"}`)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, code, "%s: %s", step.id, body)
		v := e.refund(t, 1, step.id)
		require.Equal(t, want[step.id], v.Status, step.id)
		if v.Status == psp.RefundNotDone {
			require.Equal(t, pspsim.LimitExceededReason, v.Reason)
		}
	}
	// Without a limit, anything goes.
	_, err := e.client.RequestRefund(t.Context(), refundReq(2, "big", psp.MaxValorCents))
	require.NoError(t, err)

	// A devolução that will not be made does not count against the limit.
	e.setRefundBehavior(t, 3, `{"mode":"not_done","limit_cents":100}`)
	r, err := e.client.RequestRefund(t.Context(), refundReq(3, "a", 100))
	require.NoError(t, err)
	require.Equal(t, psp.RefundInProcessing, r.Status)
	e.setRefundBehavior(t, 3, `{"mode":"return","limit_cents":100}`)
	r, err = e.client.RequestRefund(t.Context(), refundReq(3, "b", 100))
	require.NoError(t, err)
	require.Equal(t, psp.RefundInProcessing, r.Status)
}

func TestRefundDelay(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setRefundBehavior(t, 1, `{"mode":"return","delay":"5s"}`)
	impatient := psp.NewHTTPClient(e.url, 100*time.Millisecond)
	_, err := impatient.RequestRefund(t.Context(), refundReq(1, "dev1", 100))
	require.ErrorIs(t, err, psp.ErrTransient)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	e.refund(t, 1, "dev1") // made all the same

	e.setRefundBehavior(t, 1, `{"mode":"return","delay":"50ms"}`)
	start := time.Now()
	r, err := e.client.RequestRefund(t.Context(), refundReq(1, "dev1", 100))
	require.NoError(t, err)
	require.Equal(t, psp.RefundInProcessing, r.Status)
	require.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)
}

func TestListRefunds(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setRefundBehavior(t, 1, `{"mode":"reject","reason":"não"}`)
	for _, refundID := range []string{"z", "a"} {
		_, err := e.client.RequestRefund(t.Context(), refundReq(1, refundID, 100))
		require.NoError(t, err)
	}
	code, body := do(t, http.MethodGet, e.url+"/pix/"+pixID(1)+"/devolucao", "")
	require.Equal(t, http.StatusOK, code)
	var list struct {
		Devolucoes []struct{ ID, Status, Motivo, Valor string } `json:"devolucoes"`
	}
	require.NoError(t, json.Unmarshal(body, &list))
	require.Len(t, list.Devolucoes, 2)
	require.Equal(t, "z", list.Devolucoes[0].ID, "in the order asked for")
	require.Equal(t, "a", list.Devolucoes[1].ID)
	require.Equal(t, "NAO_REALIZADO", list.Devolucoes[1].Status)
	require.Equal(t, "não", list.Devolucoes[1].Motivo)
	require.Equal(t, "1.00", list.Devolucoes[1].Valor)

	code, body = do(t, http.MethodGet, e.url+"/pix/"+pixID(2)+"/devolucao", "")
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, `{"devolucoes":[]}`, string(body))
}

func TestRefundValidation(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for _, tc := range []struct{ name, path, body string }{
		{"short e2eid", "/pix/E123/devolucao/dev1", `{"valor":"1.00"}`},
		{"e2eid of a devolução", "/pix/D" + pixID(1)[1:] + "/devolucao/dev1", `{"valor":"1.00"}`},
		{"id too long", "/pix/" + pixID(1) + "/devolucao/" + strings.Repeat("a", 36), `{"valor":"1.00"}`},
		{"id with a dash", "/pix/" + pixID(1) + "/devolucao/dev-1", `{"valor":"1.00"}`},
		{"no valor", "/pix/" + pixID(1) + "/devolucao/dev1", `{"natureza":"ORIGINAL"}`},
		{"valor as a number", "/pix/" + pixID(1) + "/devolucao/dev1", `{"valor":1.00}`},
		{"valor with one decimal", "/pix/" + pixID(1) + "/devolucao/dev1", `{"valor":"1.0"}`},
		{"zero valor", "/pix/" + pixID(1) + "/devolucao/dev1", `{"valor":"0.00"}`},
		{"negative valor", "/pix/" + pixID(1) + "/devolucao/dev1", `{"valor":"-1.00"}`},
		{"unknown natureza", "/pix/" + pixID(1) + "/devolucao/dev1", `{"valor":"1.00","natureza":"PARCIAL"}`},
		{"long descricao", "/pix/" + pixID(1) + "/devolucao/dev1", `{"valor":"1.00","descricao":"` + strings.Repeat("é", 141) + `"}`},
		{"unknown field", "/pix/" + pixID(1) + "/devolucao/dev1", `{"valor":"1.00","motivo":"x"}`},
		{"malformed", "/pix/" + pixID(1) + "/devolucao/dev1", `{"valor":`},
		{"empty body", "/pix/" + pixID(1) + "/devolucao/dev1", ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body, err := putRefund(t, e.url+tc.path, tc.body)
			require.NoError(t, err)
			require.Equal(t, http.StatusBadRequest, code, "%s", body)
			require.Equal(t, pspsim.ProblemPixDevolucaoInvalida, problem(t, body).name)
		})
	}
	require.Empty(t, e.sim.Refunds(pixID(1)), "an invalid PUT makes nothing")

	code, _, err := putRefund(t, refundURL(e.url, 1, strings.Repeat("a", 35)), `{"valor":"1.00","descricao":"`+strings.Repeat("é", 140)+`"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, code, "the limits themselves are valid")

	code, body := do(t, http.MethodGet, refundURL(e.url, 1, "nope"), "")
	require.Equal(t, http.StatusNotFound, code)
	require.Equal(t, pspsim.ProblemNaoEncontrado, problem(t, body).name)
	// A malformed id is no devolução either (the API Pix's GET has no 400).
	code, body = do(t, http.MethodGet, e.url+"/pix/E123/devolucao/dev1", "")
	require.Equal(t, http.StatusNotFound, code)
	require.Equal(t, pspsim.ProblemNaoEncontrado, problem(t, body).name)
	code, body = do(t, http.MethodDelete, refundURL(e.url, 1, "dev1"), "")
	require.Equal(t, http.StatusMethodNotAllowed, code)
	require.Equal(t, pspsim.CodeMethodNotAllowed, errorCode(t, body))
}

func TestRefundBehaviorAPI(t *testing.T) {
	t.Parallel()
	e := setup(t)
	url := e.url + "/refund-behaviors/" + pixID(1)
	for _, body := range []string{
		`{"mode":"return"}`,
		`{"mode":"return","settle_after":"1s","delay":"5s","limit_cents":1000}`,
		`{"mode":"not_done","settle_after":"200ms","reason":"x"}`,
		`{"mode":"reject","reason":"x","limit_cents":1}`,
		`{"mode":"fail","times":2}`,
		`{"mode":"lose_response","times":1,"settle_after":"1s"}`,
		`{"mode":"unauthorized"}`,
		`{"mode":"stay_processing","delay":"90s"}`,
	} {
		t.Run("ok "+body, func(t *testing.T) {
			code, resp := do(t, http.MethodPut, url, body)
			require.Equal(t, http.StatusNoContent, code, "%s", resp)
		})
	}
	for _, body := range []string{
		`{}`,
		`{"mode":"accept"}`,
		`{"mode":"return","times":1}`,
		`{"mode":"fail","times":-1}`,
		`{"mode":"return","reason":"x"}`,
		`{"mode":"reject","settle_after":"1s"}`,
		`{"mode":"stay_processing","settle_after":"1s"}`,
		`{"mode":"return","settle_after":"-1s"}`,
		`{"mode":"return","delay":"91s"}`,
		`{"mode":"return","delay":5}`,
		`{"mode":"return","limit_cents":-1}`,
		`{"mode":"return","limit":"10.00"}`,
		`{"mode":`,
		``,
	} {
		t.Run("bad "+body, func(t *testing.T) {
			code, resp := do(t, http.MethodPut, url, body)
			require.Equal(t, http.StatusBadRequest, code, "%s", resp)
			require.Equal(t, pspsim.CodeInvalidRequest, errorCode(t, resp))
		})
	}
	code, resp := do(t, http.MethodPut, e.url+"/refund-behaviors/E123", `{"mode":"return"}`)
	require.Equal(t, http.StatusBadRequest, code, "%s", resp)

	e.setRefundBehavior(t, 2, `{"mode":"fail","times":1}`)
	_, err := e.client.RequestRefund(t.Context(), refundReq(2, "dev1", 100))
	require.ErrorIs(t, err, psp.ErrTransient)
	code, body := do(t, http.MethodGet, e.url+"/refund-behaviors", "")
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, `{"refund_behaviors":[
		{"end_to_end_id":"`+pixID(1)+`","mode":"stay_processing","delay":"1m30s","requests":0},
		{"end_to_end_id":"`+pixID(2)+`","mode":"fail","times":1,"requests":1}]}`, string(body))

	code, _ = do(t, http.MethodDelete, url, "")
	require.Equal(t, http.StatusNoContent, code)
	_, err = e.client.RequestRefund(t.Context(), refundReq(1, "dev1", 100))
	require.NoError(t, err)
	e.clock.Advance(pspsim.DefaultSettleAfter)
	require.Equal(t, psp.RefundReturned, e.refund(t, 1, "dev1").Status, "back to return")
}

func TestRefundBehaviorJSONRoundTrip(t *testing.T) {
	t.Parallel()
	b := pspsim.RefundBehavior{Mode: pspsim.RefundModeLoseResponse, Times: 2, SettleAfter: 200 * time.Millisecond, Delay: time.Second, LimitCents: 1500}
	data, err := json.Marshal(b)
	require.NoError(t, err)
	require.JSONEq(t, `{"mode":"lose_response","times":2,"settle_after":"200ms","delay":"1s","limit_cents":1500}`, string(data))
	var back pspsim.RefundBehavior
	require.NoError(t, json.Unmarshal(data, &back))
	require.Equal(t, b, back)
	require.NoError(t, back.Validate())

	sim := pspsim.New(pspsim.Options{})
	require.Error(t, sim.SetRefundBehavior("E123", pspsim.RefundBehavior{Mode: pspsim.RefundModeReturn}))
	require.Error(t, sim.SetRefundBehavior(pixID(1), pspsim.RefundBehavior{Mode: "nope"}))
}

// The webhooks: a bank (an httptest server) that verifies every delivery
// as the bank's API does, and a simulator run by Serve.

var webhookKey = []byte("0123456789abcdef0123456789abcdef")

func webhookSecret() string { return webhooksig.FormatSecret(webhookKey) }

type delivery struct {
	header http.Header
	body   []byte
	psp    string // whose signature matched
	path   string // newTLSBank's only
	peer   string // newTLSBank's only: the client certificate's common name
}

type bank struct {
	url        string
	deliveries chan delivery
	// fail is how many more deliveries to answer 500.
	fail atomic.Int32
	// refused counts deliveries whose signature did not verify.
	refused atomic.Int32
}

func newBank(t *testing.T) *bank {
	t.Helper()
	b := &bank{deliveries: make(chan delivery, 100)}
	verifier := webhooksig.NewVerifier([]webhooksig.Secret{{PSP: "pspsim", Key: webhookKey}}, 0, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		if r.URL.Path != "/webhooks/api-pix/pix" || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		if err := pspspec.ValidateWebhook(body); err != nil {
			t.Errorf("the simulator's webhook departs from the document: %v", err)
		}
		pspName, err := verifier.Verify(r.Header, body)
		if err != nil {
			b.refused.Add(1)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		b.deliveries <- delivery{header: r.Header.Clone(), body: body, psp: pspName}
		if b.fail.Add(-1) >= 0 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	b.url = srv.URL + "/webhooks/api-pix/pix"
	return b
}

// next returns the next delivery, failing the test when none comes.
func (b *bank) next(t *testing.T) delivery {
	t.Helper()
	select {
	case d := <-b.deliveries:
		return d
	case <-time.After(5 * time.Second):
		t.Fatal("no webhook delivered")
		return delivery{}
	}
}

// none checks that no delivery comes for a while.
func (b *bank) none(t *testing.T) {
	t.Helper()
	select {
	case d := <-b.deliveries:
		t.Fatalf("unexpected webhook: %s", d.body)
	case <-time.After(300 * time.Millisecond):
	}
}

type served struct {
	*env
	stop func() error // cancels and waits for Serve's error
}

// serve runs a simulator with opts (its clock set) by Serve.
func serve(t *testing.T, opts pspsim.Options) *served {
	t.Helper()
	clk := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	opts.Now = clk.Now
	sim := pspsim.New(opts)
	checkedServe(t, sim, opts.APIBasePath)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- sim.Serve(ctx, ln) }()
	url := "http://" + ln.Addr().String()
	s := &served{
		env: &env{sim: sim, url: url, client: psp.NewHTTPClient(url, 5*time.Second), clock: clk},
		stop: sync.OnceValue(func() error {
			cancel()
			return <-done
		}),
	}
	t.Cleanup(func() { _ = s.stop() })
	return s
}

// pixObject is an API Pix PIX object received, numbered n.
func pixObject(n int) string {
	return `{"endToEndId":"` + pixID(n) + `","txid":"cob123","valor":"15.00","chave":"maria@example.com",` +
		`"horario":"2026-11-29T11:59:00.000Z","infoPagador":"obrigado"}`
}

// pixItems decodes a webhook body, which must hold one PIX.
func pixItem(t *testing.T, body []byte) map[string]json.RawMessage {
	t.Helper()
	var top struct {
		Pix []map[string]json.RawMessage `json:"pix"`
	}
	require.NoError(t, json.Unmarshal(body, &top), "%s", body)
	require.Len(t, top.Pix, 1)
	return top.Pix[0]
}

func TestWebhookOfAPixAndItsDevolucoes(t *testing.T) {
	t.Parallel()
	b := newBank(t)
	s := serve(t, pspsim.Options{WebhookURL: b.url, WebhookSecret: webhooksig.FormatSecret(webhookKey)})

	code, resp := do(t, http.MethodPost, s.url+"/sim/pix", pixObject(1))
	require.Equal(t, http.StatusAccepted, code, "%s", resp)
	require.JSONEq(t, `{"end_to_end_id":"`+pixID(1)+`","webhook":"queued"}`, string(resp))
	d := b.next(t)
	require.Equal(t, "pspsim", d.psp, "signed as webhooksig verifies")
	require.JSONEq(t, `{"pix":[`+pixObject(1)+`]}`, string(d.body), "the PIX as told")

	// A devolução in processing is no news; its outcome is.
	e := s.env
	e.setRefundBehavior(t, 1, `{"mode":"return","settle_after":"1s"}`)
	first, err := e.client.RequestRefund(t.Context(), refundReq(1, "dev1", 500))
	require.NoError(t, err)
	b.none(t)
	e.clock.Advance(time.Second)
	d = b.next(t)
	item := pixItem(t, d.body)
	require.JSONEq(t, `"`+pixID(1)+`"`, string(item["endToEndId"]))
	require.JSONEq(t, `"15.00"`, string(item["valor"]), "the PIX's own fields, unchanged")
	require.JSONEq(t, `"obrigado"`, string(item["infoPagador"]))
	require.JSONEq(t, `[{"id":"dev1","rtrId":"`+first.RtrID+`","valor":"5.00","natureza":"ORIGINAL","status":"DEVOLVIDO",
		"horario":{"solicitacao":"2026-11-29T12:00:00Z","liquidacao":"2026-11-29T12:00:01Z"}}]`, string(item["devolucoes"]))

	// A second devolução, refused at once: delivered with all of them.
	e.setRefundBehavior(t, 1, `{"mode":"reject","reason":"não"}`)
	second, err := e.client.RequestRefund(t.Context(), refundReq(1, "dev2", 100))
	require.NoError(t, err)
	d = b.next(t)
	require.JSONEq(t, `[{"id":"dev1","rtrId":"`+first.RtrID+`","valor":"5.00","natureza":"ORIGINAL","status":"DEVOLVIDO",
		"horario":{"solicitacao":"2026-11-29T12:00:00Z","liquidacao":"2026-11-29T12:00:01Z"}},
		{"id":"dev2","rtrId":"`+second.RtrID+`","valor":"1.00","natureza":"ORIGINAL","status":"NAO_REALIZADO","motivo":"não",
		"horario":{"solicitacao":"2026-11-29T12:00:01Z"}}]`, string(pixItem(t, d.body)["devolucoes"]))
	b.none(t)
	require.Zero(t, b.refused.Load())
}

// TestWebhookSecretForms: the bank's WEBHOOK_SECRETS value signs too.
func TestWebhookSecretForms(t *testing.T) {
	t.Parallel()
	for _, secret := range []string{
		webhooksig.FormatSecret(webhookKey),
		"pspsim=" + webhooksig.FormatSecret(webhookKey) + ";other=" + webhooksig.NewSecret(),
	} {
		key, err := pspsim.ParseWebhookSecret(secret)
		require.NoError(t, err)
		require.Equal(t, webhookKey, key)
	}
	key, err := pspsim.ParseWebhookSecret("")
	require.NoError(t, err)
	require.Nil(t, key)
	for _, bad := range []string{"whsec_not base64!", "whsec_", "a=b=c"} {
		_, err := pspsim.ParseWebhookSecret(bad)
		require.Error(t, err, bad)
		require.NotContains(t, err.Error(), "not base64!", "no key material in errors")
	}
}

func TestWebhookRetriesWithTheSameID(t *testing.T) {
	t.Parallel()
	b := newBank(t)
	b.fail.Store(2)
	s := serve(t, pspsim.Options{WebhookURL: b.url, WebhookSecret: webhooksig.FormatSecret(webhookKey)})
	code, _ := do(t, http.MethodPost, s.url+"/sim/pix", pixObject(1))
	require.Equal(t, http.StatusAccepted, code)

	var ids []string
	start := time.Now()
	for range 3 {
		d := b.next(t)
		require.JSONEq(t, `{"pix":[`+pixObject(1)+`]}`, string(d.body))
		ids = append(ids, d.header.Get("webhook-id"))
	}
	require.Equal(t, []string{ids[0], ids[0], ids[0]}, ids, "a message keeps its webhook-id across retries")
	require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "100ms, then 200ms of backoff")
	b.none(t)

	// News is a new message.
	_, err := s.client.RequestRefund(t.Context(), refundReq(1, "dev1", 100))
	require.NoError(t, err)
	s.clock.Advance(pspsim.DefaultSettleAfter)
	d := b.next(t)
	require.NotEqual(t, ids[0], d.header.Get("webhook-id"))
}

func TestNoWebhookForAPixNotTold(t *testing.T) {
	t.Parallel()
	b := newBank(t)
	s := serve(t, pspsim.Options{WebhookURL: b.url, WebhookSecret: webhooksig.FormatSecret(webhookKey)})
	s.setRefundBehavior(t, 1, `{"mode":"reject"}`)
	_, err := s.client.RequestRefund(t.Context(), refundReq(1, "dev1", 100))
	require.NoError(t, err)
	b.none(t)

	// Told later, the PIX is delivered with the outcome it has.
	code, _ := do(t, http.MethodPost, s.url+"/sim/pix", pixObject(1))
	require.Equal(t, http.StatusAccepted, code)
	d := b.next(t)
	require.Contains(t, string(pixItem(t, d.body)["devolucoes"]), `"status":"NAO_REALIZADO"`)
	b.none(t)
}

func TestUnsignedWebhooksWithoutASecret(t *testing.T) {
	t.Parallel()
	got := make(chan http.Header, 1)
	bankSrv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
	}))
	t.Cleanup(bankSrv.Close)
	s := serve(t, pspsim.Options{WebhookURL: bankSrv.URL})
	code, _ := do(t, http.MethodPost, s.url+"/sim/pix", pixObject(1))
	require.Equal(t, http.StatusAccepted, code)
	select {
	case h := <-got:
		require.False(t, webhooksig.HasSignature(h))
	case <-time.After(5 * time.Second):
		t.Fatal("no webhook delivered")
	}
}

func TestPostPixValidation(t *testing.T) {
	t.Parallel()
	e := setup(t) // no webhook URL: remembered, never delivered
	code, body := do(t, http.MethodPost, e.url+"/sim/pix", pixObject(1))
	require.Equal(t, http.StatusAccepted, code)
	require.JSONEq(t, `{"end_to_end_id":"`+pixID(1)+`","webhook":"disabled"}`, string(body))

	base := `"endToEndId":"` + pixID(1) + `","valor":"15.00","horario":"2026-11-29T11:59:00Z"`
	for _, tc := range []struct{ name, body string }{
		{"no endToEndId", `{"valor":"15.00","horario":"2026-11-29T11:59:00Z","chave":"k"}`},
		{"bad endToEndId", `{"endToEndId":"E1","valor":"15.00","horario":"2026-11-29T11:59:00Z","chave":"k"}`},
		{"valor as a number", `{"endToEndId":"` + pixID(1) + `","valor":15.00,"horario":"2026-11-29T11:59:00Z","chave":"k"}`},
		{"bad valor", `{"endToEndId":"` + pixID(1) + `","valor":"15","horario":"2026-11-29T11:59:00Z","chave":"k"}`},
		{"bad horario", `{"endToEndId":"` + pixID(1) + `","valor":"15.00","horario":"ontem","chave":"k"}`},
		{"neither chave nor txid", `{` + base + `}`},
		{"empty chave", `{` + base + `,"chave":""}`},
		{"bad txid", `{` + base + `,"txid":"a-b"}`},
		{"devolucoes", `{` + base + `,"chave":"k","devolucoes":[]}`},
		{"an array", `[` + pixObject(1) + `]`},
		{"null", `null`},
		{"trailing data", pixObject(1) + `{}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(t, http.MethodPost, e.url+"/sim/pix", tc.body)
			require.Equal(t, http.StatusBadRequest, code, "%s", body)
			require.Equal(t, pspsim.CodeInvalidRequest, errorCode(t, body))
		})
	}
}

// TestServeStopsTheWebhookLoop: the loop ends with Serve's context, even
// while a delivery hangs on a bank that does not answer, and nothing is
// delivered after Serve returned.
func TestServeStopsTheWebhookLoop(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	release := make(chan struct{})
	bankSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		select {
		case <-r.Context().Done():
		case <-release:
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(func() {
		close(release)
		bankSrv.Close()
	})
	s := serve(t, pspsim.Options{WebhookURL: bankSrv.URL, WebhookSecret: webhooksig.FormatSecret(webhookKey)})
	code, _ := do(t, http.MethodPost, s.url+"/sim/pix", pixObject(1))
	require.Equal(t, http.StatusAccepted, code)
	require.Eventually(t, func() bool { return calls.Load() == 1 }, 5*time.Second, 5*time.Millisecond)

	// Requests are not held up by the hanging delivery.
	start := time.Now()
	_, err := s.client.RequestRefund(t.Context(), refundReq(1, "dev1", 100))
	require.NoError(t, err)
	require.Less(t, time.Since(start), time.Second)

	start = time.Now()
	stopped := make(chan error, 1)
	go func() { stopped <- s.stop() }()
	requireReturned(t, stopped)
	require.Less(t, time.Since(start), 2*time.Second)
	after := calls.Load()
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, after, calls.Load(), "no delivery after Serve returned")
}

func TestServeRefusesABadWebhookConfiguration(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string]pspsim.Options{
		"bad secret":           {WebhookURL: "http://127.0.0.1:1/webhooks/api-pix/pix", WebhookSecret: "whsec_not base64!"},
		"url without a scheme": {WebhookURL: "127.0.0.1:8080/webhooks"},
		"url not http(s)":      {WebhookURL: "ftp://bank/webhooks"},
	} {
		t.Run(name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			err = pspsim.New(opts).Serve(t.Context(), ln)
			require.Error(t, err)
			require.NotContains(t, err.Error(), "not base64!")
			_, err = net.Dial("tcp", ln.Addr().String())
			require.Error(t, err, "the listener is closed")
		})
	}
}

// TestRefundRequestLog: a devolução's request log line names it.
func TestRefundRequestLog(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	sim := pspsim.New(pspsim.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	_, err := psp.NewHTTPClient(srv.URL, 5*time.Second).RequestRefund(t.Context(), refundReq(1, "dev1", 100))
	require.NoError(t, err)
	line := strings.TrimSpace(logs.String())
	require.Contains(t, line, `"end_to_end_id":"`+pixID(1)+`"`)
	require.Contains(t, line, `"refund_id":"dev1"`)
	require.Contains(t, line, `"outcome":"created"`)
	require.Equal(t, 1, bytes.Count([]byte(line), []byte("\n"))+1)
}

// refuse: the API Pix's refusal, 400 PixDevolucaoInvalida on every PUT, nothing made, and
// the devolução's GET answers 404.
func TestRefundRefused(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setRefundBehavior(t, 1, `{"mode":"refuse"}`)
	for range 2 {
		code, body, err := putRefund(t, refundURL(e.url, 1, "dev1"), `{"valor":"1.00"}`)
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, code)
		require.Equal(t, pspsim.ProblemPixDevolucaoInvalida, problem(t, body).name)
	}
	_, ok := e.sim.Refund(pixID(1), "dev1")
	require.False(t, ok, "a refused PUT makes nothing")
	_, err := e.client.RefundStatus(t.Context(), pixID(1), "dev1")
	require.ErrorIs(t, err, psp.ErrNotFound)
	_, err = e.client.RequestRefund(t.Context(), refundReq(1, "dev1", 100))
	var refused *psp.RequestError
	require.ErrorAs(t, err, &refused)
	require.Equal(t, http.StatusBadRequest, refused.StatusCode)
}
