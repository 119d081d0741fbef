package worker

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
)

// What Promote asks again (Temporal did not answer this time) and what
// stops the worker (Temporal answered no).
func TestTransientErrors(t *testing.T) {
	for _, err := range []error{
		serviceerror.NewUnavailable("down"),
		serviceerror.NewResourceExhausted(0, "busy"),
		serviceerror.NewDeadlineExceeded("slow"),
		fmt.Errorf("rpc: %w", context.DeadlineExceeded),
	} {
		require.True(t, transient(err), "%v", err)
	}
	for _, err := range []error{
		serviceerror.NewPermissionDenied("versioning off", ""),
		serviceerror.NewInvalidArgument("bad"),
		context.Canceled,
	} {
		require.False(t, transient(err), "%v", err)
	}
}
