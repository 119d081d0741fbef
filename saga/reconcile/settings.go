package reconcile

import (
	"time"

	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/saga"
)

// Settings are the reconciliation's own (docs/configuration.md), read from
// the environment (SettingsFrom): its Schedule's interval and the limits
// of a run, the Schedule's and GET /admin/reconcile's alike.
type Settings struct {
	// Interval is how often its Schedule checks the books
	// (RECONCILE_INTERVAL); also what a run's expected round is told in.
	Interval time.Duration
	// RecountMovements, RecountAccounts and DoneRows bound a run
	// (RECONCILE_RECOUNT_MOVEMENTS, RECONCILE_RECOUNT_ACCOUNTS,
	// RECONCILE_DONE_ROWS): Limits.
	RecountMovements int64
	RecountAccounts  int
	DoneRows         int
}

// DefaultSettings are the settings of an environment that sets none: a
// run every 15 minutes, within DefaultLimits.
func DefaultSettings() Settings {
	return Settings{Interval: defaultInterval, RecountMovements: DefaultLimits.RecountMovements,
		RecountAccounts: DefaultLimits.RecountAccounts, DoneRows: DefaultLimits.DoneRows}
}

// Limits are the limits of a run the settings make, told in their
// interval.
func (s Settings) Limits() Limits {
	return Limits{RecountMovements: s.RecountMovements, RecountAccounts: s.RecountAccounts, DoneRows: s.DoneRows, Interval: s.Interval}
}

// settings reads the saga's settings, each variable over its default. No
// limit below 1: a run with no budget would still recount an account a
// run, so a setting of 0 is a mistake, not "off".
var settings = config.SagaSettings[Settings]{What: "reconcile", Defaults: DefaultSettings,
	Read: func(r *config.Settings, s *Settings) {
		r.Duration("RECONCILE_INTERVAL", &s.Interval)
		r.Integer("RECONCILE_RECOUNT_MOVEMENTS", 1, 1_000_000_000, func(n int64) { s.RecountMovements = n })
		r.Integer("RECONCILE_RECOUNT_ACCOUNTS", 1, 1_000_000, func(n int64) { s.RecountAccounts = int(n) })
		r.Integer("RECONCILE_DONE_ROWS", 1, 100_000_000, func(n int64) { s.DoneRows = int(n) })
	}}

// SettingsFrom reads the settings through lookup (os.LookupEnv): a value
// set that does not read is an error, never the default.
func SettingsFrom(lookup func(string) (string, bool)) (Settings, error) { return settings.From(lookup) }

// storeOf is the reconciliation's store of env, within the limits its
// settings make: the one every run of the process uses (the Schedule's
// activity, GET /admin/reconcile).
func storeOf(env saga.Env) *Store {
	return NewStore(env.Store).WithLimits(settings.Of(env.Lookup).Limits())
}
