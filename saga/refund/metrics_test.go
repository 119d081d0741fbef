package refund_test

import (
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/saga/refund"
	"github.com/pixbank/pix/saga/sagatest"
)

// The saga's metrics, registered as pixd registers them (its Collectors):
// the age of the oldest open devolução, read at each scrape (0 when none
// is open), and the devoluções finished, counted by the activities into
// the process's one counter.
func TestMetricsReadTheOpenRefunds(t *testing.T) {
	s := newStore(t)
	env := saga.Env{Store: s.Store, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Process: saga.NewProcess()}
	reg := sagatest.Registry(t, refund.Saga.Collectors(env))
	const age = "pix_refund_oldest_open_age_seconds"
	require.Zero(t, sagatest.Value(t, reg, age), "no devolução open")
	dbtest.OpenAccount(t, s.Store, "acc-1", 0)
	e2e := creditPIX(t, s, 1, "acc-1", 10_000)
	_, err := returnPIX(t, s, e2e, 1_000, anyone)
	require.NoError(t, err)
	require.Positive(t, sagatest.Value(t, reg, age), "one open")

	refund.Saga.Deps(env).(*refund.Activities).Finished.Count(pix.RefundReturned)
	require.Equal(t, 1.0, sagatest.Value(t, reg, "pix_refunds_finished_total", "outcome", "returned"), "the process's counter")
}
