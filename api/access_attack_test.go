package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/auth"
)

// fakeTokens maps a bearer token to its caller.
type fakeTokens map[string]auth.Caller

func (f fakeTokens) Verify(_ context.Context, tok string) (auth.Caller, error) {
	if c, ok := f[tok]; ok {
		return c, nil
	}
	return auth.Caller{}, &auth.TokenError{Reason: "the token is not valid"}
}

type attackReply struct {
	status  int
	headers http.Header
	raw     string
}

func attackSend(t *testing.T, method, url, tok, key, body string) attackReply {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return attackReply{res.StatusCode, res.Header, string(b)}
}

// What held: per-caller keys, account checks before any write, stale
// tokens on replay, the same key at the same instant, and the admin routes
// with the customer routes open. Recorded as evidence of what was tried.
func TestAttackAccessControlHolds(t *testing.T) {
	store := dbtest.New(t)
	tokens := fakeTokens{
		"tok-a":       {Subject: "sub-a", Scopes: []string{auth.ScopeRead, auth.ScopeWrite}, Accounts: []string{"acc-a"}},
		"tok-a-later": {Subject: "sub-a", Scopes: []string{auth.ScopeRead, auth.ScopeWrite}, Accounts: []string{"acc-other"}},
		"tok-b":       {Subject: "sub-b", Scopes: []string{auth.ScopeRead, auth.ScopeWrite}, Accounts: []string{"acc-b"}},
		"tok-admin":   {Subject: "ops", Scopes: []string{auth.ScopeAdmin}},
	}
	srv := newServer(t, store, func(d *api.Deps) { d.OpenCustomerRoutes = false; d.Tokens = tokens })
	dbtest.OpenAccount(t, store, "acc-a", 100_000)
	dbtest.OpenAccount(t, store, "acc-b", 100_000)
	dbtest.OpenAccount(t, store, "ACC-A", 100_000) // a case variant of A's account, someone else's

	// B uses key K; A, sending the same key, never gets B's answer.
	k := uuid.NewString()
	rb := attackSend(t, http.MethodPost, srv.URL+"/pix", "tok-b", k, transferBody(t, "acc-b", 1_000))
	require.Equal(t, http.StatusCreated, rb.status, rb.raw)
	r := attackSend(t, http.MethodPost, srv.URL+"/pix", "tok-a", k, transferBody(t, "acc-b", 1_000))
	require.Equal(t, http.StatusForbidden, r.status, r.raw)
	require.Empty(t, r.headers.Get(api.IdempotentReplayHeader))
	r = attackSend(t, http.MethodPost, srv.URL+"/pix", "tok-a", k, `{"account_id":"acc-b","amount_cents":-1,"pix_key":"x"}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.status, r.raw)
	require.Contains(t, r.raw, "invalid_request", "A's own refusal, not B's key_reused")
	r = attackSend(t, http.MethodPost, srv.URL+"/pix", "tok-a", k, transferBody(t, "acc-a", 1_000))
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "A's key K is A's own (holds the refusal above): %s", r.raw)
	require.Contains(t, r.raw, "idempotency_key_reused")

	// B holds a key in progress; A with that key is not told 409.
	k2 := uuid.New()
	_, _, err := store.ReserveKey(context.Background(), "sub-b", k2, "whatever", db.KeyPolicy{LockFor: time.Minute, KeepFor: time.Hour})
	require.NoError(t, err)
	r = attackSend(t, http.MethodPost, srv.URL+"/pix", "tok-a", k2.String(), transferBody(t, "acc-a", 1_000))
	require.Equal(t, http.StatusCreated, r.status, r.raw)
	require.Empty(t, r.headers.Get("Retry-After"))

	// Case and Unicode variants of A's account are other accounts.
	for _, acc := range []string{"ACC-A", "acc-a ", "acc\u2011a", "acc-a\u200b"} {
		r = attackSend(t, http.MethodPost, srv.URL+"/pix", "tok-a", uuid.NewString(), transferBody(t, acc, 1_000))
		require.Equal(t, http.StatusForbidden, r.status, "%q: %s", acc, r.raw)
		r = attackSend(t, http.MethodGet, srv.URL+"/accounts/"+strings.ReplaceAll(acc, " ", "%20"), "tok-a", "", "")
		require.Equal(t, http.StatusNotFound, r.status, "%q: %s", acc, r.raw)
	}
	require.EqualValues(t, 100_000, dbtest.Balance(t, store, "ACC-A"))

	// A replay with a token that no longer grants the account: refused, not replayed.
	k3 := uuid.NewString()
	body := transferBody(t, "acc-a", 2_000)
	require.Equal(t, http.StatusCreated, attackSend(t, http.MethodPost, srv.URL+"/pix", "tok-a", k3, body).status)
	r = attackSend(t, http.MethodPost, srv.URL+"/pix", "tok-a-later", k3, body)
	require.Equal(t, http.StatusForbidden, r.status, r.raw)
	require.NotContains(t, r.raw, "balance_after_cents")

	// The same key, same caller, at the same instant: one debit.
	before := dbtest.Balance(t, store, "acc-a")
	k4, body4 := uuid.NewString(), transferBody(t, "acc-a", 500)
	var wg sync.WaitGroup
	statuses := make([]int, 16)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = attackSend(t, http.MethodPost, srv.URL+"/pix", "tok-a", k4, body4).status
		}()
	}
	wg.Wait()
	for _, s := range statuses {
		require.Contains(t, []int{http.StatusCreated, http.StatusConflict}, s)
	}
	require.EqualValues(t, before-500, dbtest.Balance(t, store, "acc-a"))

	// Reads of B's resources by A look missing.
	var tr map[string]any
	require.NoError(t, json.Unmarshal([]byte(rb.raw), &tr))
	ra := attackSend(t, http.MethodGet, srv.URL+"/pix/transfers/"+tr["id"].(string), "tok-a", "", "")
	rm := attackSend(t, http.MethodGet, srv.URL+"/pix/transfers/"+uuid.NewString(), "tok-a", "", "")
	require.Equal(t, rm.status, ra.status)
	require.Equal(t, rm.raw, ra.raw)

	// Admin: a customer token is refused; pix:admin passes.
	require.Equal(t, http.StatusForbidden, attackSend(t, http.MethodGet, srv.URL+"/admin/reconcile", "tok-a", "", "").status)
	require.Equal(t, http.StatusOK, attackSend(t, http.MethodGet, srv.URL+"/admin/reconcile", "tok-admin", "", "").status)

	// Customer routes open (AUTH_REQUIRED=false), no ADMIN_TOKEN, no issuer: admin stays shut.
	open := newServer(t, store, func(d *api.Deps) { d.OpenCustomerRoutes = true; d.AdminToken = ""; d.Tokens = nil })
	for _, tok := range []string{"", " ", "x", adminToken} {
		r = attackSend(t, http.MethodGet, open.URL+"/admin/reconcile", tok, "", "")
		require.Contains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, r.status, "%q: %s", tok, r.raw)
	}
}
