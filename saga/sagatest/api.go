package sagatest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/auth"
)

// Callers are the test's bearer tokens, each naming its caller: the
// router's token verifier (api.TokenVerifier).
type Callers map[string]auth.Caller

// Verify answers the caller of token; an unknown token is refused as an
// invalid one.
func (cs Callers) Verify(_ context.Context, token string) (auth.Caller, error) {
	if c, ok := cs[token]; ok {
		return c, nil
	}
	return auth.Caller{}, &auth.TokenError{Reason: "unknown token"}
}

// Customer is a customer's token granting accounts, to read and to write
// (scopes pix:read and pix:write).
func Customer(subject string, accounts ...string) auth.Caller {
	return auth.Caller{Subject: subject, Scopes: []string{auth.ScopeRead, auth.ScopeWrite}, Accounts: accounts}
}

// Reader is a customer's token granting accounts to read only (pix:read).
func Reader(subject string, accounts ...string) auth.Caller {
	return auth.Caller{Subject: subject, Scopes: []string{auth.ScopeRead}, Accounts: accounts}
}

// Operator is an operator's token (scope pix:admin): the operator routes.
func Operator(subject string) auth.Caller {
	return auth.Caller{Subject: subject, Scopes: []string{auth.ScopeAdmin}}
}

// Options say what NewAPI's router serves.
type Options struct {
	// Callers are the tokens the requests may carry.
	Callers Callers
	// Sagas are the HTTP sides served: the saga's, and any it needs beside
	// it (the transfer's, transfer.Handlers.HTTP(), ...).
	Sagas []api.SagaHTTP
	// Deps are the rest of the router's dependencies (Temporal, ...).
	// NewAPI sets what is unset of Stores (the store's), Keys (a minute's
	// lock, an hour's keep), Logger (discarding), and sets Tokens and
	// Sagas from the fields above.
	Deps api.Deps
	// Routes are the route classes served; 0: the customer routes (with
	// the operator routes).
	Routes api.Routes
}

// API is the router of NewAPI, served on a local listener for the test's
// life.
type API struct {
	t testing.TB
	// URL is the server's base URL.
	URL string
	// Store is the database the router serves.
	Store *db.Store
}

// NewAPI serves the router of o over store (a schema of db/dbtest's) until
// the test ends.
func NewAPI(t testing.TB, store *db.Store, o Options) *API {
	t.Helper()
	d := o.Deps
	if d.Stores == (api.Stores{}) {
		d.Stores = api.StoresOf(store)
	}
	if d.Keys == (db.KeyPolicy{}) {
		d.Keys = db.KeyPolicy{LockFor: time.Minute, KeepFor: time.Hour}
	}
	if d.Logger == nil {
		d.Logger = Discard()
	}
	d.Tokens, d.Sagas = o.Callers, o.Sagas
	routes := o.Routes
	if routes == 0 {
		routes = api.CustomerRoutes
	}
	handler, err := api.NewRouter(d, routes)
	require.NoError(t, err)
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return &API{t: t, URL: srv.URL, Store: store}
}

// Discard is a logger that writes nothing: a handler's, the router's.
func Discard() *slog.Logger { return slog.New(slog.NewJSONHandler(io.Discard, nil)) }

// Call sends method path as token's caller ("": no Authorization), with
// the Idempotency-Key key ("": none) and body as JSON (nil: none), and
// returns the answer's status and its JSON object.
func (a *API) Call(method, path, token, key string, body any) (int, map[string]any) {
	a.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(a.t, err)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.URL+path, r)
	require.NoError(a.t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(a.t, err)
	defer res.Body.Close()
	var out map[string]any
	require.NoError(a.t, json.NewDecoder(res.Body).Decode(&out), "%s %s: the answer is no JSON object", method, path)
	return res.StatusCode, out
}

// Code is the error code of an error answer's body ("" for another).
func Code(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// Walk follows a list's pages (api.PageOf) from the first, path, to the
// last, as token's caller, and returns the rows of its member (the list's
// name, "scheduled") in the order listed. Each page must answer 200, and
// say next_cursor (null on the last).
func (a *API) Walk(path, member, token string) []map[string]any {
	a.t.Helper()
	var rows []map[string]any
	next := ""
	for page := 0; ; page++ {
		require.Less(a.t, page, 1000, "a walk ends")
		at := path
		if next != "" {
			sep := "?"
			if strings.Contains(path, "?") {
				sep = "&"
			}
			at += sep + "cursor=" + url.QueryEscape(next)
		}
		status, body := a.Call(http.MethodGet, at, token, "", nil)
		require.Equal(a.t, http.StatusOK, status, "%s: %v", at, body)
		found, ok := body[member].([]any)
		require.True(a.t, ok, "%s: no list %q in %v", at, member, body)
		for _, r := range found {
			rows = append(rows, r.(map[string]any))
		}
		nc, present := body["next_cursor"]
		require.True(a.t, present, "next_cursor is always there, null on the last page")
		if nc == nil {
			return rows
		}
		require.NotEmpty(a.t, found, "a page with a next page has rows")
		next = nc.(string)
	}
}
