package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/pix"
)

// A saga declares its HTTP side (api.SagaHTTP) and the router serves it
// like its own: a route under each scope, the Idempotency-Key layer on an
// operator route, a hook on received webhooks, a section of a credit's
// view.

// sagaTokens are the bearer tokens of these tests: a customer's of each
// scope, two operators', and one a lax verifier would let name ADMIN_TOKEN's
// caller.
var sagaTokens = fakeTokens{
	"tok-read":     {Subject: "sub-r", Scopes: []string{auth.ScopeRead}, Accounts: []string{"acc-a"}},
	"tok-write":    {Subject: "sub-w", Scopes: []string{auth.ScopeWrite}, Accounts: []string{"acc-a"}},
	"tok-a":        {Subject: "sub-a", Scopes: []string{auth.ScopeRead, auth.ScopeWrite}, Accounts: []string{"acc-a"}},
	"tok-ops":      {Subject: "ops-1", Scopes: []string{auth.ScopeAdmin}},
	"tok-ops-2":    {Subject: "ops-2", Scopes: []string{auth.ScopeAdmin}},
	"tok-reserved": {Subject: auth.AdminToken.Subject, Scopes: []string{auth.ScopeRead, auth.ScopeWrite, auth.ScopeAdmin}, Accounts: []string{"acc-a"}},
}

// whoAnswers answers the caller the route saw.
func whoAnswers(k api.Kit, c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"sub": k.Caller(c).Subject})
}

// sagaServer serves the sagas of this package and extra, over fs, with
// sagaTokens and ADMIN_TOKEN (adminToken).
func sagaServer(t *testing.T, fs *fakeStore, extra ...api.SagaHTTP) string {
	t.Helper()
	return newUnitServer(t, fs, func(d *api.Deps) {
		d.OpenCustomerRoutes = false
		d.Tokens = sagaTokens
		d.Sagas = append(d.Sagas, extra...)
	}).URL
}

func TestASagaRouteIsServedUnderItsScopeOnly(t *testing.T) {
	scopes := api.SagaHTTP{Routes: []api.Route{
		{Method: http.MethodGet, Path: "/saga/read", Scope: auth.ScopeRead, Handle: whoAnswers},
		{Method: http.MethodPost, Path: "/saga/write", Scope: auth.ScopeWrite, Handle: whoAnswers},
		{Method: http.MethodPost, Path: "/saga/admin", Scope: auth.ScopeAdmin, Handle: whoAnswers},
	}}
	base := sagaServer(t, newFakeStore(), scopes)
	// What each caller gets on each route: the subject it was served as,
	// or the refusal's status, code and the scope its challenge names.
	type want struct {
		sub         string
		status      int
		code, scope string
	}
	served := func(sub string) want { return want{sub: sub, status: http.StatusOK} }
	noScope := func(scope string) want {
		return want{status: http.StatusForbidden, code: api.CodeInsufficientScope, scope: scope}
	}
	unauthorized := want{status: http.StatusUnauthorized, code: api.CodeUnauthorized}
	for _, c := range []struct {
		token              string
		read, write, admin want
	}{
		{"", unauthorized, unauthorized, unauthorized},
		{"tok-read", served("sub-r"), noScope(auth.ScopeWrite), noScope(auth.ScopeAdmin)},
		{"tok-write", noScope(auth.ScopeRead), served("sub-w"), noScope(auth.ScopeAdmin)},
		{"tok-a", served("sub-a"), served("sub-a"), noScope(auth.ScopeAdmin)},
		{"tok-ops", noScope(auth.ScopeRead), noScope(auth.ScopeWrite), served("ops-1")},
		// ADMIN_TOKEN is an operator's, not a customer's token.
		{adminToken, unauthorized, unauthorized, served(auth.AdminToken.Subject)},
		// A token naming the service's own caller is no token at all,
		// whatever it grants.
		{"tok-reserved", unauthorized, unauthorized, unauthorized},
	} {
		for _, r := range []struct {
			method, path string
			want         want
		}{{http.MethodGet, "/saga/read", c.read}, {http.MethodPost, "/saga/write", c.write}, {http.MethodPost, "/saga/admin", c.admin}} {
			name := fmt.Sprintf("%s %s with %q", r.method, r.path, c.token)
			got := attackSend(t, r.method, base+r.path, c.token, "", "")
			if r.want.status == http.StatusOK {
				require.Equal(t, http.StatusOK, got.status, "%s: %s", name, got.raw)
				require.JSONEq(t, `{"sub":"`+r.want.sub+`"}`, got.raw, name)
				continue
			}
			requireError(t, got, r.want.status, r.want.code)
			challenge := got.headers.Get("WWW-Authenticate")
			require.Contains(t, challenge, `realm="pix"`, name)
			if r.want.scope != "" {
				require.Contains(t, challenge, `scope="`+r.want.scope+`"`, name)
			}
		}
	}
}

// keyedOps is an operator route behind the Idempotency-Key layer: each
// request it runs is numbered, so that a replay shows as the first
// answer's number.
type keyedOps struct {
	keys api.KeyStore
	mu   sync.Mutex
	runs int
}

func (o *keyedOps) saga() api.SagaHTTP {
	return api.SagaHTTP{Routes: []api.Route{{Method: http.MethodPost, Path: "/saga/ops", Scope: auth.ScopeAdmin, Handle: o.serve}}}
}

func (o *keyedOps) serve(k api.Kit, c *gin.Context) {
	caller := k.Caller(c)
	api.ServeKeyed(k, c, api.KeyedOperation[string]{
		What: "operator test", Keys: o.keys, MaxBody: 1 << 10, Hash: api.OperationHash("saga-ops"),
		Decode: func(body []byte) (string, error) {
			var v struct{ Note string }
			if err := json.Unmarshal(body, &v); err != nil || v.Note == "" {
				return "", pix.Invalid("note", "is required")
			}
			return v.Note, nil
		},
		Run: func(ctx context.Context, res db.Reservation, note string) ([]byte, string, []any, error) {
			o.mu.Lock()
			o.runs++
			n := o.runs
			o.mu.Unlock()
			answer, err := json.Marshal(map[string]any{"run": n, "by": caller.Subject, "note": note})
			if err == nil {
				err = o.keys.RecordResponse(ctx, res, http.StatusCreated, answer)
			}
			return answer, "", nil, err
		},
	})
}

func TestServeKeyedOnAnOperatorRouteKeysByCaller(t *testing.T) {
	fs := newFakeStore()
	ops := &keyedOps{keys: fakeKeys{fs}}
	base := sagaServer(t, fs, ops.saga())
	key := uuid.NewString()
	call := func(token, body string) (run int, by string, replayed bool) {
		t.Helper()
		r := attackSend(t, http.MethodPost, base+"/saga/ops", token, key, body)
		require.Equal(t, http.StatusCreated, r.status, r.raw)
		var v struct {
			Run int
			By  string
		}
		require.NoError(t, json.Unmarshal([]byte(r.raw), &v))
		return v.Run, v.By, r.headers.Get(api.IdempotentReplayHeader) == "true"
	}
	body := `{"note":"block it"}`
	run, by, replayed := call(adminToken, body)
	require.Equal(t, []any{1, auth.AdminToken.Subject, false}, []any{run, by, replayed})
	run, _, replayed = call(adminToken, body)
	require.Equal(t, []any{1, true}, []any{run, replayed}, "ADMIN_TOKEN's key again: the first answer")

	// The same key from a JWT operator is another key; from another JWT
	// operator, another still; each replays its own.
	run, by, replayed = call("tok-ops", body)
	require.Equal(t, []any{2, "ops-1", false}, []any{run, by, replayed})
	run, by, replayed = call("tok-ops-2", body)
	require.Equal(t, []any{3, "ops-2", false}, []any{run, by, replayed})
	run, by, replayed = call("tok-ops", body)
	require.Equal(t, []any{2, "ops-1", true}, []any{run, by, replayed})
	run, by, replayed = call(adminToken, body)
	require.Equal(t, []any{1, auth.AdminToken.Subject, true}, []any{run, by, replayed}, "the JWTs' requests did not touch ADMIN_TOKEN's key")

	// Another body on a used key is refused, as on the customer routes;
	// a customer never reaches the layer.
	requireError(t, attackSend(t, http.MethodPost, base+"/saga/ops", "tok-ops", key, `{"note":"another"}`),
		http.StatusUnprocessableEntity, api.CodeIdempotencyKeyReused)
	requireError(t, attackSend(t, http.MethodPost, base+"/saga/ops", "tok-a", uuid.NewString(), body), http.StatusForbidden, api.CodeInsufficientScope)
	fs.mu.Lock()
	defer fs.mu.Unlock()
	var held []string
	for k := range fs.keys {
		held = append(held, k)
	}
	require.ElementsMatch(t, []string{auth.AdminToken.Subject + "/" + key, "ops-1/" + key, "ops-2/" + key}, held)
}

// A real verifier refuses a token naming ADMIN_TOKEN's caller, on the
// operator routes as on the customer routes, however well it is signed
// and whatever it grants: it can neither act as ADMIN_TOKEN nor reach its
// Idempotency-Keys.
func TestATokenNamingAdminTokensCallerIsRefused(t *testing.T) {
	dir := t.TempDir()
	issuer, err := auth.OpenDevIssuer(dir, "https://id.example", "pix-api")
	require.NoError(t, err)
	keys, err := auth.NewKeyCache(t.Context(), auth.FileKeys(filepath.Join(dir, auth.DevJWKSFile)), auth.KeyCacheOptions{})
	require.NoError(t, err)
	verifier := auth.NewVerifier("https://id.example", "pix-api", keys, nil)
	fs := newFakeStore()
	ops := &keyedOps{keys: fakeKeys{fs}}
	srv := newUnitServer(t, fs, func(d *api.Deps) {
		d.OpenCustomerRoutes = false
		d.Tokens = verifier
		d.Sagas = append(d.Sagas, ops.saga())
	})
	sign := func(sub string) string {
		now := time.Now()
		tok, err := issuer.SignClaims(jwt.MapClaims{"iss": "https://id.example", "aud": "pix-api", "sub": sub,
			"scope": "pix:read pix:write pix:admin", "accounts": []string{"acc-a"}, "iat": now.Unix(), "exp": now.Add(time.Minute).Unix()})
		require.NoError(t, err)
		return tok
	}
	key := uuid.NewString()
	for _, sub := range []string{auth.AdminToken.Subject, "PIX:Admin-Token", auth.Unauthenticated.Subject} {
		tok := sign(sub)
		msg := requireError(t, attackSend(t, http.MethodPost, srv.URL+"/saga/ops", tok, key, `{"note":"x"}`), http.StatusUnauthorized, api.CodeUnauthorized)
		require.Contains(t, msg, "reserved", sub)
		requireError(t, attackSend(t, http.MethodGet, srv.URL+"/admin/reconcile", tok, "", ""), http.StatusUnauthorized, api.CodeUnauthorized)
		requireError(t, attackSend(t, http.MethodGet, srv.URL+"/accounts/acc-a", tok, "", ""), http.StatusUnauthorized, api.CodeUnauthorized)
	}
	// The control: the same token with a subject of its own is served.
	r := attackSend(t, http.MethodPost, srv.URL+"/saga/ops", sign("ops-1"), key, `{"note":"x"}`)
	require.Equal(t, http.StatusCreated, r.status, r.raw)
	ops.mu.Lock()
	defer ops.mu.Unlock()
	require.Equal(t, 1, ops.runs)
}

func TestASagasCreditSectionIsInBothViewsOfACredit(t *testing.T) {
	fs := newFakeStore()
	const noted, other = "E1234567820261129120000000000071", "E1234567820261129120000000000072"
	fs.addCredit(noted, "acc-a", 500)
	fs.addCredit(other, "acc-a", 500)
	notes := api.SagaHTTP{CreditSection: api.CreditSection{Name: "notes",
		Of: func(k api.Kit, c *gin.Context, credit pix.Credit) (any, bool, error) {
			if credit.EndToEndID != noted {
				return nil, false, nil
			}
			return []map[string]any{{"note": "seen", "seen_by": k.Caller(c).Subject}}, true, nil
		}}}
	base := sagaServer(t, fs, notes)
	for _, c := range []struct{ path, token, seenBy string }{
		{"/pix/credits/" + noted, "tok-read", "sub-r"},
		{"/admin/pix/credits/" + noted, adminToken, auth.AdminToken.Subject},
		{"/admin/pix/credits/" + noted, "tok-ops", "ops-1"},
	} {
		r := attackSend(t, http.MethodGet, base+c.path, c.token, "", "")
		require.Equal(t, http.StatusOK, r.status, r.raw)
		var view map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(r.raw), &view))
		require.JSONEq(t, `[{"note":"seen","seen_by":"`+c.seenBy+`"}]`, string(view["notes"]), c.path)
		require.Contains(t, view, "end_to_end_id", "the credit's own members stay")
	}
	r := attackSend(t, http.MethodGet, base+"/pix/credits/"+other, "tok-read", "", "")
	require.Equal(t, http.StatusOK, r.status, r.raw)
	require.NotContains(t, r.raw, `"notes"`, "a section the saga does not give is left out")

	// A section that fails fails the view: no half answer.
	failing := api.SagaHTTP{CreditSection: api.CreditSection{Name: "broken",
		Of: func(api.Kit, *gin.Context, pix.Credit) (any, bool, error) {
			return nil, false, errors.New("store down")
		}}}
	base = sagaServer(t, fs, failing)
	requireError(t, attackSend(t, http.MethodGet, base+"/pix/credits/"+noted, "tok-read", "", ""), http.StatusInternalServerError, api.CodeInternal)
}

func TestASagasReceivedHookRunsOnAnAPIPixWebhook(t *testing.T) {
	fs := newFakeStore()
	var mu sync.Mutex
	var seen []string
	fail := false
	hook := api.SagaHTTP{Received: func(_ api.Kit, _ context.Context, ns []pix.Notification) error {
		mu.Lock()
		defer mu.Unlock()
		for _, n := range ns {
			seen = append(seen, n.EndToEndID)
		}
		if fail {
			return pix.ErrUnavailable
		}
		return nil
	}}
	base := sagaServer(t, fs, hook)
	second := "E1234567820261129120000000000002"
	r := do(t, http.MethodPost, base+apiPixPath, "application/json", batch(apiPixItem(t, validID, nil), apiPixItem(t, second, nil)))
	require.Equal(t, http.StatusOK, r.status, "%v", r.body)
	mu.Lock()
	require.Equal(t, []string{validID, second}, seen)
	// A hook that fails answers the webhook with its failure: the PSP
	// delivers again, and the hook runs again on the copy.
	fail = true
	mu.Unlock()
	r = do(t, http.MethodPost, base+apiPixPath, "application/json", batch(apiPixItem(t, validID, nil)))
	require.Equal(t, http.StatusServiceUnavailable, r.status, "%v", r.body)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{validID, second, validID}, seen)
}

// What the router can't serve stops it at its build, an error rather than
// a panic or a route that answers otherwise than declared.
func TestNewRouterRefusesASagaItCannotServe(t *testing.T) {
	ok := func(api.Kit, *gin.Context) {}
	section := func(name string) api.SagaHTTP {
		return api.SagaHTTP{CreditSection: api.CreditSection{Name: name,
			Of: func(api.Kit, *gin.Context, pix.Credit) (any, bool, error) { return nil, false, nil }}}
	}
	for name, c := range map[string]struct {
		sagas []api.SagaHTTP
		want  string
	}{
		"a scope of no class": {[]api.SagaHTTP{{Routes: []api.Route{{Method: http.MethodGet, Path: "/x", Scope: "pix:everything", Handle: ok}}}},
			`scope "pix:everything"`},
		"no scope":   {[]api.SagaHTTP{{Routes: []api.Route{{Method: http.MethodGet, Path: "/x", Handle: ok}}}}, `scope ""`},
		"no handler": {[]api.SagaHTTP{{Routes: []api.Route{{Method: http.MethodGet, Path: "/x", Scope: auth.ScopeRead}}}}, "no handler"},
		"a route the router has": {[]api.SagaHTTP{{Routes: []api.Route{{Method: http.MethodGet, Path: "/accounts/:id", Scope: auth.ScopeAdmin, Handle: ok}}}},
			"route GET /accounts/:id"},
		"a route another saga has": {append(sagasOf(nil, nil, nil), api.SagaHTTP{Routes: []api.Route{
			{Method: http.MethodPost, Path: "/pix", Scope: auth.ScopeWrite, Handle: ok}}}), "route POST /pix"},
		"a section named like a member of the view": {[]api.SagaHTTP{section("status")}, `credit section "status"`},
		"a section named like the credit's charge":  {[]api.SagaHTTP{section("charge")}, `credit section "charge"`},
		"two sections of one name":                  {append(sagasOf(nil, nil, nil), section("refunds")), `credit section "refunds"`},
		"a section without a name":                  {[]api.SagaHTTP{section("")}, "a section has a name"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := api.NewRouter(api.Deps{Sagas: c.sagas}, api.CustomerRoutes)
			require.ErrorContains(t, err, c.want)
		})
	}
}

// sagaWebhookPath is the route of sagaWebhookInto.
const sagaWebhookPath = "/webhooks/saga/notice"

// sagaWebhookInto is a saga's webhook that stores what it is sent in fs's
// inbox as a PIX of validID from its PSP (Kit.WebhookPSP), answering 202:
// the webhooks' authentication tests hold it to what they hold the
// router's own webhooks to.
func sagaWebhookInto(fs *fakeStore) api.SagaHTTP {
	return api.SagaHTTP{Webhooks: []api.WebhookRoute{{Path: "/saga/notice", MaxBytes: 1 << 10, Handle: func(k api.Kit, c *gin.Context) {
		n := pix.Notification{EndToEndID: validID, AccountID: "acc-1", AmountCents: 1, PSP: k.WebhookPSP(c), Payload: k.WebhookBody(c)}
		if _, err := (fakeWebhooks{fs}).Receive(c.Request.Context(), n); err != nil {
			k.Fail(c, err)
			return
		}
		c.JSON(http.StatusAccepted, gin.H{"received": len(k.WebhookBody(c))})
	}}}}
}

// A saga's webhook is served under /webhooks behind the PSP webhooks'
// checks (the signature here; the client certificate in
// TestUnitWebhookMutualTLSMatrix): refused unsigned before its handler
// runs, its body limit kept, its content type checked after the
// credentials; a webhook the router can't take stops its build.
func TestASagasWebhookIsAuthenticatedAsThePSPWebhooks(t *testing.T) {
	fs := newFakeStore()
	srv := newUnitServer(t, fs, withSignatures(true), func(d *api.Deps) { d.Sagas = append(d.Sagas, sagaWebhookInto(fs)) })
	url := srv.URL + sagaWebhookPath
	body := `{"hello":"world"}`
	r := doWith(t, http.DefaultClient, http.MethodPost, url, http.Header{"Content-Type": {"application/json"}}, body)
	requireCode(t, r, http.StatusUnauthorized, api.CodeSignatureMissing)
	r = doWith(t, http.DefaultClient, http.MethodPost, url, signed(body, "msg_1", time.Now(), []byte("a forger's key")), body)
	requireCode(t, r, http.StatusUnauthorized, api.CodeSignatureInvalid)
	textPlain := signed(body, "msg_1", time.Now(), pspAKey)
	textPlain.Set("Content-Type", "text/plain")
	r = doWith(t, http.DefaultClient, http.MethodPost, url, textPlain, body)
	requireCode(t, r, http.StatusUnsupportedMediaType, api.CodeUnsupportedMediaType)
	large := `{"x":"` + strings.Repeat("a", 2<<10) + `"}`
	r = doWith(t, http.DefaultClient, http.MethodPost, url, signed(large, "msg_1", time.Now(), pspAKey), large)
	requireCode(t, r, http.StatusRequestEntityTooLarge, api.CodePayloadTooLarge)
	require.Empty(t, fs.inbox, "nothing refused reached the handler")

	r = doWith(t, http.DefaultClient, http.MethodPost, url, signed(body, "msg_1", time.Now(), pspAKey), body)
	require.Equal(t, http.StatusAccepted, r.status, "%v", r.body)
	require.Equal(t, "psp-a", fs.inbox[validID].PSP, "the handler is told the PSP its signature names")

	for name, w := range map[string]api.WebhookRoute{
		"no handler":     {Path: "/saga/x", MaxBytes: 1},
		"no body limit":  {Path: "/saga/x", Handle: func(api.Kit, *gin.Context) {}},
		"a route it has": {Path: "/pix", MaxBytes: 1, Handle: func(api.Kit, *gin.Context) {}},
	} {
		_, err := api.NewRouter(api.Deps{Sagas: []api.SagaHTTP{{Webhooks: []api.WebhookRoute{w}}}}, api.WebhookRoutes)
		require.ErrorContains(t, err, "webhook /", name)
	}
}

// requireCode checks an answer's status and error code.
func requireCode(t *testing.T, r response, status int, code string) {
	t.Helper()
	require.Equal(t, status, r.status, "%v", r.body)
	got, _ := errorOf(t, r)
	require.Equal(t, code, got)
}
