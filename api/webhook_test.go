package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/saga/reconcile"
	"github.com/pixbank/pix/saga/refund"
	"github.com/pixbank/pix/saga/transfer"
)

const validID = "E1234567820261129120000000000001"

// adminToken is the admin bearer token of the test servers.
const adminToken = "test-admin-token-0123456789"

// newServer serves the router over store (a *db.Store) for the handlers
// of every saga, with signatures not required (the format tests), adminToken, and
// the customer routes open (their access control has tests of its own:
// security_test.go); tune changes the dependencies.
func newServer(t *testing.T, store *db.Store, tune ...func(*api.Deps)) *httptest.Server {
	t.Helper()
	return newServerOf(t, api.StoresOf(store), append([]func(*api.Deps){func(d *api.Deps) {
		d.Sagas = sagasOf(transfer.NewStore(store), refund.NewStore(store), reconcile.NewStore(store))
	}}, tune...)...)
}

// newServerOf is newServer over each saga's handlers' own store.
func newServerOf(t *testing.T, stores api.Stores, tune ...func(*api.Deps)) *httptest.Server {
	t.Helper()
	// Nothing listens on port 1: /readyz must see Temporal unreachable.
	tc, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
	require.NoError(t, err)
	t.Cleanup(tc.Close)
	deps := api.Deps{
		Stores: stores, Temporal: tc, TemporalNamespace: "default", TemporalUIURL: "http://ui",
		RequestTimeout: 5 * time.Second, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		AdminToken:         adminToken,
		OpenCustomerRoutes: true,
		Keys:               db.KeyPolicy{LockFor: 30 * time.Second, KeepFor: 24 * time.Hour},
		Sagas:              sagasOf(nil, nil, nil),
	}
	for _, f := range tune {
		f(&deps)
	}
	router, err := api.NewRouter(deps, api.AllRoutes)
	require.NoError(t, err)
	srv := httptest.NewServer(router)
	t.Cleanup(srv.Close)
	return srv
}

// sagasOf are the HTTP sides of the credit, whose store is
// api.Deps.Stores (the fakes' or the database's), the transfer's over
// transfers, the devolução's over refunds and the reconciliation's over
// books (nil: its routes served, never called): the sagas this package's
// tests run through the router.
func sagasOf(transfers transfer.RouteStore, refunds refund.RouteStore, books reconcile.RouteStore) []api.SagaHTTP {
	t := &transfer.Handlers{Store: transfers, BankISPB: "12345678"}
	r := &refund.Handlers{Store: refunds, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))}
	b := &reconcile.Handlers{Store: books, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))}
	return []api.SagaHTTP{api.CreditHTTP(), t.HTTP(), r.HTTP(), b.HTTP()}
}

type response struct {
	status int
	body   map[string]any
}

func do(t *testing.T, method, url, contentType, body string) response {
	t.Helper()
	h := http.Header{}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	if strings.Contains(url, "/admin/") {
		h.Set("Authorization", "Bearer "+adminToken)
	}
	return doWith(t, http.DefaultClient, method, url, h, body)
}

// doWith sends body with exactly the headers h through hc.
func doWith(t *testing.T, hc *http.Client, method, url string, h http.Header, body string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header = h
	res, err := hc.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m), "every answer is JSON: %s", raw)
	return response{res.StatusCode, m}
}

func errorOf(t *testing.T, r response) (code, message string) {
	t.Helper()
	e, ok := r.body["error"].(map[string]any)
	require.True(t, ok, "error envelope missing in %v", r.body)
	return e["code"].(string), e["message"].(string)
}

func countInbox(t *testing.T, s *db.Store) int {
	var n int
	require.NoError(t, s.Pool().QueryRow(context.Background(), `SELECT count(*) FROM inbox_messages`).Scan(&n))
	return n
}

// objectWith marshals the members of defaults, each a raw JSON value, with
// overrides applied: a raw value replaces a member, "" removes it.
func objectWith(t *testing.T, defaults, overrides map[string]string) string {
	t.Helper()
	m := map[string]json.RawMessage{}
	for k, v := range defaults {
		m[k] = json.RawMessage(v)
	}
	for k, v := range overrides {
		if v == "" {
			delete(m, k)
		} else {
			m[k] = json.RawMessage(v)
		}
	}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return string(b)
}

// invalidCase is a request body a webhook refuses with 400
// invalid_request, its message starting with field.
type invalidCase struct {
	name, body, field string
}

// nativeWebhookBody is a valid native webhook body with field set to the
// raw JSON value raw ("" removes it).
func nativeWebhookBody(t *testing.T, field, raw string) string {
	t.Helper()
	return objectWith(t, map[string]string{
		"end_to_end_id": `"` + validID + `"`,
		"account_id":    `"acc-0001"`,
		"amount_cents":  `15000`,
	}, map[string]string{field: raw})
}

// invalidWebhookCases are the native webhook bodies refused before the
// store is asked: shared by the PostgreSQL test below and the unit tests.
func invalidWebhookCases(t *testing.T) []invalidCase {
	withField := func(field, raw string) string { return nativeWebhookBody(t, field, raw) }
	return []invalidCase{
		{"not json", `{"end_to_end_id":`, "body"},
		{"empty body", ``, "body"},
		{"array", `[1,2]`, "body"},
		{"two objects", withField("account_id", `"a"`) + `{}`, "body"},
		{"missing end_to_end_id", withField("end_to_end_id", ""), "end_to_end_id"},
		{"null end_to_end_id", withField("end_to_end_id", "null"), "end_to_end_id"},
		{"end_to_end_id not a string", withField("end_to_end_id", "123"), "end_to_end_id"},
		{"end_to_end_id 31 chars", withField("end_to_end_id", `"E123456782026112912000000000000"`), "end_to_end_id"},
		{"end_to_end_id 33 chars", withField("end_to_end_id", `"E12345678202611291200000000000012"`), "end_to_end_id"},
		{"end_to_end_id lowercase e", withField("end_to_end_id", `"e1234567820261129120000000000001"`), "end_to_end_id"},
		{"end_to_end_id symbol", withField("end_to_end_id", `"E12345678202611291200000000000-1"`), "end_to_end_id"},
		{"missing account_id", withField("account_id", ""), "account_id"},
		{"empty account_id", withField("account_id", `""`), "account_id"},
		{"long account_id", withField("account_id", `"`+strings.Repeat("a", 65)+`"`), "account_id"},
		{"account_id number", withField("account_id", `7`), "account_id"},
		{"missing amount", withField("amount_cents", ""), "amount_cents"},
		{"amount zero", withField("amount_cents", `0`), "amount_cents"},
		{"amount negative", withField("amount_cents", `-5`), "amount_cents"},
		{"amount too large", withField("amount_cents", `100000000001`), "amount_cents"},
		{"amount overflows int64", withField("amount_cents", `99999999999999999999`), "amount_cents"},
		{"amount fraction", withField("amount_cents", `150.5`), "amount_cents"},
		{"amount exponent", withField("amount_cents", `1e3`), "amount_cents"},
		{"amount string", withField("amount_cents", `"15000"`), "amount_cents"},
		{"payer not object", withField("payer", `"x"`), "payer"},
		{"payer ispb", withField("payer", `{"name":"A","ispb":"123"}`), "payer.ispb"},
		{"occurred_at not time", withField("occurred_at", `"yesterday"`), "occurred_at"},
		{"occurred_at number", withField("occurred_at", `5`), "occurred_at"},
		// The NUL character is refused in a money field (by its own rules),
		// and stored as U+FFFD elsewhere (payload_storable_test.go).
		{"NUL in end_to_end_id", withField("end_to_end_id", `"E123456782026112912000000000000\u0000"`), "end_to_end_id"},
		{"NUL in account_id", withField("account_id", `"acc\u0000"`), "account_id"},
		{"NUL in occurred_at", withField("occurred_at", `"2026-11-29T12:00:00Z\u0000"`), "occurred_at"},
		{"NUL in payer.ispb", withField("payer", `{"ispb":"1234567\u0000"}`), "payer.ispb"},
		{"duplicate key", `{"end_to_end_id":"` + validID + `","account_id":"acc-0001","amount_cents":1,"amount_cents":100000}`, "amount_cents"},
		{"duplicate key nested", withField("payer", `{"name":"A","name":"B"}`), "payer.name"},
		{"key in another case is not the field", strings.Replace(withField("account_id", `"acc-0001"`), `"end_to_end_id"`, `"END_TO_END_ID"`, 1), "end_to_end_id"},
		{"trailing garbage", withField("account_id", `"acc-0001"`) + `]`, "body"},
		{"control character in account_id", withField("account_id", `"acc\u0007"`), "account_id"},
		{"payer name not a string", withField("payer", `{"name":5}`), "payer.name"},
		{"deep nesting", withField("extra", strings.Repeat("[", 40)+strings.Repeat("]", 40)), "extra"},
	}
}

// requireWebhookRefusals sends url, the native webhook route, every invalid
// body, one too large and the wrong content types, and asserts each answer;
// the DB and the unit tests share it.
func requireWebhookRefusals(t *testing.T, url string) {
	t.Helper()
	for _, tc := range invalidWebhookCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, http.MethodPost, url, "application/json", tc.body)
			require.Equal(t, http.StatusBadRequest, r.status, "%v", r.body)
			code, msg := errorOf(t, r)
			require.Equal(t, api.CodeInvalidRequest, code)
			require.True(t, strings.HasPrefix(msg, tc.field+":") || strings.HasPrefix(msg, tc.field+"["), "message %q names the field %q", msg, tc.field)
		})
	}
	t.Run("too large", func(t *testing.T) {
		body := nativeWebhookBody(t, "payer", `{"name":"`+strings.Repeat("x", api.MaxWebhookBytes)+`"}`)
		r := do(t, http.MethodPost, url, "application/json", body)
		require.Equal(t, http.StatusRequestEntityTooLarge, r.status)
		code, _ := errorOf(t, r)
		require.Equal(t, api.CodePayloadTooLarge, code)
	})
	for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded"} {
		t.Run("content type "+ct, func(t *testing.T) {
			r := do(t, http.MethodPost, url, ct, nativeWebhookBody(t, "account_id", `"acc-0001"`))
			require.Equal(t, http.StatusUnsupportedMediaType, r.status)
			code, _ := errorOf(t, r)
			require.Equal(t, api.CodeUnsupportedMediaType, code)
		})
	}
}

func TestWebhookRefusesInvalidInputAndStoresNothing(t *testing.T) {
	store := dbtest.New(t)
	srv := newServer(t, store)
	url := srv.URL + "/webhooks/pix"
	withField := func(field, raw string) string { return nativeWebhookBody(t, field, raw) }
	requireWebhookRefusals(t, url)
	require.Zero(t, countInbox(t, store), "no refused request stored anything")

	// The control: the same body with every field right is accepted.
	r := do(t, http.MethodPost, url, "application/json; charset=utf-8", withField("payer", `{"name":"A","document":"123","ispb":"12345678"}`))
	require.Equal(t, http.StatusAccepted, r.status, "%v", r.body)
	require.Equal(t, map[string]any{"end_to_end_id": validID, "status": "pending", "duplicate": false}, r.body)
	require.Equal(t, 1, countInbox(t, store))
}

func TestWebhookDuplicateAndMismatch(t *testing.T) {
	store := dbtest.New(t)
	srv := newServer(t, store)
	url := srv.URL + "/webhooks/pix"
	body := `{"end_to_end_id":"` + validID + `","account_id":"acc-0001","amount_cents":15000,"occurred_at":"2026-11-29T12:00:00Z"}`

	r := do(t, http.MethodPost, url, "application/json", body)
	require.Equal(t, http.StatusAccepted, r.status)
	r = do(t, http.MethodPost, url, "application/json", body)
	require.Equal(t, http.StatusAccepted, r.status)
	require.Equal(t, map[string]any{"end_to_end_id": validID, "status": "pending", "duplicate": true}, r.body)

	r = do(t, http.MethodPost, url, "application/json", strings.Replace(body, "15000", "15001", 1))
	require.Equal(t, http.StatusUnprocessableEntity, r.status)
	code, _ := errorOf(t, r)
	require.Equal(t, api.CodePayloadMismatch, code)

	r = do(t, http.MethodGet, srv.URL+"/pix/credits/"+validID, "", "")
	require.Equal(t, http.StatusOK, r.status)
	require.EqualValues(t, 2, r.body["deliveries"])
	require.EqualValues(t, 15000, r.body["amount_cents"])
	require.Equal(t, "pix-credit:"+validID, r.body["workflow_id"])
	require.Contains(t, r.body["temporal_ui_url"], "http://ui/namespaces/default/workflows?query=")
}

func TestQueriesAndRetryErrors(t *testing.T) {
	store := dbtest.New(t)
	srv := newServer(t, store)
	unknown := "E9999999920261129120000000000001"

	r := do(t, http.MethodGet, srv.URL+"/pix/credits/"+unknown, "", "")
	require.Equal(t, http.StatusNotFound, r.status)
	code, _ := errorOf(t, r)
	require.Equal(t, api.CodeCreditNotFound, code)

	r = do(t, http.MethodGet, srv.URL+"/pix/credits/not-an-id", "", "")
	require.Equal(t, http.StatusBadRequest, r.status)

	r = do(t, http.MethodGet, srv.URL+"/accounts/acc-none", "", "")
	require.Equal(t, http.StatusNotFound, r.status)
	code, _ = errorOf(t, r)
	require.Equal(t, api.CodeAccountNotFound, code)

	_, err := store.CreateAccount(context.Background(), db.NewAccount{ID: "acc-1", OwnerName: "Maria", OpeningBalanceCents: 42})
	require.NoError(t, err)
	r = do(t, http.MethodGet, srv.URL+"/accounts/acc-1", "", "")
	require.Equal(t, http.StatusOK, r.status)
	require.EqualValues(t, 42, r.body["balance_cents"])
	require.Equal(t, "Maria", r.body["owner_name"])

	r = do(t, http.MethodPost, srv.URL+"/admin/pix/credits/"+unknown+"/retry", "", "")
	require.Equal(t, http.StatusNotFound, r.status, "%v", r.body)

	body := `{"end_to_end_id":"` + validID + `","account_id":"acc-1","amount_cents":1}`
	require.Equal(t, http.StatusAccepted, do(t, http.MethodPost, srv.URL+"/webhooks/pix", "application/json", body).status)
	r = do(t, http.MethodPost, srv.URL+"/admin/pix/credits/"+validID+"/retry", "", "")
	require.Equal(t, http.StatusConflict, r.status)
	code, _ = errorOf(t, r)
	require.Equal(t, api.CodeNotFailed, code)

	r = do(t, http.MethodGet, srv.URL+"/no/such/route", "", "")
	require.Equal(t, http.StatusNotFound, r.status)
	r = do(t, http.MethodDelete, srv.URL+"/webhooks/pix", "", "")
	require.Equal(t, http.StatusMethodNotAllowed, r.status)
}

func TestHealthAndReadiness(t *testing.T) {
	srv := newServer(t, dbtest.New(t))
	r := do(t, http.MethodGet, srv.URL+"/healthz", "", "")
	require.Equal(t, http.StatusOK, r.status)
	r = do(t, http.MethodGet, srv.URL+"/readyz", "", "")
	require.Equal(t, http.StatusServiceUnavailable, r.status, "Temporal is unreachable in this test")
	checks := r.body["checks"].(map[string]any)
	require.Equal(t, "ok", checks["postgres"])
	require.NotEqual(t, "ok", checks["temporal"])
}

func TestWebhookAnswers503WhenDatabaseIsUnreachable(t *testing.T) {
	pool, err := db.Open(context.Background(), "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=2", 1)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	srv := newServer(t, db.NewStore(pool))
	body := `{"end_to_end_id":"` + validID + `","account_id":"acc-1","amount_cents":1}`
	r := do(t, http.MethodPost, srv.URL+"/webhooks/pix", "application/json", body)
	require.Equal(t, http.StatusServiceUnavailable, r.status)
	code, _ := errorOf(t, r)
	require.Equal(t, api.CodeUnavailable, code)
}
