package reconcile_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/saga/reconcile"
	"github.com/pixbank/pix/saga/sagatest"
)

// The reconciliation's settings read as config.Load read them before they
// moved here: the same defaults (a run every 15 minutes, within
// DefaultLimits: what the growth benchmark's empty tables hold), each set
// alone, and nothing below 1 (a run with no budget would still recount an
// account a run: a setting of 0 is a mistake, not "off").
func TestSettings(t *testing.T) {
	def := reconcile.DefaultLimits
	cases := []sagatest.SettingsCase[reconcile.Settings]{
		{Want: reconcile.Settings{Interval: 15 * time.Minute, RecountMovements: 200_000, RecountAccounts: def.RecountAccounts, DoneRows: def.DoneRows}},
		{Env: map[string]string{"RECONCILE_RECOUNT_MOVEMENTS": "1000000"},
			Want: reconcile.Settings{Interval: 15 * time.Minute, RecountMovements: 1_000_000, RecountAccounts: def.RecountAccounts, DoneRows: def.DoneRows}},
		{Env: map[string]string{"RECONCILE_RECOUNT_ACCOUNTS": "10", "RECONCILE_DONE_ROWS": "20", "RECONCILE_INTERVAL": "5m"},
			Want: reconcile.Settings{Interval: 5 * time.Minute, RecountMovements: def.RecountMovements, RecountAccounts: 10, DoneRows: 20}},
		{Env: map[string]string{"RECONCILE_RECOUNT_MOVEMENTS": "1000000001"},
			Err: `RECONCILE_RECOUNT_MOVEMENTS: "1000000001" is not a whole number from 1 to 1000000000`},
		{Env: map[string]string{"RECONCILE_INTERVAL": "often"},
			Err: `RECONCILE_INTERVAL: "often" is not a positive duration such as 500ms or 2m`},
	}
	for _, name := range []string{"RECONCILE_RECOUNT_MOVEMENTS", "RECONCILE_RECOUNT_ACCOUNTS", "RECONCILE_DONE_ROWS"} {
		for _, bad := range []string{"0", "-5", "many", "1e6"} {
			_, err := reconcile.SettingsFrom(config.LookupIn(map[string]string{name: bad}))
			require.ErrorContains(t, err, name, "%s=%s", name, bad)
		}
	}
	sagatest.RequireSettings(t, reconcile.SettingsFrom, cases)
}

// The settings reach the store every run of the process uses: the
// Schedule's activity's (the descriptor's Deps), told in RECONCILE_INTERVAL;
// GET /admin/reconcile's is built the same way (the descriptor's HTTP).
func TestTheSettingsReachTheStore(t *testing.T) {
	env := saga.Env{Lookup: config.LookupIn(map[string]string{
		"RECONCILE_RECOUNT_MOVEMENTS": "1234",
		"RECONCILE_RECOUNT_ACCOUNTS":  "56",
		"RECONCILE_DONE_ROWS":         "78",
		"RECONCILE_INTERVAL":          "5m",
	})}
	a := reconcile.Saga.Deps(env).(*reconcile.Activities)
	require.Equal(t, reconcile.Limits{RecountMovements: 1234, RecountAccounts: 56, DoneRows: 78, Interval: 5 * time.Minute}, a.Store.Limits())
	_, err := reconcile.Saga.HTTP(env)
	require.NoError(t, err)
}
