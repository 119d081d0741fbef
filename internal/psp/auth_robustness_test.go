package psp_test

// The client against a token endpoint or an API that misbehaves (found by
// an attack review of issue 27's client): a hung endpoint, odd expires_in,
// a PSP_URL that would send every route elsewhere, secrets in URLs and in
// the PSP's answers.

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/internal/psp/psptest"
	"github.com/pixbank/pix/internal/tracing"
)

// A token endpoint that never answers (a black-holed load balancer): the
// calls waiting for a token share one request, and each returns when its
// own context ends, not after a whole token timeout of its own in turn
// (they used to queue on a lock held across the request: the k-th returned
// after about k token timeouts).
func TestHungTokenEndpointHoldsNoCallerBeyondItsContext(t *testing.T) {
	release := make(chan struct{})
	var fetches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/oauth/token" {
			fetches.Add(1)
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.WriteHeader(http.StatusNotFound)
	}))
	defer srv.Close()
	defer close(release)
	const tokenTimeout = 400 * time.Millisecond
	c, err := psp.New(psp.Config{BaseURL: srv.URL, Timeout: tokenTimeout, TokenURL: srv.URL + "/oauth/token", ClientID: "bank", ClientSecret: "x"})
	require.NoError(t, err)

	const callers = 6
	const callerDeadline = 100 * time.Millisecond
	var wg sync.WaitGroup
	elapsed := make([]time.Duration, callers)
	errs := make([]error, callers)
	for i := range callers {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), callerDeadline)
			defer cancel()
			start := time.Now()
			_, errs[i] = c.Status(ctx, e2e)
			elapsed[i] = time.Since(start)
		})
	}
	wg.Wait()
	var worst time.Duration
	for i, e := range elapsed {
		worst = max(worst, e)
		require.Equal(t, psp.AnswerTransient, psp.Classify(errs[i]), "no token in time: transient, %v", errs[i])
	}
	t.Logf("token fetches: %d; slowest caller returned after %s (its context: %s, token timeout %s)", fetches.Load(), worst, callerDeadline, tokenTimeout)
	require.Less(t, worst, tokenTimeout+200*time.Millisecond,
		"a caller waited for the token beyond its own context and beyond one token timeout: fetches serialized, one per waiter")
	require.EqualValues(t, 1, fetches.Load(), "one token request for all the waiters")
}

// A token whose expires_in is at or under the early expiry (or negative)
// is not fetched anew for every call: it serves half its lifetime (or a
// short fixed one).
func TestShortExpiresInIsNotATokenPerCall(t *testing.T) {
	for _, expiresIn := range []string{"20", "-5"} {
		t.Run(expiresIn, func(t *testing.T) {
			var fetches atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/oauth/token" {
					fetches.Add(1)
					w.Header().Set("Content-Type", "application/json")
					_, _ = fmt.Fprintf(w, `{"access_token":"tok","token_type":"Bearer","expires_in":%s}`, expiresIn)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = fmt.Fprintf(w, `{"end_to_end_id":%q,"status":"pending"}`, e2e)
			}))
			defer srv.Close()
			c, err := psp.New(psp.Config{BaseURL: srv.URL, Timeout: time.Second, TokenURL: srv.URL + "/oauth/token", ClientID: "bank", ClientSecret: "x"})
			require.NoError(t, err)
			for range 10 {
				_, err := c.Status(context.Background(), e2e)
				require.NoError(t, err)
			}
			t.Logf("expires_in %s: %d token fetches for 10 calls", expiresIn, fetches.Load())
			require.LessOrEqual(t, fetches.Load(), int32(2), "a token fetched for every call")
		})
	}
}

// PSP_URL ending in "#" or "?" is refused at start: url.Parse leaves its
// Fragment and RawQuery empty, and every route would then go to the base
// path itself ("/pix/{e2eid}/devolucao/{id}" a fragment, never sent, or a
// query).
func TestBaseURLWithEmptyFragmentOrQuery(t *testing.T) {
	for _, suffix := range []string{"#", "?"} {
		t.Run(suffix, func(t *testing.T) {
			var got string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got = r.URL.RequestURI()
				w.WriteHeader(http.StatusNotFound)
			}))
			defer srv.Close()
			c, err := psp.New(psp.Config{BaseURL: srv.URL + "/api/v2" + suffix, Timeout: time.Second})
			if err != nil {
				return // refused at start: sound
			}
			_, _ = c.RefundStatus(context.Background(), e2e, "abc")
			t.Logf("PSP_URL %q accepted; GET devolução reached %q", srv.URL+"/api/v2"+suffix, got)
			require.Equal(t, "/api/v2/pix/"+e2e+"/devolucao/abc", got)
		})
	}
}

// A PSP_URL or PSP_OAUTH_TOKEN_URL with credentials in it is refused at
// start without quoting the password: the refusal goes to the start's log
// line and pixctl's stderr. So is one url.Parse refuses (its error quotes
// the URL).
func TestConfigErrorQuotesNoURLPassword(t *testing.T) {
	_, err := psp.New(psp.Config{BaseURL: "https://bank:hunter2-pw@psp.example/api/v2"})
	require.Error(t, err)
	require.NotContains(t, err.Error(), "hunter2-pw", "base url password in the error")
	_, err = psp.New(psp.Config{BaseURL: "https://psp.example/api/v2", TokenURL: "https://bank:hunter3-pw@psp.example/oauth/token", ClientID: "bank", ClientSecret: "x"})
	require.Error(t, err)
	require.NotContains(t, err.Error(), "hunter3-pw", "token url password in the error")
	_, err = psp.New(psp.Config{BaseURL: "https://bank:hunter4-pw@psp.example/api/%zz"})
	require.Error(t, err)
	require.NotContains(t, err.Error(), "hunter4-pw", "an unparsable url's password in the error")
}

// The PSP's own words (a problem's title/detail, an HTML page) are kept in
// RequestError.Message and from there reach logs, spans and Temporal
// failures: a PSP or gateway that echoes the bearer token in its 403 (a
// token valid for other scopes) must not put it there.
func TestTokenEchoedInAnErrorAnswerIsRedacted(t *testing.T) {
	const tok = "eyJhbGciOi.LIVE-TOKEN.sig"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/oauth/token" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, tok)
			return
		}
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = fmt.Fprintf(w, `{"type":"https://pix.bcb.gov.br/api/v2/error/AcessoNegado","title":"Acesso Negado","status":403,"detail":"token %s sem escopo pix.write"}`,
			strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	}))
	defer srv.Close()
	c, err := psp.New(psp.Config{BaseURL: srv.URL, Timeout: time.Second, TokenURL: srv.URL + "/oauth/token", ClientID: "bank", ClientSecret: "x"})
	require.NoError(t, err)
	_, err = c.RequestRefund(context.Background(), psp.RefundRequest{EndToEndID: e2e, ID: "abc", AmountCents: 100})
	require.Error(t, err)
	require.NotContains(t, err.Error(), tok, "the live bearer token is in the error (logs, Temporal history)")
	require.Equal(t, psp.AnswerRequestRefused, psp.Classify(err))
}

// Spans of a traced client (the token request and an API call whose answer
// is a 401 then a 403): no attribute, event or status holds the client
// secret or the token.
func TestSpansHoldNoSecret(t *testing.T) {
	const tok = "LIVE-TOKEN-abc"
	const secret = "CLIENT-SECRET-xyz"
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/oauth/token" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, tok)
			return
		}
		if n.Add(1) == 1 {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusForbidden)
	}))
	defer srv.Close()
	recorder := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	c, err := psp.New(psp.Config{BaseURL: srv.URL + "/api/v2", Timeout: time.Second, TokenURL: srv.URL + "/oauth/token?x=1", ClientID: "bank", ClientSecret: secret},
		psp.WithTracing(tracing.FromTracerProvider(tp)))
	require.NoError(t, err)
	_, err = c.RefundStatus(context.Background(), e2e, "abc")
	require.Error(t, err)
	require.NotEmpty(t, recorder.Ended())
	for _, s := range recorder.Ended() {
		all := s.Name() + " " + s.Status().Description
		for _, kv := range s.Attributes() {
			all += fmt.Sprintf(" %s=%s", kv.Key, kv.Value.String())
		}
		for _, e := range s.Events() {
			all += " event:" + e.Name
			for _, kv := range e.Attributes {
				all += fmt.Sprintf(" %s=%s", kv.Key, kv.Value.String())
			}
		}
		require.NotContains(t, all, tok)
		require.NotContains(t, all, secret)
	}
}

// The calls that wait for one token request that fails all get its
// failure: none asks the endpoint again back to back.
func TestFailedTokenRequestIsSharedByItsWaiters(t *testing.T) {
	f := psptest.NewFakePSP(t)
	f.TokenDelay = 100 * time.Millisecond
	f.TokenAnswer = func(_ int, w http.ResponseWriter) { w.WriteHeader(http.StatusServiceUnavailable) }
	c := f.Client(t)
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			_, err := c.Status(t.Context(), e2e)
			require.Equal(t, psp.AnswerTransient, psp.Classify(err))
		})
	}
	wg.Wait()
	require.Len(t, f.SeenTokens(), 1, "one token request, its failure shared")
	require.Empty(t, f.SeenCalls())
}
