package runconf

import (
	"errors"
	"time"

	"github.com/pixbank/pix/internal/payload"
)

// RetrySettings shape the credit activity's retries. They travel in the
// workflow input so that each run's policy is in its history (its
// durations as the UI should show them: payload.Duration).
type RetrySettings struct {
	// MaxAttempts is INBOX_ATTEMPTS_MAX: attempts of one run before it fails.
	MaxAttempts        int32
	InitialInterval    payload.Duration
	BackoffCoefficient float64
	MaxInterval        payload.Duration
	// ActivityTimeout bounds one attempt (StartToClose). An attempt stuck on
	// a lock is cut off and retried.
	ActivityTimeout payload.Duration
}

// DefaultRetrySettings are the defaults of the configuration.
func DefaultRetrySettings() RetrySettings {
	return RetrySettings{
		MaxAttempts:        5,
		InitialInterval:    payload.Duration(time.Second),
		BackoffCoefficient: 2,
		MaxInterval:        payload.Duration(30 * time.Second),
		ActivityTimeout:    payload.Duration(10 * time.Second),
	}
}

// Validate refuses settings that would make a run retry forever or never.
func (r RetrySettings) Validate() error {
	switch {
	case r.MaxAttempts < 1:
		return errors.New("max attempts must be at least 1")
	case r.InitialInterval <= 0:
		return errors.New("initial interval must be positive")
	case r.BackoffCoefficient < 1:
		return errors.New("backoff coefficient must be at least 1")
	case r.MaxInterval < r.InitialInterval:
		return errors.New("max interval must be at least the initial interval")
	case r.ActivityTimeout <= 0:
		return errors.New("activity timeout must be positive")
	}
	return nil
}
