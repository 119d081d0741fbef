package setup_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/pixbank/pix/internal/tracing"
)

// tracing.ErrorType knows the Temporal SDK's errors by their methods
// (package tracing does not link the SDK; this test does, so it sits here,
// beside the package that does): an application error by its type, a timeout by
// its kind, however deeply wrapped; one without a type falls through.
func TestErrorTypeOfTemporalErrors(t *testing.T) {
	untyped := temporal.NewApplicationError("untyped", "")
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("activity: %w", temporal.NewApplicationError("the PSP's text", "PspRejected")), "PspRejected"},
		{temporal.NewNonRetryableApplicationError("no", "AccountNotFound", nil), "AccountNotFound"},
		{fmt.Errorf("run: %w", temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_START_TO_CLOSE, nil)), "Timeout" + enumspb.TIMEOUT_TYPE_START_TO_CLOSE.String()},
		{temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil), "Timeout" + enumspb.TIMEOUT_TYPE_HEARTBEAT.String()},
		{untyped, fmt.Sprintf("%T", untyped)},
	} {
		require.Equal(t, c.want, tracing.ErrorType(c.err), "%v", c.err)
	}
}
