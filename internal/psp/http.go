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
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"

	"github.com/pixbank/pix/internal/tracing"
)

// maxResponseBytes bounds what a call reads of an answer: a PSP's answers
// are a few hundred bytes, and a broken or hostile peer must not make the
// worker buffer without limit.
const maxResponseBytes = 1 << 20

// HTTPClient is a Client over the HTTP API of the PSP simulator (package
// pspsim): POST /transfers and GET /transfers/{end_to_end_id}. It is safe
// for concurrent use.
type HTTPClient struct {
	baseURL string
	// err is the baseURL's defect, returned by every call: NewHTTPClient
	// has no error result, and a misconfigured URL must not pass for a
	// transient failure that would be retried for ever.
	err     error
	timeout time.Duration
	hc      *http.Client
	// traced: each call is a client span (HTTPOption WithTracing).
	traced bool
}

var _ Client = (*HTTPClient)(nil)

// HTTPOption changes an HTTPClient.
type HTTPOption func(*HTTPClient)

// WithTracing makes each call a client span of p, named by the PSP route
// called ("PSP GET /transfers/{end_to_end_id}"), a child of the span in the
// call's context, and sends the PSP that span's traceparent (not our
// baggage). Headers and bodies are never recorded. Off: nothing.
func WithTracing(p *tracing.Provider) HTTPOption {
	return func(c *HTTPClient) {
		if !p.Enabled() {
			return
		}
		c.traced = true
		c.hc.Transport = otelhttp.NewTransport(c.hc.Transport,
			otelhttp.WithTracerProvider(p.TracerProvider()),
			otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()),
			otelhttp.WithPropagators(propagation.TraceContext{}),
			otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
				route, _ := r.Context().Value(routeKey{}).(string)
				return "PSP " + r.Method + " " + route
			}))
	}
}

// routeKey holds, in a traced call's context, the route template it calls.
type routeKey struct{}

// NewHTTPClient returns a client of the PSP API at baseURL (for example
// "http://127.0.0.1:8090"). Timeout bounds each call; a call that times out
// is ErrTransient. A timeout <= 0 leaves each call bounded by its context
// alone.
func NewHTTPClient(baseURL string, timeout time.Duration, opts ...HTTPOption) *HTTPClient {
	c := &HTTPClient{baseURL: strings.TrimRight(baseURL, "/"), timeout: timeout}
	if u, err := url.Parse(c.baseURL); err != nil {
		c.err = fmt.Errorf("psp base url: %w", err)
	} else if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		c.err = fmt.Errorf("psp base url %q: want http(s)://host[:port]", baseURL)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// The worker calls one host from many activities at once; the default
	// of 2 idle connections per host would make most calls open a new one.
	tr.MaxIdleConnsPerHost = 32
	c.hc = &http.Client{
		Transport: tr,
		// A PSP API does not redirect; following one would resend the
		// payment order to an address nobody configured.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	for _, opt := range opts {
		opt(c)
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
// names a traced call), and reads the whole answer. Its error is about the
// exchange itself (no answer, an answer cut off or too large), never about
// the HTTP status, which the caller interprets.
func (c *HTTPClient) call(ctx context.Context, method, route, path string, body []byte) (int, []byte, error) {
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
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, exchangeError(ctx, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return 0, nil, exchangeError(ctx, fmt.Errorf("read http %d answer: %w", resp.StatusCode, err))
	}
	if len(b) > maxResponseBytes {
		return 0, nil, unintelligible(fmt.Errorf("http %d answer larger than %d bytes", resp.StatusCode, maxResponseBytes))
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

// statusError classifies an answer whose status the call did not expect.
func statusError(code int, body []byte) error {
	errCode, msg := errorMessage(code, body)
	switch {
	case code >= 500, code == http.StatusTooManyRequests, code == http.StatusRequestTimeout, code == http.StatusTooEarly:
		return fmt.Errorf("%w: http %d: %s", ErrTransient, code, msg)
	case code >= 400:
		return &RequestError{StatusCode: code, Code: errCode, Message: msg}
	default:
		// 3xx or an unexpected 2xx: see unintelligible.
		return unintelligible(fmt.Errorf("unexpected http %d: %s", code, msg))
	}
}

// errorMessage extracts the code and message of an error body
// {"error":{"code":"...","message":"..."}}, falling back to the start of the
// body, then to the status text.
func errorMessage(code int, body []byte) (string, string) {
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && (e.Error.Code != "" || e.Error.Message != "") {
		return e.Error.Code, e.Error.Message
	}
	// The BCB's API Pix answers errors as RFC 7807 problems: the code is the
	// last segment of type (".../DevolucaoOperacaoInvalida").
	var p struct {
		Type   string `json:"type"`
		Title  string `json:"title"`
		Detail string `json:"detail"`
	}
	if json.Unmarshal(body, &p) == nil && p.Type != "" {
		return p.Type[strings.LastIndex(p.Type, "/")+1:], strings.TrimSpace(p.Title + ": " + p.Detail)
	}
	msg := strings.TrimSpace(string(body))
	if len(msg) > 200 {
		msg = msg[:200] + "..."
	}
	if msg == "" {
		msg = strings.ToLower(http.StatusText(code))
	}
	return "", msg
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
