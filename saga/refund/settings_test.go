package refund_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/payload"
	"github.com/pixbank/pix/saga/refund"
)

func lookup(env map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) { v, ok := env[name]; return v, ok }
}

// The devolução's settings read as config.Load read them before they moved
// here: the same defaults, forms and refusals; and the runs' settings
// built from them and the process's PSP pace as Config.Refund built them.
func TestSettings(t *testing.T) {
	s, err := refund.SettingsFrom(lookup(nil))
	require.NoError(t, err)
	require.Equal(t, refund.Settings{PollMax: 10 * time.Minute, OutcomeTimeout: 24 * time.Hour, RefusalQuietPeriod: time.Minute}, s)

	s, err = refund.SettingsFrom(lookup(map[string]string{"REFUND_POLL_MAX": "2s", "REFUND_OUTCOME_TIMEOUT": "1h", "REFUND_REFUSAL_QUIET_PERIOD": "2s"}))
	require.NoError(t, err)
	require.Equal(t, refund.Settings{PollMax: 2 * time.Second, OutcomeTimeout: time.Hour, RefusalQuietPeriod: 2 * time.Second}, s)

	_, err = refund.SettingsFrom(lookup(map[string]string{"REFUND_POLL_MAX": "0", "REFUND_REFUSAL_QUIET_PERIOD": "soon"}))
	require.EqualError(t, err, `REFUND_POLL_MAX: "0" is not a positive duration such as 500ms or 2m`+"\n"+
		`REFUND_REFUSAL_QUIET_PERIOD: "soon" is not a positive duration such as 500ms or 2m`)

	cfg := config.Default()
	cfg.PSPTimeout, cfg.PSPRetryInitial, cfg.PSPRetryMax = 3*time.Second, 200*time.Millisecond, 3*time.Second
	run := s.Run(cfg)
	require.Equal(t, payload.Duration(8*time.Second), run.PSPCallTimeout, "an attempt may take the PSP client's whole timeout, and then some")
	require.Equal(t, payload.Duration(200*time.Millisecond), run.PSPRetryInitial)
	require.Equal(t, payload.Duration(3*time.Second), run.PSPRetryMax)
	require.Equal(t, payload.Duration(2*time.Second), run.PollMax)
	require.Equal(t, payload.Duration(time.Hour), run.OutcomeTimeout)
	require.Equal(t, payload.Duration(2*time.Second), run.RefusalQuietPeriod)
	require.Equal(t, refund.DefaultRunSettings().PollInitial, run.PollInitial)
	require.Equal(t, refund.DefaultRunSettings(), refund.DefaultSettings().Run(config.Default()), "the defaults' runs are DefaultRunSettings")
}
