package transfer_test

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/saga/transfer"
)

// The saga's metrics, registered as pixd registers them (its Collectors):
// the age of the oldest open transfer, read at each scrape (0 when none is
// open), and the transfers finished, counted by the activities into the
// process's one counter.
func TestMetricsReadTheOpenTransfers(t *testing.T) {
	store := dbtest.New(t)
	env := saga.Env{Store: store, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Process: saga.NewProcess()}
	reg := prometheus.NewRegistry()
	for _, c := range transfer.Saga.Collectors(env) {
		require.NoError(t, reg.Register(c))
	}
	age := func() float64 {
		t.Helper()
		families, err := reg.Gather()
		require.NoError(t, err)
		for _, f := range families {
			if f.GetName() == "pix_transfer_oldest_open_age_seconds" {
				return f.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatal("pix_transfer_oldest_open_age_seconds not gathered")
		return 0
	}
	require.Zero(t, age(), "no transfer open")
	s := transfer.NewStore(store)
	openAccount(t, s, "acc-1", 10_000)
	debit(t, s, "acc-1", 1_000)
	require.Positive(t, age(), "one open")

	// The activities count into the counter the process registered.
	deps := transfer.Saga.Deps(env).(*transfer.Activities)
	deps.Finished.Finished(pix.TransferSettled)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP pix_transfers_finished_total Outgoing PIX settled or refunded.
# TYPE pix_transfers_finished_total counter
pix_transfers_finished_total{outcome="settled"} 1
`), "pix_transfers_finished_total"))
}
