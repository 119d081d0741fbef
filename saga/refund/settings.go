package refund

import (
	"time"

	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/payload"
)

// Settings are the devolução's own (docs/configuration.md), read from the
// environment (SettingsFrom).
type Settings struct {
	// PollMax caps the pause between two checks of the PSP's record while
	// no notice arrives (REFUND_POLL_MAX); OutcomeTimeout bounds a run's
	// wait for the outcome, after which it fails visibly and the
	// dispatcher's recheck starts another (REFUND_OUTCOME_TIMEOUT);
	// RefusalQuietPeriod is the wait after the PSP refused the devolução
	// before the saga looks again (REFUND_REFUSAL_QUIET_PERIOD).
	PollMax, OutcomeTimeout, RefusalQuietPeriod time.Duration
}

// DefaultSettings are the settings of an environment that sets none.
func DefaultSettings() Settings {
	d := DefaultRunSettings()
	return Settings{PollMax: time.Duration(d.PollMax), OutcomeTimeout: time.Duration(d.OutcomeTimeout),
		RefusalQuietPeriod: time.Duration(d.RefusalQuietPeriod)}
}

// settings reads the saga's settings, each variable over its default.
var settings = config.SagaSettings[Settings]{What: "refund", Defaults: DefaultSettings,
	Read: func(r *config.Settings, s *Settings) {
		r.Duration("REFUND_POLL_MAX", &s.PollMax)
		r.Duration("REFUND_OUTCOME_TIMEOUT", &s.OutcomeTimeout)
		r.Duration("REFUND_REFUSAL_QUIET_PERIOD", &s.RefusalQuietPeriod)
	}}

// SettingsFrom reads the settings through lookup (os.LookupEnv): a value
// set that does not read is an error, never the default.
func SettingsFrom(lookup func(string) (string, bool)) (Settings, error) { return settings.From(lookup) }

// Run are the runs' settings (each run's input) from s and the pace of
// the PSP's calls the process's configuration sets (config.PSPCalls).
func (s Settings) Run(cfg config.Config) RunSettings {
	r := DefaultRunSettings()
	r.PSPCalls = cfg.PSPCalls()
	r.PollMax = payload.Duration(s.PollMax)
	r.OutcomeTimeout = payload.Duration(s.OutcomeTimeout)
	r.RefusalQuietPeriod = payload.Duration(s.RefusalQuietPeriod)
	return r
}
