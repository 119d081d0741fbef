package psp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/internal/psp/psptest"
)

const e2e = psptest.E2E

var transfer = psptest.Transfer

// server answers every request with status and body.
func server(t *testing.T, status int, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestConnectionRefusedIsTransient(t *testing.T) {
	// Nothing listens on port 1.
	c := psp.NewHTTPClient("http://127.0.0.1:1", time.Second)
	_, err := c.Submit(t.Context(), transfer)
	require.ErrorIs(t, err, psp.ErrTransient)
	_, err = c.Status(t.Context(), e2e)
	require.ErrorIs(t, err, psp.ErrTransient)
}

func TestStatusClassification(t *testing.T) {
	for _, tc := range []struct {
		name      string
		status    int
		body      string
		transient bool
		request   int // the *RequestError's StatusCode, 0 if none is expected
	}{
		{name: "500", status: 500, body: `{"error":{"code":"internal","message":"boom"}}`, transient: true},
		{name: "502 without body", status: 502, transient: true},
		{name: "503", status: 503, body: `{"error":{"code":"psp_unavailable","message":"down"}}`, transient: true},
		{name: "429", status: 429, transient: true},
		{name: "408", status: 408, transient: true},
		{name: "400", status: 400, body: `{"error":{"code":"invalid_request","message":"amount_cents must be positive"}}`, request: 400},
		{name: "409", status: 409, body: `{"error":{"code":"end_to_end_id_reused","message":"reused"}}`, request: 409},
		{name: "422 without a result", status: 422, body: `{"error":{"code":"x","message":"y"}}`, request: 422},
		{name: "404 on submit", status: 404, body: `not json`, request: 404},
		{name: "302", status: 302, transient: true},
		{name: "204", status: 204, transient: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := psp.NewHTTPClient(server(t, tc.status, tc.body).URL, time.Second)
			_, err := c.Submit(t.Context(), transfer)
			require.Error(t, err)
			require.Equal(t, tc.transient, errors.Is(err, psp.ErrTransient), "transient: %v", err)
			reqErr, ok := errors.AsType[*psp.RequestError](err)
			if tc.request == 0 {
				require.False(t, ok, "unexpected RequestError: %v", err)
				return
			}
			require.True(t, ok, "want a RequestError: %v", err)
			require.Equal(t, tc.request, reqErr.StatusCode)
			require.NotEmpty(t, reqErr.Message)
		})
	}
}

func TestRequestErrorCarriesTheMessage(t *testing.T) {
	c := psp.NewHTTPClient(server(t, 400, `{"error":{"code":"invalid_request","message":"pix_key is required"}}`).URL, time.Second)
	_, err := c.Submit(t.Context(), transfer)
	reqErr, ok := errors.AsType[*psp.RequestError](err)
	require.True(t, ok, "want a RequestError: %v", err)
	require.Equal(t, &psp.RequestError{StatusCode: 400, Code: "invalid_request", Message: "pix_key is required"}, reqErr)
}

func TestRejectionIsAResult(t *testing.T) {
	c := psp.NewHTTPClient(server(t, 422, `{"end_to_end_id":"`+e2e+`","status":"rejected","reason":"receiver account closed"}`).URL, time.Second)
	r, err := c.Submit(t.Context(), transfer)
	require.NoError(t, err)
	require.Equal(t, psp.Result{EndToEndID: e2e, Status: psp.StatusRejected, Reason: "receiver account closed"}, r)
}

func TestStatusNotFound(t *testing.T) {
	c := psp.NewHTTPClient(server(t, 404, `{"error":{"code":"transfer_not_found","message":"no"}}`).URL, time.Second)
	_, err := c.Status(t.Context(), e2e)
	require.ErrorIs(t, err, psp.ErrNotFound)
	require.NotErrorIs(t, err, psp.ErrTransient)
}

// TestUnintelligibleAnswersAreTransient: an answer that does not say what
// became of the transfer is never taken for one that does, and is retried.
func TestUnintelligibleAnswersAreTransient(t *testing.T) {
	for _, tc := range []struct{ name, body string }{
		{"not json", `<html>`},
		{"another transfer", `{"end_to_end_id":"E00000000000000000000000000000000","status":"pending"}`},
		{"unknown status", `{"end_to_end_id":"` + e2e + `","status":"maybe"}`},
		{"empty", ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := psp.NewHTTPClient(server(t, 200, tc.body).URL, time.Second)
			_, err := c.Submit(t.Context(), transfer)
			require.ErrorIs(t, err, psp.ErrTransient)
			_, err = c.Status(t.Context(), e2e)
			require.ErrorIs(t, err, psp.ErrTransient)
		})
	}
}

// TestTimeoutIsTransient: a PSP that does not answer within the client's
// timeout is transient; a caller that cancels gets context.Canceled, which
// is not.
func TestTimeoutIsTransient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		// The server notices that the client went away only once the body
		// is read.
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)

	c := psp.NewHTTPClient(srv.URL, 50*time.Millisecond)
	_, err := c.Submit(t.Context(), transfer)
	require.ErrorIs(t, err, psp.ErrTransient)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = psp.NewHTTPClient(srv.URL, time.Minute).Status(ctx, e2e)
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, psp.ErrTransient)
}

func TestRequests(t *testing.T) {
	type seen struct{ method, path, contentType string }
	// A channel, not a shared variable: the handler runs on the server's
	// goroutine.
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Method, r.URL.Path, r.Header.Get("Content-Type")}
		_, _ = w.Write([]byte(`{"end_to_end_id":"` + e2e + `","status":"settled"}`))
	}))
	t.Cleanup(srv.Close)
	c := psp.NewHTTPClient(srv.URL+"/", time.Second)

	r, err := c.Status(t.Context(), e2e)
	require.NoError(t, err)
	require.Equal(t, psp.Result{EndToEndID: e2e, Status: psp.StatusSettled}, r)
	require.Equal(t, seen{http.MethodGet, "/transfers/" + e2e, ""}, <-got)

	_, err = c.Submit(t.Context(), transfer)
	require.NoError(t, err)
	require.Equal(t, seen{http.MethodPost, "/transfers", "application/json"}, <-got)
}

func TestBadBaseURLIsPermanent(t *testing.T) {
	_, err := psp.NewHTTPClient("127.0.0.1:8090", time.Second).Submit(t.Context(), transfer)
	require.Error(t, err)
	require.NotErrorIs(t, err, psp.ErrTransient)
}
