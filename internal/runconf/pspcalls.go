package runconf

import (
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/pixbank/pix/internal/payload"
	"github.com/pixbank/pix/internal/pix"
)

// PSPCalls pace a saga's calls to the PSP. Embedded in a saga's settings,
// its fields are the settings' own (in Go and in the JSON of a workflow's
// input).
type PSPCalls struct {
	// PSPCallTimeout bounds one call to the PSP (StartToClose); a call that
	// takes longer is retried.
	PSPCallTimeout payload.Duration
	// PSPRetryInitial and PSPRetryMax pace the retries of transient PSP
	// errors, doubling.
	PSPRetryInitial payload.Duration
	PSPRetryMax     payload.Duration
}

// DefaultPSPCalls are the PSP calls' pace of an environment that sets none
// (PSP_TIMEOUT, PSP_RETRY_INITIAL, PSP_RETRY_MAX).
func DefaultPSPCalls() PSPCalls {
	return PSPCalls{
		PSPCallTimeout:  payload.Duration(15 * time.Second),
		PSPRetryInitial: payload.Duration(time.Second),
		PSPRetryMax:     payload.Duration(30 * time.Second),
	}
}

// RetryPolicy retries a PSP call without limit, but never a final business
// kind (pix.NonRetryableTypes) nor an error of the types more.
func (p PSPCalls) RetryPolicy(more ...string) *temporal.RetryPolicy {
	return &temporal.RetryPolicy{
		InitialInterval:        time.Duration(p.PSPRetryInitial),
		BackoffCoefficient:     2,
		MaximumInterval:        time.Duration(p.PSPRetryMax),
		NonRetryableErrorTypes: append(pix.NonRetryableTypes(), more...),
	}
}
