package catchup_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/saga/catchup"
)

func lookup(env map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) { v, ok := env[name]; return v, ok }
}

// The catch-up's settings read as config.Load read them before they moved
// here: the same defaults, forms and refusals.
func TestSettings(t *testing.T) {
	s, err := catchup.SettingsFrom(lookup(nil))
	require.NoError(t, err)
	require.Equal(t, catchup.Settings{Interval: time.Minute, Overlap: 10 * time.Minute, Lookback: 24 * time.Hour, Grace: time.Minute}, s)

	s, err = catchup.SettingsFrom(lookup(map[string]string{"PSP_CATCHUP_INTERVAL": "0", "PSP_CATCHUP_OVERLAP": "30s", "PSP_CATCHUP_LOOKBACK": "1h"}))
	require.NoError(t, err)
	require.Equal(t, catchup.Settings{Overlap: 30 * time.Second, Lookback: time.Hour, Grace: 15 * time.Second}, s,
		"0 turns it off; unset, the grace stays within a short overlap")

	s, err = catchup.SettingsFrom(lookup(map[string]string{"PSP_CATCHUP_GRACE": "0"}))
	require.NoError(t, err)
	require.Zero(t, s.Grace)

	_, err = catchup.SettingsFrom(lookup(map[string]string{"PSP_CATCHUP_OVERLAP": "1m", "PSP_CATCHUP_GRACE": "1m"}))
	require.EqualError(t, err, "PSP_CATCHUP_GRACE: 1m0s is not less than PSP_CATCHUP_OVERLAP (1m0s)")
	_, err = catchup.SettingsFrom(lookup(map[string]string{"PSP_CATCHUP_INTERVAL": "-1s", "PSP_CATCHUP_LOOKBACK": "soon"}))
	require.EqualError(t, err, `PSP_CATCHUP_INTERVAL: "-1s" is not a duration of 0 or more, such as 1m (0: no wait)`+"\n"+
		`PSP_CATCHUP_LOOKBACK: "soon" is not a duration of 0 or more, such as 24h (0: no wait)`)
}
