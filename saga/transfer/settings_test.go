package transfer_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/payload"
	"github.com/pixbank/pix/saga/sagatest"
	"github.com/pixbank/pix/saga/transfer"
)

// The transfer's settings read as config.Load read them before they moved
// here: the same defaults, forms and refusals; and the runs' settings
// built from them and the process's PSP pace as Config.Transfer built
// them.
func TestSettings(t *testing.T) {
	set := transfer.Settings{SettlementTimeout: time.Second, SettlementPollMax: 500 * time.Millisecond}
	sagatest.RequireSettings(t, transfer.SettingsFrom, []sagatest.SettingsCase[transfer.Settings]{
		{Want: transfer.Settings{SettlementTimeout: 24 * time.Hour, SettlementPollMax: 10 * time.Second}},
		{Env: map[string]string{"TRANSFER_SETTLEMENT_TIMEOUT": "1s", "TRANSFER_SETTLEMENT_POLL_MAX": "500ms"}, Want: set},
		{Env: map[string]string{"TRANSFER_SETTLEMENT_TIMEOUT": "0", "TRANSFER_SETTLEMENT_POLL_MAX": "soon"},
			Err: `TRANSFER_SETTLEMENT_TIMEOUT: "0" is not a positive duration such as 500ms or 2m` + "\n" +
				`TRANSFER_SETTLEMENT_POLL_MAX: "soon" is not a positive duration such as 500ms or 2m`},
	})

	cfg := config.Default()
	cfg.PSPTimeout = 3 * time.Second
	want := transfer.DefaultRunSettings()
	want.PSPCalls = cfg.PSPCalls()
	want.SettlementTimeout, want.SettlementPollMax = payload.Duration(time.Second), payload.Duration(500*time.Millisecond)
	require.Equal(t, want, set.Run(cfg))
	require.Equal(t, transfer.DefaultRunSettings(), transfer.DefaultSettings().Run(config.Default()), "the defaults' runs are DefaultRunSettings")
}
