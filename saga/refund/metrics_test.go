package refund_test

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/saga/refund"
)

// The saga's metrics, registered as pixd registers them (its Collectors):
// the age of the oldest open devolução, read at each scrape (0 when none
// is open), and the devoluções finished, counted by the activities into
// the process's one counter.
func TestMetricsReadTheOpenRefunds(t *testing.T) {
	s := newStore(t)
	env := saga.Env{Store: s.Store, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Process: saga.NewProcess()}
	reg := prometheus.NewRegistry()
	for _, c := range refund.Saga.Collectors(env) {
		require.NoError(t, reg.Register(c))
	}
	age := func() float64 {
		t.Helper()
		families, err := reg.Gather()
		require.NoError(t, err)
		for _, f := range families {
			if f.GetName() == "pix_refund_oldest_open_age_seconds" {
				return f.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatal("pix_refund_oldest_open_age_seconds not gathered")
		return 0
	}
	require.Zero(t, age(), "no devolução open")
	openAccount(t, s, "acc-1", 0)
	e2e := creditPIX(t, s, 1, "acc-1", 10_000)
	_, err := returnPIX(s, e2e, 1_000, anyone)
	require.NoError(t, err)
	require.Positive(t, age(), "one open")

	// The activities count into the counter the process registered.
	deps := refund.Saga.Deps(env).(*refund.Activities)
	deps.Finished.Finished(pix.RefundReturned)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP pix_refunds_finished_total Devoluções of received PIX returned by the PSP or reversed (the PSP did not make them).
# TYPE pix_refunds_finished_total counter
pix_refunds_finished_total{outcome="returned"} 1
`), "pix_refunds_finished_total"))
}
