package transfer

import (
	"time"

	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/payload"
)

// Settings are the transfer's own (docs/configuration.md), read from the
// environment (SettingsFrom).
type Settings struct {
	// SettlementTimeout bounds a run's wait for the PSP's settlement
	// (TRANSFER_SETTLEMENT_TIMEOUT), after which the run fails visibly and
	// the dispatcher's recheck starts another; SettlementPollMax caps the
	// pause between two polls of a pending transfer
	// (TRANSFER_SETTLEMENT_POLL_MAX).
	SettlementTimeout, SettlementPollMax time.Duration
}

// DefaultSettings are the settings of an environment that sets none.
func DefaultSettings() Settings {
	d := DefaultRunSettings()
	return Settings{SettlementTimeout: time.Duration(d.SettlementTimeout), SettlementPollMax: time.Duration(d.SettlementPollMax)}
}

// settings reads the saga's settings, each variable over its default.
var settings = config.SagaSettings[Settings]{What: "transfer", Defaults: DefaultSettings,
	Read: func(r *config.Settings, s *Settings) {
		r.Duration("TRANSFER_SETTLEMENT_TIMEOUT", &s.SettlementTimeout)
		r.Duration("TRANSFER_SETTLEMENT_POLL_MAX", &s.SettlementPollMax)
	}}

// SettingsFrom reads the settings through lookup (os.LookupEnv): a value
// set that does not read is an error, never the default.
func SettingsFrom(lookup func(string) (string, bool)) (Settings, error) { return settings.From(lookup) }

// Run are the runs' settings (each run's input) from s and the pace of
// the PSP's calls the process's configuration sets (config.PSPCalls).
func (s Settings) Run(cfg config.Config) RunSettings {
	r := DefaultRunSettings()
	r.PSPCalls = cfg.PSPCalls()
	r.SettlementTimeout = payload.Duration(s.SettlementTimeout)
	r.SettlementPollMax = payload.Duration(s.SettlementPollMax)
	return r
}
