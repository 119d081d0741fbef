package transfer_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/payload"
	"github.com/pixbank/pix/saga/transfer"
)

func lookup(env map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) { v, ok := env[name]; return v, ok }
}

// The transfer's settings read as config.Load read them before they moved
// here: the same defaults, forms and refusals; and the runs' settings
// built from them and the process's PSP pace as Config.Transfer built
// them.
func TestSettings(t *testing.T) {
	s, err := transfer.SettingsFrom(lookup(nil))
	require.NoError(t, err)
	require.Equal(t, transfer.Settings{SettlementTimeout: 24 * time.Hour, SettlementPollMax: 10 * time.Second}, s)

	s, err = transfer.SettingsFrom(lookup(map[string]string{"TRANSFER_SETTLEMENT_TIMEOUT": "1s", "TRANSFER_SETTLEMENT_POLL_MAX": "500ms"}))
	require.NoError(t, err)
	require.Equal(t, transfer.Settings{SettlementTimeout: time.Second, SettlementPollMax: 500 * time.Millisecond}, s)

	_, err = transfer.SettingsFrom(lookup(map[string]string{"TRANSFER_SETTLEMENT_TIMEOUT": "0", "TRANSFER_SETTLEMENT_POLL_MAX": "soon"}))
	require.EqualError(t, err, `TRANSFER_SETTLEMENT_TIMEOUT: "0" is not a positive duration such as 500ms or 2m`+"\n"+
		`TRANSFER_SETTLEMENT_POLL_MAX: "soon" is not a positive duration such as 500ms or 2m`)

	cfg := config.Default()
	cfg.PSPTimeout, cfg.PSPRetryInitial, cfg.PSPRetryMax = 3*time.Second, 200*time.Millisecond, 3*time.Second
	run := s.Run(cfg)
	require.Equal(t, payload.Duration(8*time.Second), run.PSPCallTimeout, "an attempt may take the PSP client's whole timeout, and then some")
	require.Equal(t, payload.Duration(200*time.Millisecond), run.PSPRetryInitial)
	require.Equal(t, payload.Duration(3*time.Second), run.PSPRetryMax)
	require.Equal(t, payload.Duration(time.Second), run.SettlementTimeout)
	require.Equal(t, payload.Duration(500*time.Millisecond), run.SettlementPollMax)
	require.Equal(t, transfer.DefaultRunSettings().SettlementPollInitial, run.SettlementPollInitial)
	require.Equal(t, transfer.DefaultRunSettings(), transfer.DefaultSettings().Run(config.Default()), "the defaults' runs are DefaultRunSettings")
}
