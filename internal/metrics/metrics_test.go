package metrics_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/metrics"
)

func TestOutboxLagIsExposedAndMoves(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	r := metrics.New()
	metrics.RegisterDatabaseGauges(r, s, slog.New(slog.NewJSONHandler(io.Discard, nil)))

	require.NoError(t, testutil.GatherAndCompare(r, strings.NewReader(`
# HELP pix_outbox_unpublished_events Events committed but not yet acknowledged by the broker.
# TYPE pix_outbox_unpublished_events gauge
pix_outbox_unpublished_events 0
`), "pix_outbox_unpublished_events"))

	_, err := s.Pool().Exec(ctx, `
		INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, created_at)
		SELECT 'test', g::text, 'test.event', '{}', now() - interval '90 seconds' FROM generate_series(1, 3) g`)
	require.NoError(t, err)
	require.NoError(t, testutil.GatherAndCompare(r, strings.NewReader(`
# HELP pix_outbox_unpublished_events Events committed but not yet acknowledged by the broker.
# TYPE pix_outbox_unpublished_events gauge
pix_outbox_unpublished_events 3
`), "pix_outbox_unpublished_events"))

	rec := httptest.NewRecorder()
	metrics.Handler(r).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	require.Equal(t, 200, rec.Code)
	body := rec.Body.String()
	require.Contains(t, body, "pix_outbox_oldest_unpublished_age_seconds 9", "about 90 seconds")
	require.Contains(t, body, "go_goroutines")
}
