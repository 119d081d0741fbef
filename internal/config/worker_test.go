package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/config"
)

// The worker's relay needs a broker, and the service never starts one of
// its own: without NATS_URL the worker refuses to start, by the setting's
// name, unless the relay is off.
func TestCheckWorkerNeedsNATSURLForTheRelay(t *testing.T) {
	cfg := config.Default()
	require.ErrorContains(t, cfg.CheckWorker(), "NATS_URL is unset")
	cfg.NATSURL = "nats://127.0.0.1:4222"
	require.NoError(t, cfg.CheckWorker())
	cfg.NATSURL, cfg.OutboxRelayEnabled = "", false
	require.NoError(t, cfg.CheckWorker())
}
