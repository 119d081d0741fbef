package api_test

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

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
	metrics.RegisterDatabaseGauges(reg, store, quietLogger())
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
# HELP pix_webhooks_rejected_total Webhook requests answered with an error, by error code.
# TYPE pix_webhooks_rejected_total counter
pix_webhooks_rejected_total{code="invalid_request"} 1
pix_webhooks_rejected_total{code="unsupported_media_type"} 1
`), "pix_webhooks_received_total", "pix_webhook_duplicates_total", "pix_webhooks_rejected_total"))

	age, err := testutil.GatherAndCount(reg, "pix_inbox_oldest_pending_age_seconds")
	require.NoError(t, err)
	require.Equal(t, 1, age)
}

func quietLogger() *slog.Logger { return slog.New(slog.NewJSONHandler(io.Discard, nil)) }
