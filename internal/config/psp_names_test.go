package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/config"
)

// The worker records PSP_NAME on the credits of the PIX the catch-up found
// and is configured without WEBHOOK_SECRETS (docker-compose.yml gives them
// to the API only): its check of PSP_NAME was skipped, a typo recorded on
// every such credit (attack review B, LOW-1). It now knows the PSPs by
// PSP_NAMES, which the API holds to its secrets' names, and PSP_NAME set
// with no PSP known stops it. Before the fix, the first check passed.
func TestTheWorkerChecksThePSPNameItRecords(t *testing.T) {
	worker := map[string]string{ // a worker's environment as compose gave it
		"PSP_URL":       "https://psp.example/api/v2",
		"AUTH_REQUIRED": "false",
		"NATS_URL":      "nats://127.0.0.1:4222",
		"PSP_NAME":      "reel-psp",
	}
	c, err := config.FromLookup(config.LookupIn(worker))
	require.NoError(t, err)
	require.ErrorContains(t, c.CheckWorker(), "set PSP_NAMES", "PSP_NAME set and no PSP to check it against")

	worker["PSP_NAMES"] = "real-psp, other-psp"
	c, err = config.FromLookup(config.LookupIn(worker))
	require.NoError(t, err)
	require.ErrorContains(t, c.CheckWorker(), `PSP_NAME "reel-psp" is none of the PSPs`)

	worker["PSP_NAME"] = "real-psp"
	c, err = config.FromLookup(config.LookupIn(worker))
	require.NoError(t, err)
	require.NoError(t, c.CheckWorker())
	require.Equal(t, "real-psp", c.CatchUpPSP())

	// One PSP: PSP_NAME unset is that one, in the worker too.
	delete(worker, "PSP_NAME")
	worker["PSP_NAMES"] = "real-psp"
	c, err = config.FromLookup(config.LookupIn(worker))
	require.NoError(t, err)
	require.NoError(t, c.CheckWorker())
	require.Equal(t, "real-psp", c.CatchUpPSP(), "the worker records the sole PSP")

	// The API holds PSP_NAMES to the PSPs it authenticates.
	const key = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	api := map[string]string{
		"PSP_URL":         "https://psp.example/api/v2",
		"AUTH_REQUIRED":   "false",
		"WEBHOOK_SECRETS": "real-psp=" + key + ";other-psp=" + key,
		"PSP_NAME":        "real-psp",
		"PSP_NAMES":       "real-psp",
	}
	c, err = config.FromLookup(config.LookupIn(api))
	require.NoError(t, err)
	require.ErrorContains(t, c.CheckAPI(), "PSP_NAMES (real-psp) is not the PSPs of WEBHOOK_SECRETS and WEBHOOK_MTLS_PSPS (real-psp, other-psp)")
	api["PSP_NAMES"] = "other-psp,real-psp"
	c, err = config.FromLookup(config.LookupIn(api))
	require.NoError(t, err)
	require.NoError(t, c.CheckAPI())

	// The reserved name is refused here too.
	worker["PSP_NAMES"] = "catchup"
	_, err = config.FromLookup(config.LookupIn(worker))
	require.ErrorContains(t, err, "reserved")
}
