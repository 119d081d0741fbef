package catchup

import (
	"fmt"
	"time"

	"github.com/pixbank/pix/internal/config"
)

// Settings are the catch-up's own (docs/operations.md, "The PSP
// catch-up"), read from the environment (SettingsFrom).
type Settings struct {
	// Interval is how often its Schedule lists the PSP's record
	// (PSP_CATCHUP_INTERVAL; 0: off, the Schedule deleted).
	Interval time.Duration
	// Overlap is how far before the covered window's end each run starts
	// (PSP_CATCHUP_OVERLAP); Lookback how far back the first run looks
	// (PSP_CATCHUP_LOOKBACK); Grace how long before now a run's window
	// ends (PSP_CATCHUP_GRACE: a webhook on its way is left to come), less
	// than the overlap.
	Overlap, Lookback, Grace time.Duration
}

// DefaultSettings are the settings of an environment that sets none.
func DefaultSettings() Settings {
	return Settings{Interval: time.Minute, Overlap: 10 * time.Minute, Lookback: 24 * time.Hour, Grace: time.Minute}
}

// settings reads the saga's settings, each variable over its default.
var settings = config.SagaSettings[Settings]{What: "psp catch-up", Defaults: DefaultSettings,
	Read: func(r *config.Settings, s *Settings) {
		r.Wait("PSP_CATCHUP_INTERVAL", "1m", 0, &s.Interval)
		r.Wait("PSP_CATCHUP_OVERLAP", "10m", 0, &s.Overlap)
		r.Wait("PSP_CATCHUP_LOOKBACK", "24h", 0, &s.Lookback)
		if r.Wait("PSP_CATCHUP_GRACE", "1m", 0, &s.Grace) {
			if s.Grace > 0 && s.Grace >= s.Overlap {
				r.Fail(fmt.Errorf("PSP_CATCHUP_GRACE: %s is not less than PSP_CATCHUP_OVERLAP (%s)", s.Grace, s.Overlap))
			}
		} else {
			// Unset, it stays within a short PSP_CATCHUP_OVERLAP: a deployment
			// that set only that one keeps starting.
			s.Grace = min(s.Grace, s.Overlap/2)
		}
	}}

// SettingsFrom reads the settings through lookup (os.LookupEnv): a value
// set that does not read is an error, never the default.
func SettingsFrom(lookup func(string) (string, bool)) (Settings, error) { return settings.From(lookup) }
