package pspspec_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/tooling/oas"
	"github.com/pixbank/pix/tooling/pspspec"
)

// examples are the specification's own examples (bacen/pix-api
// openapi.yaml 2.9.0, components.examples), as data: getPix1's items,
// which the specification writes as allOf/$ref to pixResponse1..3, are
// those examples' values.
func examples(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	b, err := os.ReadFile("testdata/bcb-examples.json")
	require.NoError(t, err)
	var ex map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &ex))
	return ex
}

const (
	e2e     = "E12345678202009091221abcdef12345"
	problem = "application/problem+json"
)

func jsonHeader(contentType string) http.Header {
	return http.Header{"Content-Type": {contentType}}
}

func authed(method, target, body string) *http.Request {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer opaque-token")
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	return r
}

// check is one of the specification's examples in the exchange it is an
// example of.
type check struct {
	name string
	// request: the example is a request body; otherwise an answer with
	// status and content type.
	request     bool
	method      string
	target      string
	status      int
	contentType string
	// webhook: the example is a webhook's Pix, checked as {"pix":[it]}.
	webhook bool
}

func (c check) run(t *testing.T, body []byte) error {
	t.Helper()
	switch {
	case c.webhook:
		return pspspec.ValidateWebhook([]byte(`{"pix":[` + string(body) + `]}`))
	case c.request:
		return pspspec.ValidateRequest(authed(c.method, c.target, string(body)), body)
	}
	return pspspec.ValidateResponse(authed(c.method, c.target, ""), c.status, jsonHeader(c.contentType), body)
}

// knownDefect is an example of the specification that departs from its
// own schema: it must fail here for that reason only, and pass once fixed.
type knownDefect struct {
	why  string
	want string // in the error
	fix  func(map[string]any)
}

// The specification's examples that contradict its own schemas.
var knownDefects = map[string]knownDefect{
	"pixResponse2": {why: "endToEndId has 34 characters; EndToEndId is 32", want: "endToEndId",
		fix: func(m map[string]any) { m["endToEndId"] = m["endToEndId"].(string)[:32] }},
	"pixResponse3": {why: "endToEndId has 34 characters; EndToEndId is 32", want: "endToEndId",
		fix: func(m map[string]any) { m["endToEndId"] = m["endToEndId"].(string)[:32] }},
	"getPix1": {why: "its items are pixResponse1..3: two of them with a 34-character endToEndId", want: "endToEndId",
		fix: func(m map[string]any) {
			for _, p := range m["pix"].([]any) {
				p := p.(map[string]any)
				p["endToEndId"] = p["endToEndId"].(string)[:32]
			}
		}},
	"pixWebhook1": {why: "devolucoes is one object; Pix.devolucoes is an array", want: "devolucoes",
		fix: func(m map[string]any) { m["devolucoes"] = []any{m["devolucoes"]} }},
}

func TestTheSpecificationsExamplesKeepToTheDocument(t *testing.T) {
	t.Parallel()
	ex := examples(t)
	checks := []check{
		{name: "pixResponse1", method: "GET", target: "/pix/" + e2e, status: 200, contentType: "application/json"},
		{name: "pixResponse2", method: "GET", target: "/pix/" + e2e, status: 200, contentType: "application/json"},
		{name: "pixResponse3", method: "GET", target: "/pix/" + e2e, status: 200, contentType: "application/json"},
		{name: "getPix1", method: "GET", target: "/pix?inicio=2020-04-01T00:00:00Z&fim=2020-04-01T23:59:59Z", status: 200,
			contentType: "application/json"},
		{name: "devolucaoResponse1", method: "PUT", target: "/pix/" + e2e + "/devolucao/123456", status: 201, contentType: "application/json"},
		{name: "devolucaoResponse1", method: "GET", target: "/pix/" + e2e + "/devolucao/123456", status: 200, contentType: "application/json"},
		{name: "devolucaoResponse2", method: "GET", target: "/pix/" + e2e + "/devolucao/502", status: 200, contentType: "application/json"},
		{name: "devolucaoSolicitada1", request: true, method: "PUT", target: "/pix/" + e2e + "/devolucao/123456"},
		{name: "pixWebhook1", webhook: true},
		{name: "pixWebhook2", webhook: true},
		{name: "webhookBody1", request: true, method: "PUT", target: "/webhook/40a0932d-1918-4eee-845d-35a2da1690dc"},
		{name: "webhookResponse1", method: "GET", target: "/webhook/40a0932d-1918-4eee-845d-35a2da1690dc", status: 200,
			contentType: "application/json"},
		{name: "RequisicaoInvalidaDevolucaoExample1", method: "PUT", target: "/pix/" + e2e + "/devolucao/1", status: 400, contentType: problem},
		{name: "RequisicaoInvalidaWebhookExample1", method: "PUT", target: "/webhook/k", status: 400, contentType: problem},
		{name: "AcessoNegadoExample1", method: "GET", target: "/pix?inicio=2020-04-01T00:00:00Z&fim=2020-04-02T00:00:00Z", status: 403,
			contentType: problem},
		{name: "NaoEncontradoExample1", method: "GET", target: "/pix/" + e2e + "/devolucao/1", status: 404, contentType: problem},
		{name: "NaoEncontradoExample1", method: "DELETE", target: "/webhook/k", status: 404, contentType: problem},
		{name: "ServicoIndisponivelExample1", method: "PUT", target: "/pix/" + e2e + "/devolucao/1", status: 503, contentType: problem},
	}
	for _, c := range checks {
		t.Run(c.name+" "+c.method+" "+strings.SplitN(c.target, "?", 2)[0], func(t *testing.T) {
			body, ok := ex[c.name]
			require.True(t, ok, "no example %s", c.name)
			err := c.run(t, body)
			defect, known := knownDefects[c.name]
			if !known {
				require.NoError(t, err)
				return
			}
			require.Error(t, err, "the specification's example departs from its schema (%s): the document must see it", defect.why)
			require.Contains(t, err.Error(), defect.want)
			var m map[string]any
			require.NoError(t, json.Unmarshal(body, &m))
			defect.fix(m)
			fixed, err := json.Marshal(m)
			require.NoError(t, err)
			require.NoError(t, c.run(t, fixed), "fixed (%s), the example keeps to the document", defect.why)
		})
	}
}

// Each departure from the document is found: a check that could not fail
// would prove nothing.
func TestValidationFindsWhatDepartsFromTheDocument(t *testing.T) {
	t.Parallel()
	pix := `{"endToEndId":"` + e2e + `","valor":"10.00","horario":"2026-11-29T12:00:00Z"}`
	page := func(pix string) string {
		return `{"parametros":{"inicio":"2026-11-29T00:00:00Z","fim":"2026-11-30T00:00:00Z","paginacao":{"paginaAtual":0,` +
			`"itensPorPagina":100,"quantidadeDePaginas":1,"quantidadeTotalDeItens":1}},"pix":[` + pix + `]}`
	}
	list := "/pix?inicio=2026-11-29T00:00:00Z&fim=2026-11-30T00:00:00Z"
	type answer struct {
		method, target string
		status         int
		header         http.Header
		body           string
	}
	good := []answer{
		{"GET", list, 200, jsonHeader("application/json"), page(pix)},
		{"GET", list + "&paginacao.paginaAtual=3&paginacao.itensPorPagina=1000&txid=abc", 200, jsonHeader("application/json"), page(pix)},
		{"GET", list, 400, jsonHeader(problem), `{"type":"https://pix.bcb.gov.br/api/v2/error/PixConsultaInvalida","title":"x","status":400}`},
		{"GET", list, 401, http.Header{"Www-Authenticate": {`Bearer error="invalid_token"`}}, ""},
		{"PUT", "/pix/" + e2e + "/devolucao/d1", 400, jsonHeader(problem),
			`{"type":"https://pix.bcb.gov.br/api/v2/error/PixDevolucaoInvalida","title":"x","status":400,"violacoes":[{"razao":"r","propriedade":"valor"}]}`},
		{"PUT", "/webhook/k", 200, http.Header{}, ""},
		{"DELETE", "/webhook/k", 204, http.Header{}, ""},
		{"POST", "/transfers", 422, jsonHeader("application/json"), `{"end_to_end_id":"` + e2e + `","status":"rejected","reason":"closed"}`},
		{"POST", "/transfers", 409, jsonHeader("application/json"), `{"error":{"code":"duplicate_transfer","message":"m"}}`},
	}
	for _, a := range good {
		require.NoError(t, pspspec.ValidateResponse(authed(a.method, a.target, ""), a.status, a.header, []byte(a.body)), "%s %s → %d", a.method, a.target, a.status)
	}
	bad := map[string]answer{
		"a PIX without valor":            {"GET", list, 200, jsonHeader("application/json"), page(strings.Replace(pix, `"valor":"10.00",`, "", 1))},
		"a valor with one decimal":       {"GET", list, 200, jsonHeader("application/json"), page(strings.Replace(pix, `10.00`, `10.0`, 1))},
		"an endToEndId of 33":            {"GET", list, 200, jsonHeader("application/json"), page(strings.Replace(pix, e2e, e2e+"1", 1))},
		"a page without pix":             {"GET", list, 200, jsonHeader("application/json"), strings.Replace(page(pix), `,"pix":[`+pix+`]`, "", 1)},
		"no page at all":                 {"GET", list, 200, jsonHeader("application/json"), strings.Replace(page(pix), `"quantidadeDePaginas":1,`, `"quantidadeDePaginas":0,`, 1)},
		"a status the spec has not":      {"PUT", "/pix/" + e2e + "/devolucao/d1", 409, jsonHeader(problem), `{"type":"https://pix.bcb.gov.br/api/v2/error/PixDevolucaoInvalida","title":"x","status":409}`},
		"an invented problem type":       {"PUT", "/pix/" + e2e + "/devolucao/d1", 400, jsonHeader(problem), `{"type":"https://pix.bcb.gov.br/api/v2/error/DevolucaoOperacaoInvalida","title":"x","status":400}`},
		"the bank's envelope for a 404":  {"GET", "/pix/" + e2e, 404, jsonHeader("application/json"), `{"error":{"code":"not_found","message":"m"}}`},
		"a 401 without WWW-Authenticate": {"GET", list, 401, http.Header{}, ""},
		"a 403 that is not AcessoNegado": {"GET", list, 403, jsonHeader(problem), `{"type":"https://pix.bcb.gov.br/api/v2/error/NaoEncontrado","title":"x","status":403}`},
		"a devolução without rtrId": {"GET", "/pix/" + e2e + "/devolucao/d1", 200, jsonHeader("application/json"),
			`{"id":"d1","valor":"1.00","horario":{"solicitacao":"2026-11-29T12:00:00Z"},"status":"DEVOLVIDO"}`},
		"an undocumented route": {"GET", "/cob/abc", 200, jsonHeader("application/json"), `{}`},
	}
	for name, a := range bad {
		require.Error(t, pspspec.ValidateResponse(authed(a.method, a.target, ""), a.status, a.header, []byte(a.body)), name)
	}

	type request struct {
		r    *http.Request
		body string
	}
	unauthed := httptest.NewRequest("GET", list, nil)
	goodRequests := []request{
		{authed("GET", list, ""), ""},
		{authed("PUT", "/pix/"+e2e+"/devolucao/d1", `{"valor":"1.00","natureza":"ORIGINAL","descricao":"d"}`), `{"valor":"1.00","natureza":"ORIGINAL","descricao":"d"}`},
		{authed("PUT", "/webhook/k", `{"webhookUrl":"https://bank.example/webhooks/api-pix"}`), `{"webhookUrl":"https://bank.example/webhooks/api-pix"}`},
		{authed("POST", "/transfers", `{"end_to_end_id":"`+e2e+`","account_id":"a","amount_cents":1,"pix_key":"k"}`),
			`{"end_to_end_id":"` + e2e + `","account_id":"a","amount_cents":1,"pix_key":"k"}`},
		{authed("GET", "/transfers/"+e2e, ""), ""},
	}
	for _, q := range goodRequests {
		require.NoError(t, pspspec.ValidateRequest(q.r, []byte(q.body)), "%s %s", q.r.Method, q.r.URL)
	}
	badRequests := map[string]request{
		"no bearer token":             {unauthed, ""},
		"no fim":                      {authed("GET", "/pix?inicio=2026-11-29T00:00:00Z", ""), ""},
		"inicio not a date-time":      {authed("GET", "/pix?inicio=yesterday&fim=2026-11-30T00:00:00Z", ""), ""},
		"1001 a page":                 {authed("GET", list+"&paginacao.itensPorPagina=1001", ""), ""},
		"a negative page":             {authed("GET", list+"&paginacao.paginaAtual=-1", ""), ""},
		"a devolução without valor":   {authed("PUT", "/pix/"+e2e+"/devolucao/d1", `{"natureza":"ORIGINAL"}`), `{"natureza":"ORIGINAL"}`},
		"a field the spec has not":    {authed("PUT", "/pix/"+e2e+"/devolucao/d1", `{"valor":"1.00","motivo":"x"}`), `{"valor":"1.00","motivo":"x"}`},
		"a natureza for the PSP only": {authed("PUT", "/pix/"+e2e+"/devolucao/d1", `{"valor":"1.00","natureza":"MED_FRAUDE"}`), `{"valor":"1.00","natureza":"MED_FRAUDE"}`},
		"a devolução id of 36":        {authed("GET", "/pix/"+e2e+"/devolucao/"+strings.Repeat("a", 36), ""), ""},
		"a transfer in floats":        {authed("POST", "/transfers", `{"end_to_end_id":"`+e2e+`","account_id":"a","amount_cents":1.5,"pix_key":"k"}`), `{"end_to_end_id":"` + e2e + `","account_id":"a","amount_cents":1.5,"pix_key":"k"}`},
	}
	for name, q := range badRequests {
		require.Error(t, pspspec.ValidateRequest(q.r, []byte(q.body)), name)
	}
	require.Error(t, pspspec.ValidateWebhook([]byte(`{"pix":[{"endToEndId":"`+e2e+`","valor":"10.00"}]}`)), "a webhook's PIX without horario")
}

func TestTheBasePathComesBeforeTheDocumentsPaths(t *testing.T) {
	t.Parallel()
	spec, err := pspspec.New(pspspec.Options{BasePath: "/api/v2/"})
	require.NoError(t, err)
	body := `{"valor":"1.00"}`
	require.NoError(t, spec.ValidateRequest(authed("PUT", "/api/v2/pix/"+e2e+"/devolucao/d1", body), []byte(body)))
	require.Error(t, spec.ValidateRequest(authed("PUT", "/pix/"+e2e+"/devolucao/d1", body), []byte(body)), "outside the base path")
	require.Error(t, spec.ValidateRequest(authed("PUT", "/api/v2x/pix/"+e2e+"/devolucao/d1", body), []byte(body)), "outside the base path")
	require.True(t, spec.Documented(authed("GET", "/api/v2/transfers/"+e2e, "")))
	require.False(t, spec.Documented(authed("GET", "/api/v2/behaviors", "")))

	open, err := pspspec.New(pspspec.Options{Unauthenticated: true})
	require.NoError(t, err)
	require.NoError(t, open.ValidateRequest(httptest.NewRequest("GET", "/pix/"+e2e, nil), nil), "a PSP without OAuth")
}

// The scopes are the specification's, operation by operation; the
// transfer interface is marked as the bank's own.
func TestOperationsCarryTheSpecificationsScopes(t *testing.T) {
	t.Parallel()
	spec, err := pspspec.New(pspspec.Options{})
	require.NoError(t, err)
	got := map[string][]string{}
	var extensions []string
	for _, op := range spec.Operations() {
		got[op.String()] = op.Scopes
		if op.Extension {
			extensions = append(extensions, op.String())
		}
	}
	require.Equal(t, map[string][]string{
		"GET /pix":                        {"pix.read"},
		"GET /pix/{e2eid}":                {"pix.read"},
		"PUT /pix/{e2eid}/devolucao/{id}": {"pix.write"},
		"GET /pix/{e2eid}/devolucao/{id}": {"pix.read"},
		"PUT /webhook/{chave}":            {"webhook.write"},
		"GET /webhook/{chave}":            {"webhook.read"},
		"DELETE /webhook/{chave}":         {"webhook.write"},
		"POST /transfers":                 {"pix.write"},
		"GET /transfers/{end_to_end_id}":  {"pix.read"},
	}, got)
	require.ElementsMatch(t, []string{"POST /transfers", "GET /transfers/{end_to_end_id}"}, extensions)
}

func TestTheDocumentIsValidOpenAPI(t *testing.T) {
	t.Parallel()
	doc, err := oas.Parse("api-pix", pspspec.Document)
	require.NoError(t, err)
	require.NoError(t, doc.Validate())
}
