package psp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"golang.org/x/oauth2"

	"github.com/pixbank/pix/internal/tracing"
)

// maxResponseBytes bounds what a call reads of an answer: a PSP's answers
// are a few hundred bytes, and a broken or hostile peer must not make the
// worker buffer without limit.
const maxResponseBytes = 1 << 20

// HTTPClient is a Client and a RefundClient over the PSP's API Pix (the
// devoluções, GET /pix, the webhook registration), and over the transfer
// interface the spec does not standardise (POST /transfers and GET
// /transfers/{end_to_end_id}, as the simulator of package pspsim serves
// them). With Config.TokenURL every call carries an OAuth 2.0 bearer token;
// with Config.CertFile every connection presents our client certificate.
// It is safe for concurrent use.
type HTTPClient struct {
	baseURL string
	// err is the configuration's defect, returned by every call of a
	// client NewHTTPClient made: it has no error result, and a
	// misconfigured URL must not pass for a transient failure that would
	// be retried for ever.
	err     error
	timeout time.Duration
	hc      *http.Client
	// tokens is nil when the client sends no token.
	tokens *tokens
	// traced: each call is a client span (HTTPOption WithTracing).
	traced bool
}

var _ Client = (*HTTPClient)(nil)

// HTTPOption changes an HTTPClient.
type HTTPOption func(*HTTPClient)

// WithTracing makes each call a client span of p, named by the PSP route
// called ("PSP GET /transfers/{end_to_end_id}"; a token request is "PSP
// POST {oauth token}"), a child of the span in the call's context, and
// sends the PSP that span's trace context, in the formats OTEL_PROPAGATORS
// names (by default its traceparent; no baggage: the service holds none).
// Headers and bodies are never recorded. Off: nothing.
func WithTracing(p *tracing.Provider) HTTPOption {
	return func(c *HTTPClient) {
		if !p.Enabled() {
			return
		}
		c.traced = true
		c.hc.Transport = otelhttp.NewTransport(c.hc.Transport,
			otelhttp.WithTracerProvider(p.TracerProvider()),
			otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()),
			otelhttp.WithPropagators(p.Propagator()),
			otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
				route, _ := r.Context().Value(routeKey{}).(string)
				return "PSP " + r.Method + " " + route
			}))
	}
}

// routeKey holds, in a traced call's context, the route template it calls.
type routeKey struct{}

// beforeSendKey holds, in a call's context, what BeforeSend asked to run.
type beforeSendKey struct{}

// BeforeSend returns a copy of ctx with which the client runs send before
// each request it sends: once the request is ready and its token in hand,
// just before it is handed to the network (a 401's retry too). A call that
// fails earlier (no token, a request the PSP could only refuse, not sent)
// never runs it. An error of send stops the request unsent, and the call
// returns it (wrapped). The refund saga records there that its PUT may
// reach the PSP: a token endpoint that refuses us or is down has sent
// nothing.
func BeforeSend(ctx context.Context, send func(context.Context) error) context.Context {
	return context.WithValue(ctx, beforeSendKey{}, send)
}

// Sending runs what BeforeSend put in ctx, if anything: the HTTPClient
// calls it before each request it sends, and a fake client where it would
// send.
func Sending(ctx context.Context) error {
	if send, ok := ctx.Value(beforeSendKey{}).(func(context.Context) error); ok {
		return send(ctx)
	}
	return nil
}

// New returns a client of the PSP's API as cfg describes it: an error when
// the settings do not go together or a certificate can't be read.
func New(cfg Config, opts ...HTTPOption) (*HTTPClient, error) {
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if err := cfg.check(); err != nil {
		return nil, err
	}
	tc, err := cfg.tlsConfig()
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// The worker calls one host from many activities at once; the default
	// of 2 idle connections per host would make most calls open a new one.
	tr.MaxIdleConnsPerHost = 32
	tr.TLSClientConfig = tc
	c := &HTTPClient{baseURL: cfg.BaseURL, timeout: cfg.Timeout}
	c.hc = &http.Client{
		Transport: tr,
		// A PSP API does not redirect; following one would resend the
		// payment order (or our client secret) to an address nobody
		// configured.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	if cfg.Authenticated() {
		timeout := cfg.Timeout
		if timeout <= 0 {
			timeout = defaultTokenTimeout
		}
		// The token request goes through c.hc itself (mutual TLS, and the
		// tracing an option adds to its transport).
		c.tokens = newTokens(&tokenFetcher{cfg: cfg, hc: c.hc, timeout: timeout})
	}
	for _, opt := range opts {
		opt(c)
	}
	return c, nil
}

// NewHTTPClient returns a client of the PSP API at baseURL (for example
// "http://127.0.0.1:8090") without authentication: New with only BaseURL
// and Timeout, for tests and the simulator. A defect of the URL is
// returned by every call. Timeout bounds each call; a call that times out
// is ErrTransient. A timeout <= 0 leaves each call bounded by its context
// alone.
func NewHTTPClient(baseURL string, timeout time.Duration, opts ...HTTPOption) *HTTPClient {
	c, err := New(Config{BaseURL: baseURL, Timeout: timeout}, opts...)
	if err != nil {
		return &HTTPClient{err: err}
	}
	return c
}

// Submit asks the PSP to send t. 201 (created) and 200 (a duplicate of a
// transfer the PSP already has) carry the Result; 422 with a rejected
// Result body is a rejection, returned as a Result with StatusRejected and
// no error; 409 is a *RequestError that is ErrAlreadySubmitted; every other
// answer is classified by statusError (see Classify).
func (c *HTTPClient) Submit(ctx context.Context, t Transfer) (Result, error) {
	body, err := json.Marshal(t)
	if err != nil {
		return Result{}, fmt.Errorf("psp submit %s: encode: %w", t.EndToEndID, err)
	}
	code, resp, err := c.call(ctx, http.MethodPost, "/transfers", "/transfers", body)
	if err != nil {
		return Result{}, fmt.Errorf("psp submit %s: %w", t.EndToEndID, err)
	}
	switch code {
	case http.StatusOK, http.StatusCreated:
		r, err := decodeResult(resp, t.EndToEndID)
		if err != nil {
			return Result{}, fmt.Errorf("psp submit %s: %w", t.EndToEndID, unintelligible(fmt.Errorf("http %d: %w", code, err)))
		}
		return r, nil
	case http.StatusUnprocessableEntity:
		// A 422 that is not a rejected Result (an error body) is a refusal
		// of the request, classified below like any other 4xx.
		if r, err := decodeResult(resp, t.EndToEndID); err == nil && r.Status == StatusRejected {
			return r, nil
		}
	}
	return Result{}, fmt.Errorf("psp submit %s: %w", t.EndToEndID, statusError(code, resp))
}

// Status asks where a submitted transfer stands; ErrNotFound (wrapped) when
// the PSP has none with that end_to_end_id.
func (c *HTTPClient) Status(ctx context.Context, endToEndID string) (Result, error) {
	code, resp, err := c.call(ctx, http.MethodGet, "/transfers/{end_to_end_id}", "/transfers/"+url.PathEscape(endToEndID), nil)
	if err != nil {
		return Result{}, fmt.Errorf("psp status %s: %w", endToEndID, err)
	}
	switch code {
	case http.StatusOK:
		r, err := decodeResult(resp, endToEndID)
		if err != nil {
			return Result{}, fmt.Errorf("psp status %s: %w", endToEndID, unintelligible(fmt.Errorf("http %d: %w", code, err)))
		}
		return r, nil
	case http.StatusNotFound:
		return Result{}, fmt.Errorf("psp status %s: %w", endToEndID, ErrNotFound)
	}
	return Result{}, fmt.Errorf("psp status %s: %w", endToEndID, statusError(code, resp))
}

// call sends one request to path, an instance of route (the template that
// names a traced call), and reads the whole answer, at most
// maxResponseBytes. Its error is about the exchange itself (no answer, an
// answer cut off or too large, no token), never about the HTTP status,
// which the caller interprets.
func (c *HTTPClient) call(ctx context.Context, method, route, path string, body []byte) (int, []byte, error) {
	return c.callLimit(ctx, method, route, path, body, maxResponseBytes)
}

// callLimit is call with its own bound on the answer. With a token, a 401
// drops it and the request is sent once more with a new one (the PSP did
// nothing with a request it did not authenticate, and every request here
// is idempotent); a second 401 is the answer.
func (c *HTTPClient) callLimit(ctx context.Context, method, route, path string, body []byte, limit int64) (int, []byte, error) {
	if c.err != nil {
		return 0, nil, c.err
	}
	callCtx, cancel := ctx, context.CancelFunc(func() {})
	if c.timeout > 0 {
		callCtx, cancel = context.WithTimeout(ctx, c.timeout)
	}
	defer cancel()
	if c.traced {
		callCtx = context.WithValue(callCtx, routeKey{}, route)
	}
	for retried := false; ; retried = true {
		var tok *oauth2.Token
		var gen uint64
		if c.tokens != nil {
			var err error
			if tok, gen, err = c.tokens.token(callCtx); err != nil {
				return 0, nil, tokenWaitError(ctx, err)
			}
		}
		code, resp, err := c.send(ctx, callCtx, method, path, body, tok, limit)
		if err == nil && code == http.StatusUnauthorized && tok != nil && !retried {
			c.tokens.drop(gen)
			continue
		}
		if err == nil && tok != nil && tok.AccessToken != "" && code/100 != 2 {
			// An error answer becomes error text (logs, spans, Temporal
			// failures): a PSP or gateway that echoes our token in it must
			// not put it there.
			resp = bytes.ReplaceAll(resp, []byte(tok.AccessToken), []byte("[token]"))
		}
		return code, resp, err
	}
}

// tokenWaitError is the error of a call that got no token: the token
// endpoint's (a *TokenError), or the call's context that ended while it
// waited for one: its deadline is the endpoint too slow (transient), its
// cancellation the caller's own, returned as it is (see exchangeError).
func tokenWaitError(ctx context.Context, err error) error {
	var tokenErr *TokenError
	if errors.As(err, &tokenErr) || errors.Is(ctx.Err(), context.Canceled) {
		return err
	}
	return &TokenError{Transient: true, detail: "no token within the call's time", cause: err}
}

// send sends one request, with the bearer token tok when there is one.
func (c *HTTPClient) send(ctx, callCtx context.Context, method, path string, body []byte, tok *oauth2.Token, limit int64) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(callCtx, method, c.baseURL+path, rd)
	if err != nil {
		return 0, nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if tok != nil {
		tok.SetAuthHeader(req)
	}
	if err := Sending(ctx); err != nil {
		return 0, nil, fmt.Errorf("not sent: %w", err)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, exchangeError(ctx, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return 0, nil, exchangeError(ctx, fmt.Errorf("read http %d answer: %w", resp.StatusCode, err))
	}
	if int64(len(b)) > limit {
		return 0, nil, unintelligible(fmt.Errorf("http %d answer larger than %d bytes", resp.StatusCode, limit))
	}
	return resp.StatusCode, b, nil
}

// unintelligible classifies an answer this client can't understand (an
// unexpected status, a body that is not a Result about the transfer asked
// for) as transient: whether the PSP took the transfer is unknown, and
// asking again with the same end_to_end_id is safe, whereas a permanent
// error could make the worker give up on a transfer the PSP is sending.
func unintelligible(err error) error {
	return fmt.Errorf("%w: unintelligible answer: %w", ErrTransient, err)
}

// exchangeError classifies a request that got no (complete) answer. Whether
// the PSP received it is unknown, which is what ErrTransient means: retry
// with the same end_to_end_id. The exception is a caller that cancelled its
// context: that says nothing about the PSP, and the caller, which is
// stopping, gets its own context.Canceled back.
func exchangeError(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrTransient, err)
}

// statusError classifies an answer whose status the call did not expect,
// by its status (Classify reads the problem's type where it says more).
func statusError(code int, body []byte) error {
	e := errorOf(code, body)
	switch {
	case transientStatus(code):
		return fmt.Errorf("%w: http %d: %s", ErrTransient, code, e.describe())
	case code >= 400:
		return &RequestError{StatusCode: code, Type: e.Type, Code: e.Code, Message: e.Message}
	default:
		// 3xx or an unexpected 2xx: see unintelligible.
		return unintelligible(fmt.Errorf("unexpected http %d: %s", code, e.describe()))
	}
}

// transientStatus reports whether an HTTP status says only that the
// server could not answer now (5xx, 408, 425, 429), the API's or the token
// endpoint's: the outcome is unknown, and asking again is the answer.
func transientStatus(code int) bool {
	return code >= 500 || code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code == http.StatusTooEarly
}

// maxErrorMessage bounds what an error keeps of a PSP's words: they go to
// logs, spans and Temporal failures.
const maxErrorMessage = 200

// errorBody is what an error answer says: an RFC 7807 problem (the API
// Pix's: its type, title and detail), or the simulator's envelope
// {"error":{"code","message"}} of its own routes, or the start of whatever
// else came, or the status text.
type errorBody struct {
	Type, Code, Message string
}

func (e errorBody) describe() string {
	switch {
	case e.Type != "":
		return e.Type + ": " + e.Message
	case e.Code != "":
		return e.Code + ": " + e.Message
	}
	return e.Message
}

func errorOf(code int, body []byte) errorBody {
	var p struct {
		Type   string `json:"type"`
		Title  string `json:"title"`
		Detail string `json:"detail"`
	}
	if json.Unmarshal(body, &p) == nil && p.Type != "" {
		msg := p.Title
		if p.Detail != "" {
			msg = strings.TrimSpace(msg + ": " + p.Detail)
		}
		return errorBody{Type: bounded(p.Type), Message: bounded(msg)}
	}
	var env struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &env) == nil && (env.Error.Code != "" || env.Error.Message != "") {
		return errorBody{Code: bounded(env.Error.Code), Message: bounded(env.Error.Message)}
	}
	msg := bounded(strings.TrimSpace(string(body)))
	if msg == "" {
		msg = strings.ToLower(http.StatusText(code))
	}
	return errorBody{Message: msg}
}

// bounded cuts s to maxErrorMessage bytes, on a rune boundary.
func bounded(s string) string {
	if len(s) <= maxErrorMessage {
		return s
	}
	cut := maxErrorMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// notFound reports whether a 404 says, in a problem of one of types, that
// the PSP holds no such record; a 404 without it (a gateway's, a wrong
// path's) says nothing about the record, and is a refused request.
func notFound(code int, body []byte, types ...string) bool {
	return code == http.StatusNotFound && slices.Contains(types, errorOf(code, body).Type)
}

// decodeResult parses a Result and checks that it is about the transfer
// asked for and has a known status: an answer about another transfer must
// never be taken for this one's.
func decodeResult(body []byte, endToEndID string) (Result, error) {
	var r Result
	if err := json.Unmarshal(body, &r); err != nil {
		return Result{}, fmt.Errorf("decode result: %w", err)
	}
	if r.EndToEndID != endToEndID {
		return Result{}, fmt.Errorf("result is about end_to_end_id %q", r.EndToEndID)
	}
	if !r.Status.Valid() {
		return Result{}, fmt.Errorf("result has unknown status %q", r.Status)
	}
	return r, nil
}
