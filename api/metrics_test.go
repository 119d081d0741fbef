package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/metrics"
)

func TestWebhookCountersMove(t *testing.T) {
	store := dbtest.New(t)
	reg := metrics.New()
	counters := metrics.NewWebhooks(reg)
	srv := newServer(t, store, func(d *api.Deps) { d.Webhooks = counters })
	url := srv.URL + "/webhooks/pix"
	body := `{"end_to_end_id":"` + validID + `","account_id":"acc-1","amount_cents":100}`

	require.Equal(t, http.StatusAccepted, do(t, http.MethodPost, url, "application/json", body).status)
	require.Equal(t, http.StatusAccepted, do(t, http.MethodPost, url, "application/json", body).status)
	require.Equal(t, http.StatusOK, do(t, http.MethodPost, srv.URL+apiPixPath, "application/json", batch(apiPixItem(t, "E1234567820261129120000000000002", nil))).status)
	require.Equal(t, http.StatusBadRequest, do(t, http.MethodPost, url, "application/json", `{"amount_cents":1}`).status)
	require.Equal(t, http.StatusUnsupportedMediaType, do(t, http.MethodPost, url, "text/plain", body).status)

	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP pix_webhook_duplicates_total Redeliveries absorbed at the door, by webhook format.
# TYPE pix_webhook_duplicates_total counter
pix_webhook_duplicates_total{format="native"} 1
# HELP pix_webhooks_received_total PIX notifications stored (first deliveries and redeliveries), by webhook format.
# TYPE pix_webhooks_received_total counter
pix_webhooks_received_total{format="api_pix"} 1
pix_webhooks_received_total{format="native"} 2
# HELP pix_webhooks_rejected_total Webhook requests answered with an error, by error code and by the PSP that sent them (psp="none": none identified, as when no secret matches a signature).
# TYPE pix_webhooks_rejected_total counter
pix_webhooks_rejected_total{code="invalid_request",psp="none"} 1
pix_webhooks_rejected_total{code="unsupported_media_type",psp="none"} 1
`), "pix_webhooks_received_total", "pix_webhook_duplicates_total", "pix_webhooks_rejected_total"))
	requireAnswered(t, reg, map[string]uint64{"none/2xx": 3, "none/4xx": 2})
}

// Webhook answers are counted by the PSP their signature identified, and
// under "none" when no secret matched: the label holds the configured PSPs
// only, whatever a request claims.
func TestWebhookAnswersByPSP(t *testing.T) {
	store := dbtest.New(t)
	reg := metrics.New()
	counters := metrics.NewWebhooks(reg)
	srv := newServer(t, store, withSignatures(true), func(d *api.Deps) { d.Webhooks = counters })
	url := srv.URL + "/webhooks/pix"
	body := `{"end_to_end_id":"` + validID + `","account_id":"acc-1","amount_cents":100}`

	require.Equal(t, http.StatusAccepted, doWith(t, http.DefaultClient, http.MethodPost, url, signed(body, "msg_1", time.Now(), pspBKey), body).status)
	// Signed by psp-a, refused after the signature: psp-a's refusal.
	bad := `{"amount_cents":1}`
	require.Equal(t, http.StatusBadRequest, doWith(t, http.DefaultClient, http.MethodPost, url, signed(bad, "msg_2", time.Now(), pspAKey), bad).status)
	// A secret nobody holds (a rotation on one side only): nobody's.
	require.Equal(t, http.StatusUnauthorized, doWith(t, http.DefaultClient, http.MethodPost, url, signed(body, "msg_3", time.Now(), []byte("a secret we were never given....")), body).status)

	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP pix_webhooks_rejected_total Webhook requests answered with an error, by error code and by the PSP that sent them (psp="none": none identified, as when no secret matches a signature).
# TYPE pix_webhooks_rejected_total counter
pix_webhooks_rejected_total{code="invalid_request",psp="psp-a"} 1
pix_webhooks_rejected_total{code="signature_invalid",psp="none"} 1
`), "pix_webhooks_rejected_total"))
	requireAnswered(t, reg, map[string]uint64{"psp-b/2xx": 1, "psp-a/4xx": 1, "none/4xx": 1})
}

// requireAnswered checks pix_webhook_request_duration_seconds's counts, by
// "psp/status_class", and that the SLO's threshold is one of its buckets.
func requireAnswered(t *testing.T, reg *prometheus.Registry, want map[string]uint64) {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]uint64{}
	for _, f := range families {
		if f.GetName() != "pix_webhook_request_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			got[labels["psp"]+"/"+labels["status_class"]] = m.GetHistogram().GetSampleCount()
			var bounds []float64
			for _, b := range m.GetHistogram().GetBucket() {
				bounds = append(bounds, b.GetUpperBound())
			}
			require.Contains(t, bounds, metrics.AckSLOThreshold, "no bucket at the SLO's threshold")
		}
	}
	require.Equal(t, want, got)
}
