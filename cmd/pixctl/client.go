package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/webhooksig"
)

// apiClient calls the PIX service's HTTP API.
type apiClient struct {
	base string
	http http.Client
	// signingKey signs what is posted to /webhooks/ (as a PSP would);
	// adminToken authorizes /admin/ calls.
	signingKey []byte
	adminToken string
	// customerToken (PIX_TOKEN) is the bearer token of every customer
	// request (POST /pix, GET /pix/..., GET /accounts/...); without it
	// dev mints one per request, for actingFor and the scope the request
	// needs; without either none is sent. dev also stands in for a
	// missing adminToken. nil: no development issuer.
	customerToken string
	dev           *devTokens
	// actingFor are the accounts the customer requests act for (as).
	actingFor []string
	// webhooks, when set, takes what is posted to /webhooks/: the API's
	// webhook listener (WEBHOOK_HTTP_ADDR), which has a base and a client
	// certificate of its own. nil: the webhooks go to base with the rest.
	webhooks *apiClient
	// operator: every request is an operator's (the admin token, or one
	// dev mints of scope pix:admin), whatever its path: a saga's operator
	// routes need not live under /admin/ (api.Route's scope says the
	// class, not the path).
	operator bool
}

// as is the client of a customer acting for accounts: the token of its
// customer requests grants these accounts only.
func (c *apiClient) as(accounts ...string) *apiClient {
	return &apiClient{base: c.base, signingKey: c.signingKey, adminToken: c.adminToken,
		customerToken: c.customerToken, dev: c.dev, actingFor: accounts, webhooks: c.webhooks, operator: c.operator}
}

// asOperator is the client of an operator: its requests carry the admin
// token (or one dev mints) on any path, for a saga's operator routes
// (POST /pix/credits/{id}/blocks, ...).
func (c *apiClient) asOperator() *apiClient {
	op := c.as(c.actingFor...)
	op.operator = true
	return op
}

// customerRoute: a route of the customer API, which wants a bearer token
// naming the caller's accounts.
func customerRoute(path string) bool {
	return path == "/pix" || strings.HasPrefix(path, "/pix/") || strings.HasPrefix(path, "/accounts/")
}

// bearer is the token a request to path carries, "" for none; minted
// tells that pixctl minted it.
func (c *apiClient) bearer(method, path string) (token string, minted bool, err error) {
	switch {
	case c.operator && !strings.HasPrefix(path, "/webhooks/"), strings.HasPrefix(path, "/admin/"):
		if c.adminToken != "" || c.dev == nil {
			return c.adminToken, false, nil
		}
		token, err = c.dev.admin()
		return token, true, err
	case customerRoute(path):
		if c.customerToken != "" || c.dev == nil {
			return c.customerToken, false, nil
		}
		scope := auth.ScopeWrite
		if method == http.MethodGet || method == http.MethodHead {
			scope = auth.ScopeRead
		}
		token, err = c.dev.customer(scope, c.actingFor)
		return token, true, err
	}
	return "", false, nil
}

// refusedHint explains a customer request refused for its token.
func refusedHint(sent, minted bool) string {
	switch {
	case !sent:
		return "; the customer routes want a bearer token: set AUTH_DEV_KEY_DIR to the development issuer's directory " +
			"(make run sets one up in .data/auth), or PIX_TOKEN (pixctl token -account ...; not the demo's, whose customers each have their own)"
	case minted:
		return "; the token was minted by the development issuer in AUTH_DEV_KEY_DIR: does the API verify its tokens " +
			"(AUTH_ISSUER, AUTH_AUDIENCE and AUTH_JWKS_FILE as `pixctl dev-issuer -env` prints them)?"
	}
	return "; the token is PIX_TOKEN's"
}

// call sends body (if any) as JSON and decodes the answer into out (if
// any), returning the HTTP status. Only transport failures are errors.
func (c *apiClient) call(ctx context.Context, method, path string, body, out any) (int, error) {
	status, _, err := c.callWith(ctx, method, path, nil, body, out)
	return status, err
}

// callWith is call with extra request headers, returning the answer's
// headers too.
func (c *apiClient) callWith(ctx context.Context, method, path string, header http.Header, body, out any) (int, http.Header, error) {
	if c.webhooks != nil && strings.HasPrefix(path, "/webhooks/") {
		return c.webhooks.callWith(ctx, method, path, header, body, out)
	}
	var buf bytes.Buffer
	if body != nil {
		if err := json.NewEncoder(&buf).Encode(body); err != nil {
			return 0, nil, fmt.Errorf("encode request: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, &buf)
	if err != nil {
		return 0, nil, usageErrorf("the API's URL %q: %w", c.base, err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	minted := false
	switch {
	case strings.HasPrefix(path, "/webhooks/") && c.signingKey != nil:
		webhooksig.SetHeaders(req.Header, fmt.Sprintf("msg_pixctl_%d", time.Now().UnixNano()), time.Now(), buf.Bytes(), c.signingKey)
	case req.Header.Get("Authorization") == "":
		var token string
		if token, minted, err = c.bearer(method, path); err != nil {
			return 0, nil, fmt.Errorf("%s %s: bearer token: %w", method, path, err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
	}
	res, err := c.http.Do(req)
	if err != nil {
		return 0, nil, unavailable(fmt.Errorf("%s %s: %w", method, path, err))
	}
	defer res.Body.Close()
	answer, err := io.ReadAll(res.Body)
	if err != nil {
		return res.StatusCode, res.Header, unavailable(fmt.Errorf("%s %s: read answer: %w", method, path, err))
	}
	// A customer request refused for its token is the command's failure,
	// whatever it meant to do with the answer.
	if customerRoute(path) && (res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden) {
		var e apiError
		_ = json.Unmarshal(answer, &e)
		return res.StatusCode, res.Header, fmt.Errorf("%w%s", check(res.StatusCode, e, method+" "+path), refusedHint(req.Header.Get("Authorization") != "", minted))
	}
	if out != nil && res.StatusCode != http.StatusNoContent {
		if err := json.Unmarshal(answer, out); err != nil {
			return res.StatusCode, res.Header, unavailable(fmt.Errorf("%s %s: decode answer (HTTP %d): %w", method, path, res.StatusCode, err))
		}
	}
	return res.StatusCode, res.Header, nil
}
