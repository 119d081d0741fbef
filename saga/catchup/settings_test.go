package catchup_test

import (
	"testing"
	"time"

	"github.com/pixbank/pix/saga/catchup"
	"github.com/pixbank/pix/saga/sagatest"
)

// The catch-up's settings read as config.Load read them before they moved
// here: the same defaults, forms and refusals. PSP_CATCHUP_INTERVAL 0
// turns it off; unset, the grace stays within a short overlap.
func TestSettings(t *testing.T) {
	sagatest.RequireSettings(t, catchup.SettingsFrom, []sagatest.SettingsCase[catchup.Settings]{
		{Want: catchup.Settings{Interval: time.Minute, Overlap: 10 * time.Minute, Lookback: 24 * time.Hour, Grace: time.Minute}},
		{Env: map[string]string{"PSP_CATCHUP_INTERVAL": "0", "PSP_CATCHUP_OVERLAP": "30s", "PSP_CATCHUP_LOOKBACK": "1h"},
			Want: catchup.Settings{Overlap: 30 * time.Second, Lookback: time.Hour, Grace: 15 * time.Second}},
		{Env: map[string]string{"PSP_CATCHUP_GRACE": "0"},
			Want: catchup.Settings{Interval: time.Minute, Overlap: 10 * time.Minute, Lookback: 24 * time.Hour}},
		{Env: map[string]string{"PSP_CATCHUP_OVERLAP": "1m", "PSP_CATCHUP_GRACE": "1m"},
			Err: "PSP_CATCHUP_GRACE: 1m0s is not less than PSP_CATCHUP_OVERLAP (1m0s)"},
		{Env: map[string]string{"PSP_CATCHUP_INTERVAL": "-1s", "PSP_CATCHUP_LOOKBACK": "soon"},
			Err: `PSP_CATCHUP_INTERVAL: "-1s" is not a duration of 0 or more, such as 1m (0: no wait)` + "\n" +
				`PSP_CATCHUP_LOOKBACK: "soon" is not a duration of 0 or more, such as 24h (0: no wait)`},
	})
}
