package app_test

import (
	"context"
	"io"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/cmd/pixd/app"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/logging"
	pixsched "github.com/pixbank/pix/saga/scheduled"
)

// The worker runs a dispatcher for every durable queue: the sagas' starts
// and the scheduled PIX's cancel wake-ups, whose entries would otherwise
// pile up unseen until their alert (attack review of 6351179, MED-2: no
// test looked at what Dispatchers builds).
func TestTheWorkerDispatchesTheCancelWakeUps(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	cfg := config.Default()
	cfg.DatabaseURL = dbtest.URL(t)
	a, err := app.New(context.Background(), cfg, logging.New(io.Discard, "error"))
	require.NoError(t, err)
	t.Cleanup(a.Close)
	var kinds []string
	for _, d := range a.Dispatchers() {
		kinds = append(kinds, d.Kind())
	}
	require.Contains(t, kinds, pixsched.WakeKind)
	require.Contains(t, kinds, "scheduled")
	slices.Sort(kinds)
	require.Equal(t, len(kinds), len(slices.Compact(slices.Clone(kinds))), "one dispatcher per queue: %v", kinds)
}
