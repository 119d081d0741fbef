package apicontract_test

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/tooling/apicontract"
)

const adminToken = "admin-token-of-the-test"

func load(t *testing.T) *apicontract.Contract {
	t.Helper()
	c, err := apicontract.Load(apicontract.Options{AdminToken: adminToken})
	require.NoError(t, err)
	return c
}

// jwt is a token whose claims grant scope (unsigned: the contract reads
// the claims, the service verifies them).
func jwt(scope string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"EdDSA"}`)) + "." + enc([]byte(`{"sub":"app","scope":"`+scope+`"}`)) + ".c2ln"
}

func signed() http.Header {
	return http.Header{"Content-Type": {"application/json"}, "Webhook-Id": {"msg_1"}, "Webhook-Timestamp": {"1764417600"},
		"Webhook-Signature": {"v1,c2lnbmF0dXJl"}}
}

func jsonHeader(extra ...string) http.Header {
	h := http.Header{"Content-Type": {"application/json; charset=utf-8"}}
	for i := 0; i+1 < len(extra); i += 2 {
		h.Set(extra[i], extra[i+1])
	}
	return h
}

// creditView is a GET /pix/credits/{end_to_end_id} answer (CreditView:
// members combined with allOf, closed by unevaluatedProperties).
const creditView = `{"end_to_end_id":"` + e2e + `","source":"native","account_id":"acc-1","amount_cents":15000,"status":"done",` +
	`"attempts":1,"last_error":null,"deliveries":1,"received_at":"2026-11-29T12:00:00.12Z","processed_at":"2026-11-29T12:00:00.18Z",` +
	`"credited_at":"2026-11-29T12:00:00.18Z","workflow_id":"pix-credit:` + e2e + `","workflow_status":"Completed",` +
	`"temporal_ui_url":"http://127.0.0.1:8233/namespaces/default/workflows"}`

// failedPage and scheduledPage are pages of the two lists (as the API
// answers them): rows, and next_cursor, null on the last page.
const (
	failedRow = `{"end_to_end_id":"` + e2e + `","source":"native","account_id":"acc-1","amount_cents":100,"status":"failed",` +
		`"attempts":5,"last_error":"AccountNotFound: account not found: acc-1","deliveries":1,"received_at":"2026-12-06T00:38:17.743806Z",` +
		`"processed_at":"2026-11-29T12:00:01Z","credited_at":null}`
	failedPage = `{"next_cursor":"eyJmYWlsZWRfYXQiOiIyMDI2LTExLTI5VDEyOjAwOjAxWiIsImVuZF90b19lbmRfaWQiOiJFMTIzNDU2NzgyMDI2MTEyOTEyMDAwMDAwMDAwMDAwMiJ9",` +
		`"pix":[` + failedRow + `]}`
	scheduledPage = `{"next_cursor":null,"scheduled":[{"id":"5b0e7c1a-2d3f-4a5b-8c6d-7e8f9a0b1c2d","account_id":"acc-1","amount_cents":15000,` +
		`"pix_key":"joao@example.com","description":null,"scheduled_for":"2026-12-24","run_at":"2026-12-24T03:00:00Z","status":"scheduled",` +
		`"failure_reason":null,"transfer_id":null,"end_to_end_id":null,"created_at":"2026-12-02T13:00:00Z","concluded_at":null,` +
		`"workflow_id":"pix-scheduled:5b0e7c1a-2d3f-4a5b-8c6d-7e8f9a0b1c2d","temporal_ui_url":"http://127.0.0.1:8233/namespaces/default/workflows"}]}`
	badCursor = `{"error":{"code":"invalid_request","message":"cursor: is not a cursor of this list"}}`
)

const (
	e2e     = "E1234567820261129120000000000001"
	receipt = `{"end_to_end_id":"` + e2e + `","status":"pending","duplicate":false}`
	webhook = `{"end_to_end_id":"` + e2e + `","account_id":"acc-1","amount_cents":1500}`
)

func TestCheckAcceptsWhatTheDocumentSays(t *testing.T) {
	t.Parallel()
	c := load(t)
	customer := http.Header{"Authorization": {"Bearer " + jwt("pix:read pix:write")}}
	for _, ex := range []apicontract.Exchange{
		{Method: "POST", Target: "/webhooks/pix", RequestHeader: signed(), RequestBody: []byte(webhook),
			Status: 202, ResponseHeader: jsonHeader(), ResponseBody: []byte(receipt)},
		// Unsigned over mutual TLS with a verified client certificate (a
		// PSP of WEBHOOK_MTLS_PSPS): the API Pix's own way.
		{Method: "POST", Target: "/webhooks/pix", RequestHeader: jsonHeader(), RequestBody: []byte(webhook), ClientCertificate: true,
			Status: 202, ResponseHeader: jsonHeader(), ResponseBody: []byte(receipt)},
		// Unsigned: the document refuses it, and so did the service.
		{Method: "POST", Target: "/webhooks/pix", RequestHeader: jsonHeader(), RequestBody: []byte(webhook),
			Status: 401, ResponseHeader: jsonHeader(), ResponseBody: []byte(`{"error":{"code":"signature_missing","message":"sign it"}}`)},
		{Method: "GET", Target: "/pix/transfers/5b0f3c8e-6f1d-4a8e-9c2b-1e7d4a6f3b20", RequestHeader: customer,
			Status: 404, ResponseHeader: jsonHeader(), ResponseBody: []byte(`{"error":{"code":"transfer_not_found","message":"no transfer with this id"}}`)},
		{Method: "GET", Target: "/accounts/acc-1", RequestHeader: customer,
			Status: 503, ResponseHeader: jsonHeader("Retry-After", "1"), ResponseBody: []byte(`{"error":{"code":"service_unavailable","message":"later"}}`)},
		{Method: "GET", Target: "/admin/reconcile", RequestHeader: http.Header{"Authorization": {"Bearer " + adminToken}}, Status: 200,
			ResponseHeader: jsonHeader(), ResponseBody: []byte(`{"balanced":true,"report":{"unbalanced_accounts":[],"unbalanced_holds":[],"done_without_credit":[],` +
				`"credit_without_done":[],"refunds_over_credit":[],"refund_contradictions":[]}}`)},
		{Method: "GET", Target: "/pix/credits/" + e2e, RequestHeader: customer, Status: 200, ResponseHeader: jsonHeader(),
			ResponseBody: []byte(creditView)},
		// The lists: a page with the next one's cursor, a last page, a
		// cursor refused.
		{Method: "GET", Target: "/admin/pix/credits?status=failed&limit=1", RequestHeader: http.Header{"Authorization": {"Bearer " + adminToken}},
			Status: 200, ResponseHeader: jsonHeader(), ResponseBody: []byte(failedPage)},
		{Method: "GET", Target: "/pix/scheduled?account_id=acc-1&cursor=eyJ9", RequestHeader: customer,
			Status: 200, ResponseHeader: jsonHeader(), ResponseBody: []byte(scheduledPage)},
		{Method: "GET", Target: "/pix/scheduled?account_id=acc-1&cursor=eyJ9", RequestHeader: customer,
			Status: 400, ResponseHeader: jsonHeader(), ResponseBody: []byte(badCursor)},
		// What the documents say the router answers a route or method none
		// of them has.
		{Method: "GET", Target: "/pix/everything", Status: 404, ResponseHeader: jsonHeader(),
			ResponseBody: []byte(`{"error":{"code":"not_found","message":"no route GET /pix/everything"}}`)},
		{Method: "DELETE", Target: "/accounts/acc-1", Status: 405, ResponseHeader: jsonHeader(),
			ResponseBody: []byte(`{"error":{"code":"method_not_allowed","message":"method DELETE not allowed here"}}`)},
		{Method: "GET", Target: "/healthz", Status: 200, ResponseHeader: jsonHeader(), ResponseBody: []byte(`{"status":"ok"}`)},
	} {
		require.Empty(t, c.Check(ex).Problems, "%s", ex)
	}
}

// Each departure from the document is found: a test of the contract that
// could not fail would prove nothing.
func TestCheckFindsWhatDepartsFromTheDocument(t *testing.T) {
	t.Parallel()
	c := load(t)
	readOnly := http.Header{"Authorization": {"Bearer " + jwt("pix:read")}, "Content-Type": {"application/json"},
		"Idempotency-Key": {"5b0f3c8e-6f1d-4a8e-9c2b-1e7d4a6f3b20"}}
	cases := map[string]struct {
		ex   apicontract.Exchange
		want string
	}{
		"a member the document does not have": {apicontract.Exchange{Method: "POST", Target: "/webhooks/pix", RequestHeader: signed(),
			RequestBody: []byte(webhook), Status: 202, ResponseHeader: jsonHeader(),
			ResponseBody: []byte(strings.Replace(receipt, `"duplicate"`, `"redriven":false,"duplicate"`, 1))}, "the answer is not what the document says"},
		"a member renamed": {apicontract.Exchange{Method: "POST", Target: "/webhooks/pix", RequestHeader: signed(),
			RequestBody: []byte(webhook), Status: 202, ResponseHeader: jsonHeader(),
			ResponseBody: []byte(strings.Replace(receipt, `"duplicate"`, `"is_duplicate"`, 1))}, "the answer is not what the document says"},
		"a member added to a combined schema": {apicontract.Exchange{Method: "GET", Target: "/pix/credits/" + e2e, RequestHeader: readOnly,
			Status: 200, ResponseHeader: jsonHeader(), ResponseBody: []byte(creditView[:len(creditView)-1] + `,"payer_name":"Maria"}`)},
			"the answer is not what the document says"},
		"a status the operation does not document": {apicontract.Exchange{Method: "POST", Target: "/webhooks/pix", RequestHeader: signed(),
			RequestBody: []byte(webhook), Status: 200, ResponseHeader: jsonHeader(), ResponseBody: []byte(receipt)}, "the answer is not what the document says"},
		"an error code the status does not document": {apicontract.Exchange{Method: "GET", Target: "/pix/transfers/5b0f3c8e-6f1d-4a8e-9c2b-1e7d4a6f3b20",
			RequestHeader: readOnly, Status: 404, ResponseHeader: jsonHeader(),
			ResponseBody: []byte(`{"error":{"code":"not_found","message":"no route"}}`)}, "the answer is not what the document says"},
		"a 503 without Retry-After": {apicontract.Exchange{Method: "GET", Target: "/accounts/acc-1", RequestHeader: readOnly,
			Status: 503, ResponseHeader: jsonHeader(), ResponseBody: []byte(`{"error":{"code":"service_unavailable","message":"later"}}`)},
			"the answer is not what the document says"},
		"a route no document has": {apicontract.Exchange{Method: "GET", Target: "/pix/everything", Status: 200,
			ResponseHeader: jsonHeader(), ResponseBody: []byte(`{}`)}, "no document has the route GET /pix/everything"},
		"a method the path does not document, answered": {apicontract.Exchange{Method: "DELETE", Target: "/accounts/acc-1", RequestHeader: readOnly,
			Status: 200, ResponseHeader: jsonHeader(), ResponseBody: []byte(`{}`)},
			"no document has the route DELETE /accounts/acc-1"},
		"a route no document has, refused with another code": {apicontract.Exchange{Method: "GET", Target: "/pix/everything",
			Status: 404, ResponseHeader: jsonHeader(), ResponseBody: []byte(`{"error":{"code":"account_not_found","message":"no"}}`)},
			"no document has the route GET /pix/everything"},
		"a page without next_cursor": {apicontract.Exchange{Method: "GET", Target: "/admin/pix/credits?status=failed",
			RequestHeader: http.Header{"Authorization": {"Bearer " + adminToken}}, Status: 200, ResponseHeader: jsonHeader(),
			ResponseBody: []byte(`{"pix":[` + failedRow + `]}`)}, "the answer is not what the document says"},
		"a page over the maximum limit served": {apicontract.Exchange{Method: "GET", Target: "/pix/scheduled?account_id=acc-1&limit=1001",
			RequestHeader: readOnly, Status: 200, ResponseHeader: jsonHeader(), ResponseBody: []byte(scheduledPage)},
			"the document refuses the request"},
		"an unsigned webhook accepted": {apicontract.Exchange{Method: "POST", Target: "/webhooks/pix", RequestHeader: jsonHeader(),
			RequestBody: []byte(webhook), Status: 202, ResponseHeader: jsonHeader(), ResponseBody: []byte(receipt)},
			"the document refuses the request"},
		"a write without its scope accepted": {apicontract.Exchange{Method: "POST", Target: "/pix", RequestHeader: readOnly,
			RequestBody: []byte(`{"account_id":"acc-1","amount_cents":1500,"pix_key":"k"}`), Status: 201, ResponseHeader: jsonHeader(),
			ResponseBody: []byte(`{}`)}, "the document refuses the request"},
		"an admin route with another token accepted": {apicontract.Exchange{Method: "GET", Target: "/admin/reconcile",
			RequestHeader: http.Header{"Authorization": {"Bearer not-the-admin-token"}}, Status: 200, ResponseHeader: jsonHeader(),
			ResponseBody: []byte(`{"balanced":true,"report":{"unbalanced_accounts":[],"unbalanced_holds":[],"done_without_credit":[],"credit_without_done":[],` +
				`"refunds_over_credit":[],"refund_contradictions":[]}}`)}, "the document refuses the request"},
		"a body the document refuses accepted": {apicontract.Exchange{Method: "POST", Target: "/webhooks/pix", RequestHeader: signed(),
			RequestBody: []byte(`{"end_to_end_id":"` + e2e + `","account_id":"acc-1","amount_cents":"15.00"}`), Status: 202,
			ResponseHeader: jsonHeader(), ResponseBody: []byte(receipt)}, "the document refuses the request"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res := c.Check(tc.ex)
			require.NotEmpty(t, res.Problems)
			require.Contains(t, strings.Join(res.Problems, "\n"), tc.want)
		})
	}
}

func TestDocumentsAreValidOpenAPI(t *testing.T) {
	t.Parallel()
	for _, d := range load(t).Documents {
		require.NoError(t, d.Validate(), d.Name)
	}
}

func TestRecorderKeepsWhatWasServed(t *testing.T) {
	t.Parallel()
	var rec apicontract.Recorder
	h := rec.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 4)
		_, _ = r.Body.Read(buf)
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Header().Set("X-Too-Late", "1") // after the header was written: not sent
		_, _ = w.Write([]byte(`{"a":1}`))
	}))
	req := httptest.NewRequest("POST", "/pix?x=1", strings.NewReader("123456789"))
	req.Header.Set("Idempotency-Key", "k")
	h.ServeHTTP(httptest.NewRecorder(), req)
	got := rec.Exchanges()
	require.Len(t, got, 1)
	require.Equal(t, "POST", got[0].Method)
	require.Equal(t, "/pix?x=1", got[0].Target)
	require.Equal(t, "k", got[0].RequestHeader.Get("Idempotency-Key"))
	require.Equal(t, "1234", string(got[0].RequestBody), "what the handler read")
	require.Equal(t, http.StatusServiceUnavailable, got[0].Status)
	require.Equal(t, "1", got[0].ResponseHeader.Get("Retry-After"))
	require.Empty(t, got[0].ResponseHeader.Get("X-Too-Late"))
	require.Equal(t, `{"a":1}`, string(got[0].ResponseBody))
}

func TestExamplesKeepToTheirSchemas(t *testing.T) {
	t.Parallel()
	for _, d := range load(t).Documents {
		require.Empty(t, d.ExampleProblems(), d.Name)
	}
}
