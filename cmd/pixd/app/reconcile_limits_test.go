package app_test

import (
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/cmd/pixd/app"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/logging"
)

// The reconciliation's settings reach the store every run of the process
// uses (the Schedule's activity, GET /admin/reconcile).
func TestTheReconcileSettingsReachTheStore(t *testing.T) {
	cfg, err := config.FromLookup(func(k string) (string, bool) {
		v, ok := map[string]string{
			"DATABASE_URL":                "postgres://nobody@127.0.0.1:1/none", // never reached here
			"RECONCILE_RECOUNT_MOVEMENTS": "1234",
			"RECONCILE_RECOUNT_ACCOUNTS":  "56",
			"RECONCILE_DONE_ROWS":         "78",
		}[k]
		return v, ok
	})
	require.NoError(t, err)
	a, err := app.New(context.Background(), cfg, logging.New(io.Discard, "error"))
	require.NoError(t, err)
	t.Cleanup(a.Close)
	lim := a.Store.ReconcileLimits()
	require.EqualValues(t, 1234, lim.RecountMovements)
	require.Equal(t, 56, lim.RecountAccounts)
	require.Equal(t, 78, lim.DoneRows)
}
