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

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/metrics"
)

func TestOutboxLagIsExposedAndMoves(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	r := metrics.New()
	metrics.RegisterDatabaseGauges(r, readsOf(s), slog.New(slog.NewJSONHandler(io.Discard, nil)))

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
	// (The transfer's pix_transfer_oldest_open_age_seconds and the
	// devolução's pix_refund_oldest_open_age_seconds are their own:
	// saga/transfer's TestMetricsReadTheOpenTransfers, saga/refund's
	// TestMetricsReadTheOpenRefunds.)
	n, err := testutil.GatherAndCount(r, "pix_inbox_oldest_pending_age_seconds")
	require.NoError(t, err)
	require.Equal(t, 1, n)
}

// readsOf is what the gauges read of s, as cmd/pixd/app gives it.
func readsOf(s *db.Store) metrics.Database {
	return metrics.Database{
		OutboxLag: func(ctx context.Context) (int64, float64, error) {
			lag, err := s.OutboxLag(ctx)
			return lag.Unpublished, lag.OldestAge, err
		},
		OldestPendingAge: s.OldestPendingAge,
	}
}
