package transfer_test

import (
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/saga/sagatest"
	"github.com/pixbank/pix/saga/transfer"
)

// The saga's metrics, registered as pixd registers them (its Collectors):
// the age of the oldest open transfer, read at each scrape (0 when none is
// open), and the transfers finished, counted by the activities into the
// process's one counter.
func TestMetricsReadTheOpenTransfers(t *testing.T) {
	store := dbtest.New(t)
	env := saga.Env{Store: store, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Process: saga.NewProcess()}
	reg := sagatest.Registry(t, transfer.Saga.Collectors(env))
	const age = "pix_transfer_oldest_open_age_seconds"
	require.Zero(t, sagatest.Value(t, reg, age), "no transfer open")
	s := transfer.NewStore(store)
	dbtest.OpenAccount(t, s.Store, "acc-1", 10_000)
	debit(t, s, "acc-1", 1_000)
	require.Positive(t, sagatest.Value(t, reg, age), "one open")

	transfer.Saga.Deps(env).(*transfer.Activities).Finished.Count(pix.TransferSettled)
	require.Equal(t, 1.0, sagatest.Value(t, reg, "pix_transfers_finished_total", "outcome", "settled"), "the process's counter")
}
