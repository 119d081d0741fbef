package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/payload"
	"github.com/pixbank/pix/internal/runconf"
)

func TestRoundBudget(t *testing.T) {
	r := runconf.RetrySettings{MaxAttempts: 5, InitialInterval: payload.Duration(time.Second), BackoffCoefficient: 2,
		MaxInterval: payload.Duration(5 * time.Second), ActivityTimeout: payload.Duration(10 * time.Second)}
	// 5 attempts × 10 s, backoffs 1 + 2 + 4 + 5 (capped).
	require.Equal(t, 62*time.Second, roundBudget(r))

	// A long policy never overflows into a negative budget.
	r = runconf.RetrySettings{MaxAttempts: 1000, InitialInterval: payload.Duration(time.Second), BackoffCoefficient: 10,
		MaxInterval: payload.Duration(time.Hour), ActivityTimeout: payload.Duration(time.Second)}
	require.Greater(t, roundBudget(r), 990*time.Hour)
}
