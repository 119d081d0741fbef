package psp_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/internal/psp/psptest"
)

const (
	refundID = psptest.RefundID
	rtrID    = psptest.RtrID
)

var (
	refund     = psptest.Refund
	devolucao  = psptest.Devolucao
	processing = psptest.Processing
)

func TestRequestRefund(t *testing.T) {
	type seen struct {
		method, path, contentType string
		body                      map[string]any
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := seen{method: r.Method, path: r.URL.EscapedPath(), contentType: r.Header.Get("Content-Type")}
		if r.Method == http.MethodPut {
			_ = json.NewDecoder(r.Body).Decode(&s.body)
			w.WriteHeader(http.StatusCreated)
		}
		got <- s
		_, _ = w.Write([]byte(processing))
	}))
	t.Cleanup(srv.Close)
	c := psp.NewHTTPClient(srv.URL, time.Second)

	res, err := c.RequestRefund(t.Context(), refund)
	require.NoError(t, err)
	want := psp.RefundResult{
		EndToEndID: e2e, ID: refundID, RtrID: rtrID, AmountCents: 1050, Status: psp.RefundInProcessing,
		RequestedAt: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC),
	}
	require.Equal(t, want, res)
	require.True(t, res.Matches(refund))
	require.Equal(t, seen{http.MethodPut, "/pix/" + e2e + "/devolucao/" + refundID, "application/json",
		map[string]any{"valor": "10.50", "natureza": "ORIGINAL", "descricao": "estorno"}}, <-got)

	// Another nature is sent as given; no description, no descricao.
	_, err = c.RequestRefund(t.Context(), psp.RefundRequest{EndToEndID: e2e, ID: refundID, AmountCents: 1050, Nature: "RETIRADA"})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"valor": "10.50", "natureza": "RETIRADA"}, (<-got).body)

	res, err = c.RefundStatus(t.Context(), e2e, refundID)
	require.NoError(t, err)
	require.Equal(t, want, res)
	require.Equal(t, seen{method: http.MethodGet, path: "/pix/" + e2e + "/devolucao/" + refundID}, <-got)
}

func TestRefundOutcomes(t *testing.T) {
	returned := devolucao(refundID, "10.50", "DEVOLVIDO", ``)
	returned = strings.Replace(returned, `"solicitacao":"2026-11-29T12:00:00Z"`,
		`"solicitacao":"2026-11-29T12:00:00Z","liquidacao":"2026-11-29T12:00:01.5-03:00"`, 1)
	res, err := psp.NewHTTPClient(server(t, 200, returned).URL, time.Second).RefundStatus(t.Context(), e2e, refundID)
	require.NoError(t, err)
	require.Equal(t, psp.RefundReturned, res.Status)
	require.True(t, res.SettledAt.Equal(time.Date(2026, 11, 29, 15, 0, 1, 5e8, time.UTC)), "%v", res.SettledAt)
	require.Empty(t, res.Reason)

	// A refusal of the devolução is a result, not an error, at once (201)
	// or later.
	notDone := devolucao(refundID, "10.50", "NAO_REALIZADO", `,"motivo":"valor excede o valor da PIX"`)
	for _, code := range []int{200, 201} {
		res, err = psp.NewHTTPClient(server(t, code, notDone).URL, time.Second).RequestRefund(t.Context(), refund)
		require.NoError(t, err)
		require.Equal(t, psp.RefundNotDone, res.Status)
		require.Equal(t, "valor excede o valor da PIX", res.Reason)
		require.True(t, res.SettledAt.IsZero())
		require.Equal(t, psp.AnswerResult, psp.Classify(err))
	}
}

func TestRefundAnswerTable(t *testing.T) {
	errBody := `{"error":{"code":"x","message":"y"}}`
	reused := `{"error":{"code":"refund_id_reused","message":"another valor"}}`
	for _, row := range []struct {
		status    int
		body      string
		put, get  psp.Answer
		putStatus int // the *RequestError's StatusCode of the PUT, if any
	}{
		{200, processing, psp.AnswerResult, psp.AnswerResult, 0},
		{201, processing, psp.AnswerResult, psp.AnswerTransient, 0},             // a GET is not answered 201
		{404, errBody, psp.AnswerRequestRefused, psp.AnswerRequestRefused, 404}, // a gateway's 404 says nothing of the record
		{404, problem("NaoEncontrado", 404), psp.AnswerRequestRefused, psp.AnswerNotFound, 404},
		{404, problem("PixDevolucaoNaoEncontrada", 404), psp.AnswerRequestRefused, psp.AnswerNotFound, 404},
		{404, `{"type":"https://gateway.example/error/NaoEncontrado","title":"x","status":404}`, psp.AnswerRequestRefused, psp.AnswerRequestRefused, 404},
		// Classify reads the type alone; the saga takes it from a GET for a refused request.
		{400, problem("PixDevolucaoInvalida", 400), psp.AnswerRefundRefused, psp.AnswerRefundRefused, 400},
		{422, problem("PixDevolucaoInvalida", 422), psp.AnswerRequestRefused, psp.AnswerRequestRefused, 422},
		{400, `{"type":"https://psp.example/error/PixDevolucaoInvalida","title":"x","status":400}`, psp.AnswerRequestRefused, psp.AnswerRequestRefused, 400},
		{400, `{"error":{"code":"PixDevolucaoInvalida","message":"x"}}`, psp.AnswerRequestRefused, psp.AnswerRequestRefused, 400},
		{403, problem("AcessoNegado", 403), psp.AnswerRequestRefused, psp.AnswerRequestRefused, 403},
		{503, problem("ServicoIndisponivel", 503), psp.AnswerTransient, psp.AnswerTransient, 0},
		{409, reused, psp.AnswerRequestRefused, psp.AnswerRequestRefused, 409},
		{409, errBody, psp.AnswerAlreadySubmitted, psp.AnswerAlreadySubmitted, 409},
		{400, errBody, psp.AnswerRequestRefused, psp.AnswerRequestRefused, 400},
		{401, errBody, psp.AnswerRequestRefused, psp.AnswerRequestRefused, 401},
		{403, errBody, psp.AnswerRequestRefused, psp.AnswerRequestRefused, 403},
		{422, processing, psp.AnswerRequestRefused, psp.AnswerRequestRefused, 422},
		{408, errBody, psp.AnswerTransient, psp.AnswerTransient, 0},
		{425, errBody, psp.AnswerTransient, psp.AnswerTransient, 0},
		{429, errBody, psp.AnswerTransient, psp.AnswerTransient, 0},
		{500, errBody, psp.AnswerTransient, psp.AnswerTransient, 0},
		{502, "bad gateway", psp.AnswerTransient, psp.AnswerTransient, 0},
		{503, errBody, psp.AnswerTransient, psp.AnswerTransient, 0},
		{204, "", psp.AnswerTransient, psp.AnswerTransient, 0},
		{302, "", psp.AnswerTransient, psp.AnswerTransient, 0},
	} {
		t.Run(fmt.Sprintf("%d %s", row.status, row.body), func(t *testing.T) {
			c := psp.NewHTTPClient(server(t, row.status, row.body).URL, time.Second)
			res, err := c.RequestRefund(t.Context(), refund)
			require.Equal(t, row.put, psp.Classify(err), "put: %v", err)
			if row.put == psp.AnswerResult {
				require.True(t, res.Matches(refund))
			}
			if reqErr, ok := errors.AsType[*psp.RequestError](err); ok || row.putStatus != 0 {
				require.True(t, ok, "want a RequestError: %v", err)
				require.Equal(t, row.putStatus, reqErr.StatusCode)
			}
			_, err = c.RefundStatus(t.Context(), e2e, refundID)
			require.Equal(t, row.get, psp.Classify(err), "get: %v", err)
		})
	}
}

// TestRefundIDReusedIsNotAlreadySubmitted: a 409 that says the id is
// another devolução's must not send the saga to ask the status of a
// devolução that is not ours; the transfers' 409 is unchanged.
func TestRefundIDReusedIsNotAlreadySubmitted(t *testing.T) {
	c := psp.NewHTTPClient(server(t, 409, `{"error":{"code":"refund_id_reused","message":"another valor"}}`).URL, time.Second)
	_, err := c.RequestRefund(t.Context(), refund)
	require.NotErrorIs(t, err, psp.ErrAlreadySubmitted)
	require.NotErrorIs(t, err, psp.ErrTransient)
	reqErr, ok := errors.AsType[*psp.RequestError](err)
	require.True(t, ok, "want a RequestError: %v", err)
	require.Equal(t, &psp.RequestError{StatusCode: 409, Code: psp.CodeRefundIDReused, Message: "another valor"}, reqErr)

	require.ErrorIs(t, &psp.RequestError{StatusCode: 409, Code: "duplicate_transfer"}, psp.ErrAlreadySubmitted)
	require.ErrorIs(t, &psp.RequestError{StatusCode: 409}, psp.ErrAlreadySubmitted)
	require.NotErrorIs(t, &psp.RequestError{StatusCode: 409, Code: psp.CodeEndToEndIDReused}, psp.ErrAlreadySubmitted)
	require.NotErrorIs(t, &psp.RequestError{StatusCode: 400, Code: "x"}, psp.ErrAlreadySubmitted)
}

// TestRefundLostAnswer: the PSP makes the devolução and the answer is cut;
// the PUT repeated with the same id returns the devolução it made.
func TestRefundLostAnswer(t *testing.T) {
	var mu sync.Mutex
	var held []byte // the devolução the PSP made, nil before
	var puts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		puts.Add(1)
		mu.Lock()
		defer mu.Unlock()
		if held == nil {
			held = []byte(processing)
			// The connection is cut without a status line.
			panic(http.ErrAbortHandler)
		}
		_, _ = w.Write(held)
	}))
	t.Cleanup(srv.Close)
	c := psp.NewHTTPClient(srv.URL, time.Second)

	_, err := c.RequestRefund(t.Context(), refund)
	require.ErrorIs(t, err, psp.ErrTransient)
	require.Equal(t, psp.AnswerTransient, psp.Classify(err))

	res, err := c.RequestRefund(t.Context(), refund)
	require.NoError(t, err)
	require.True(t, res.Matches(refund))
	require.Equal(t, rtrID, res.RtrID)
	require.Equal(t, int32(2), puts.Load(), "a PUT is not replayed by the transport")
}

// TestRefundUnintelligibleAnswers: an answer that does not say exactly
// what became of the devolução asked for is transient, never a result.
func TestRefundUnintelligibleAnswers(t *testing.T) {
	for _, tc := range []struct{ name, body string }{
		{"not json", `<html>`},
		{"empty", ``},
		{"another id", devolucao("dev2", "10.50", "EM_PROCESSAMENTO", "")},
		{"no id", strings.Replace(processing, `"id":"dev1",`, ``, 1)},
		{"unknown status", devolucao(refundID, "10.50", "DEVOLVENDO", "")},
		{"transfer status", devolucao(refundID, "10.50", "settled", "")},
		{"valor without decimals", devolucao(refundID, "10", "EM_PROCESSAMENTO", "")},
		{"valor with one decimal", devolucao(refundID, "10.5", "EM_PROCESSAMENTO", "")},
		{"valor with three decimals", devolucao(refundID, "10.500", "EM_PROCESSAMENTO", "")},
		{"valor with exponent", devolucao(refundID, "1e3", "EM_PROCESSAMENTO", "")},
		{"negative valor", devolucao(refundID, "-10.50", "EM_PROCESSAMENTO", "")},
		{"zero valor", devolucao(refundID, "0.00", "EM_PROCESSAMENTO", "")},
		{"valor with comma", devolucao(refundID, "10,50", "EM_PROCESSAMENTO", "")},
		{"valor of 11 digits", devolucao(refundID, "12345678901.00", "EM_PROCESSAMENTO", "")},
		{"valor as a number", strings.Replace(processing, `"valor":"10.50"`, `"valor":10.50`, 1)},
		{"no rtrId", strings.Replace(processing, `"rtrId":"`+rtrID+`",`, ``, 1)},
		{"rtrId of a PIX", strings.Replace(processing, rtrID, "E"+rtrID[1:], 1)},
		{"no solicitacao", strings.Replace(processing, `"solicitacao":"2026-11-29T12:00:00Z"`, ``, 1)},
		{"bad solicitacao", strings.Replace(processing, `2026-11-29T12:00:00Z`, `yesterday`, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := psp.NewHTTPClient(server(t, 200, tc.body).URL, time.Second)
			_, err := c.RequestRefund(t.Context(), refund)
			require.ErrorIs(t, err, psp.ErrTransient)
			_, err = c.RefundStatus(t.Context(), e2e, refundID)
			require.ErrorIs(t, err, psp.ErrTransient)
		})
	}
}

func TestRefundTimeoutIsTransient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	c := psp.NewHTTPClient(srv.URL, 50*time.Millisecond)
	_, err := c.RequestRefund(t.Context(), refund)
	require.ErrorIs(t, err, psp.ErrTransient)
	_, err = c.RefundStatus(t.Context(), e2e, refundID)
	require.ErrorIs(t, err, psp.ErrTransient)

	_, err = psp.NewHTTPClient("http://127.0.0.1:1", time.Second).RequestRefund(t.Context(), refund)
	require.ErrorIs(t, err, psp.ErrTransient, "connection refused")
}

// TestInvalidRefundIsNotSent: a request the PSP could only refuse is
// refused here, as a RequestError, never as a transient error retried for
// ever nor (on a status query) as "not found".
func TestInvalidRefundIsNotSent(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusNotFound)
	}))
	t.Cleanup(srv.Close)
	c := psp.NewHTTPClient(srv.URL, time.Second)
	for name, change := range map[string]func(*psp.RefundRequest){
		"empty id":            func(r *psp.RefundRequest) { r.ID = "" },
		"id with a slash":     func(r *psp.RefundRequest) { r.ID = "a/b" },
		"id of 36":            func(r *psp.RefundRequest) { r.ID = strings.Repeat("a", 36) },
		"short end_to_end_id": func(r *psp.RefundRequest) { r.EndToEndID = "E123" },
		"rtrId for e2e":       func(r *psp.RefundRequest) { r.EndToEndID = rtrID },
		"zero amount":         func(r *psp.RefundRequest) { r.AmountCents = 0 },
		"negative amount":     func(r *psp.RefundRequest) { r.AmountCents = -100 },
		"amount too large":    func(r *psp.RefundRequest) { r.AmountCents = psp.MaxValorCents + 1 },
		"long description":    func(r *psp.RefundRequest) { r.Description = strings.Repeat("ã", 141) },
	} {
		t.Run(name, func(t *testing.T) {
			r := refund
			change(&r)
			_, err := c.RequestRefund(t.Context(), r)
			require.Equal(t, psp.AnswerRequestRefused, psp.Classify(err), "%v", err)
			reqErr, ok := errors.AsType[*psp.RequestError](err)
			require.True(t, ok)
			require.Zero(t, reqErr.StatusCode)
			if r.EndToEndID != refund.EndToEndID || r.ID != refund.ID {
				_, err = c.RefundStatus(t.Context(), r.EndToEndID, r.ID)
				require.Equal(t, psp.AnswerRequestRefused, psp.Classify(err), "%v", err)
			}
		})
	}
	require.Zero(t, calls.Load(), "nothing was sent")

	// The limits themselves are sent.
	r := refund
	r.AmountCents, r.Description, r.ID = psp.MaxValorCents, strings.Repeat("ã", 140), strings.Repeat("a", 35)
	_, err := c.RequestRefund(t.Context(), r)
	reqErr, ok := errors.AsType[*psp.RequestError](err)
	require.True(t, ok, "%v", err)
	require.Equal(t, http.StatusNotFound, reqErr.StatusCode)
	require.Equal(t, int32(1), calls.Load())
}

func TestValor(t *testing.T) {
	for cents, valor := range map[int64]string{
		1: "0.01", 10: "0.10", 99: "0.99", 100: "1.00", 1050: "10.50", 123456: "1234.56",
		psp.MaxValorCents: "9999999999.99",
	} {
		require.Equal(t, valor, psp.FormatValor(cents))
		back, err := psp.ParseValor(valor)
		require.NoError(t, err, valor)
		require.Equal(t, cents, back, valor)
	}
	require.Equal(t, "-0.05", psp.FormatValor(-5))
	for _, bad := range []string{"", "0.00", "1", "1.0", "1.000", ".50", "1.", "+1.00", "-1.00", "1e2", " 1.00", "1.00 ",
		"12345678901.00", "١.٠٠", "0x1.00", "1,00"} {
		_, err := psp.ParseValor(bad)
		require.Error(t, err, "%q", bad)
	}
	v, err := psp.ParseValor("0000000001.00")
	require.NoError(t, err)
	require.Equal(t, int64(100), v)
}

func TestRefundStatusValues(t *testing.T) {
	for s, final := range map[psp.RefundStatus]bool{psp.RefundInProcessing: false, psp.RefundReturned: true, psp.RefundNotDone: true} {
		require.True(t, s.Valid())
		require.Equal(t, final, s.Final())
	}
	for _, s := range []psp.RefundStatus{"", "devolvido", "settled", "REJEITADO"} {
		require.False(t, s.Valid())
		require.False(t, s.Final())
	}
}

func TestRefundMatches(t *testing.T) {
	res := psp.RefundResult{EndToEndID: e2e, ID: refundID, RtrID: rtrID, AmountCents: 1050, Status: psp.RefundReturned}
	require.True(t, res.Matches(refund))
	other := refund
	other.AmountCents++
	require.False(t, res.Matches(other), "another amount")
	other = refund
	other.ID = "dev2"
	require.False(t, res.Matches(other), "another id")
	other = refund
	other.EndToEndID = "E00000000000000000000000000000000"[:32]
	require.False(t, res.Matches(other), "another PIX")
}

// problem is the API Pix's RFC 7807 problem of type name.
func problem(name string, status int) string {
	return fmt.Sprintf(`{"type":"%s%s","title":"%s","status":%d,"detail":"fora do prazo"}`, psp.ProblemTypePrefix, name, name, status)
}

// The spec's RFC 7807 problem bodies carry the PSP's type in full: the
// refusal of a devolução from a PSP that speaks the spec is recognised,
// and its words kept, bounded.
func TestProblemBodiesCarryTheType(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(problem("PixDevolucaoInvalida", 400)))
	}))
	defer srv.Close()
	c := psp.NewHTTPClient(srv.URL, time.Second)
	_, err := c.RequestRefund(t.Context(), psp.RefundRequest{EndToEndID: "E1234567820261129120000000000001", ID: "r1", AmountCents: 100})
	var refused *psp.RequestError
	require.ErrorAs(t, err, &refused)
	require.Equal(t, psp.ProblemPixDevolucaoInvalida, refused.Type)
	require.Equal(t, "https://pix.bcb.gov.br/api/v2/error/PixDevolucaoInvalida", refused.Type)
	require.Contains(t, refused.Message, "fora do prazo")
	require.Equal(t, psp.AnswerRefundRefused, psp.Classify(err))

	long := `{"type":"about:blank","title":"` + strings.Repeat("ã", 500) + `","status":400}`
	_, err = psp.NewHTTPClient(server(t, 400, long).URL, time.Second).RequestRefund(t.Context(), refund)
	require.ErrorAs(t, err, &refused)
	require.LessOrEqual(t, len(refused.Message), 210, "a PSP's words are bounded")
	require.True(t, utf8.ValidString(refused.Message))
}
