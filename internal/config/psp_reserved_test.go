package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/config"
)

// "catchup" (pix.CatchUpPSP) marks the PIX the catch-up found first in the
// inbox; a PSP so named would have every PIX its signed webhook delivered
// taken for a catch-up find and credited as PSP_NAME's (attack review B,
// MED-1). The name is refused wherever a PSP is named, and the start says
// why. Before the fix, the first case started.
func TestAPSPMayNotBeNamedAsTheCatchUpsMarker(t *testing.T) {
	const key = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	base := func(extra map[string]string) map[string]string {
		env := map[string]string{
			"PSP_URL":       "https://psp.example/api/v2",
			"AUTH_REQUIRED": "false",
			"NATS_URL":      "nats://127.0.0.1:4222",
		}
		for k, v := range extra {
			env[k] = v
		}
		return env
	}
	for name, env := range map[string]map[string]string{
		"webhook secrets": base(map[string]string{"WEBHOOK_SECRETS": "catchup=" + key + ";psp-1=" + key, "PSP_NAME": "psp-1"}),
		"any case":        base(map[string]string{"WEBHOOK_SECRETS": "CatchUp=" + key + ";psp-1=" + key, "PSP_NAME": "psp-1"}),
		"mtls psps":       base(map[string]string{"WEBHOOK_MTLS_PSPS": "catchup=psp.example;psp-1=psp1.example", "PSP_NAME": "psp-1"}),
		"psp name":        base(map[string]string{"PSP_NAME": "catchup"}),
	} {
		t.Run(name, func(t *testing.T) {
			c, err := config.FromLookup(config.LookupIn(env))
			if err == nil {
				err = c.CheckAPI()
			}
			require.Error(t, err, "a PSP named as the catch-up's marker is accepted")
			require.ErrorContains(t, err, "reserved")
		})
	}
}
