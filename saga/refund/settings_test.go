package refund_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/payload"
	"github.com/pixbank/pix/saga/refund"
	"github.com/pixbank/pix/saga/sagatest"
)

// The devolução's settings read as config.Load read them before they moved
// here: the same defaults, forms and refusals; and the runs' settings
// built from them and the process's PSP pace as Config.Refund built them.
func TestSettings(t *testing.T) {
	set := refund.Settings{PollMax: 2 * time.Second, OutcomeTimeout: time.Hour, RefusalQuietPeriod: 2 * time.Second}
	sagatest.RequireSettings(t, refund.SettingsFrom, []sagatest.SettingsCase[refund.Settings]{
		{Want: refund.Settings{PollMax: 10 * time.Minute, OutcomeTimeout: 24 * time.Hour, RefusalQuietPeriod: time.Minute}},
		{Env: map[string]string{"REFUND_POLL_MAX": "2s", "REFUND_OUTCOME_TIMEOUT": "1h", "REFUND_REFUSAL_QUIET_PERIOD": "2s"}, Want: set},
		{Env: map[string]string{"REFUND_POLL_MAX": "0", "REFUND_REFUSAL_QUIET_PERIOD": "soon"},
			Err: `REFUND_POLL_MAX: "0" is not a positive duration such as 500ms or 2m` + "\n" +
				`REFUND_REFUSAL_QUIET_PERIOD: "soon" is not a positive duration such as 500ms or 2m`},
	})

	cfg := config.Default()
	cfg.PSPTimeout = 3 * time.Second
	want := refund.DefaultRunSettings()
	want.PSPCalls = cfg.PSPCalls()
	want.PollMax, want.OutcomeTimeout, want.RefusalQuietPeriod = payload.Duration(2*time.Second), payload.Duration(time.Hour), payload.Duration(2*time.Second)
	require.Equal(t, want, set.Run(cfg))
	require.Equal(t, refund.DefaultRunSettings(), refund.DefaultSettings().Run(config.Default()), "the defaults' runs are DefaultRunSettings")
}
