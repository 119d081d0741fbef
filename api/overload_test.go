package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/internal/pix"
)

// heldWebhooks holds every Receive until released: a request in flight.
type heldWebhooks struct {
	fakeWebhooks
	entered chan struct{}
	release chan struct{}
}

func (h heldWebhooks) Receive(ctx context.Context, n pix.Notification) (pix.Receipt, error) {
	h.entered <- struct{}{}
	<-h.release
	return h.fakeWebhooks.Receive(ctx, n)
}

func TestInFlightCapAnswers503AtOnceAndKeepsTheProbes(t *testing.T) {
	fs := newFakeStore()
	stores := fs.stores()
	held := heldWebhooks{fakeWebhooks: stores.Webhooks.(fakeWebhooks), entered: make(chan struct{}, 1), release: make(chan struct{})}
	stores.Webhooks = held
	var shed atomic.Int64
	srv := newServerOf(t, stores, func(d *api.Deps) {
		d.Temporal = fakeTemporal{}
		d.InFlight = api.NewInFlight(1, func() { shed.Add(1) })
	})
	url := srv.URL + "/webhooks/pix"
	body := nativeWebhookBody(t, "payer", `{"name":"A","ispb":"12345678"}`)

	first := make(chan response, 1)
	go func() { first <- do(t, http.MethodPost, url, "application/json", body) }()
	<-held.entered // the one place is taken

	start := time.Now()
	res, err := http.Post(url, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Less(t, time.Since(start), 2*time.Second, "refused at once, not queued behind the held request")
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode, string(raw))
	require.Equal(t, "1", res.Header.Get("Retry-After"))
	var refusal api.ErrorBody
	require.NoError(t, json.Unmarshal(raw, &refusal), string(raw))
	require.Equal(t, api.CodeUnavailable, refusal.Error.Code)
	require.EqualValues(t, 1, shed.Load())

	// The probes and the scrape are not requests of the cap's.
	for _, probe := range []string{"/healthz", "/readyz"} {
		r := do(t, http.MethodGet, srv.URL+probe, "", "")
		require.Equal(t, http.StatusOK, r.status, probe)
	}

	close(held.release)
	require.Equal(t, http.StatusAccepted, (<-first).status)
	// The place is free again.
	r := do(t, http.MethodPost, url, "application/json", body)
	require.Equal(t, http.StatusAccepted, r.status, "%v", r.body)
	require.EqualValues(t, 1, shed.Load())
}

// The connection cap's answer is the same refusal, as a whole HTTP/1.1
// response that closes the connection.
func TestOverloadResponseIsThe503EnvelopeWithRetryAfter(t *testing.T) {
	res, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(api.OverloadResponse())), nil)
	require.NoError(t, err)
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err, "Content-Length matches the body")
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
	require.Equal(t, "1", res.Header.Get("Retry-After"))
	require.True(t, res.Close, "Connection: close")
	var refusal api.ErrorBody
	require.NoError(t, json.Unmarshal(raw, &refusal))
	require.Equal(t, api.CodeUnavailable, refusal.Error.Code)
	require.NotEmpty(t, refusal.Error.Message)
}
