package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
)

// The worker's set-up (search attributes, schedules) runs after the wait
// for Temporal; Temporal may go away in between (found in the e2e outage
// test: the worker died "list search attributes: connection refused"), and
// the worker may be stopped in between (it returned "create schedule ...:
// context canceled" as a failure). Both are waited out or taken as a stop;
// only Temporal's refusal fails the worker.
func TestSetUpWhileReachable(t *testing.T) {
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	up := func(context.Context) bool { return true }

	t.Run("Temporal away meanwhile: waited for again, then set up", func(t *testing.T) {
		waits, setUps := 0, 0
		ready, err := setUpWhileReachable(t.Context(), quiet, func(context.Context) bool { waits++; return true }, func(context.Context) error {
			setUps++
			switch setUps {
			case 1:
				return fmt.Errorf("list search attributes of default: %w", serviceerror.NewUnavailable("connection refused"))
			case 2:
				return fmt.Errorf("create schedule pix-reconcile:x: %w", context.DeadlineExceeded)
			}
			return nil
		})
		require.NoError(t, err)
		require.True(t, ready)
		require.Equal(t, 3, setUps)
		require.Equal(t, 3, waits, "each new try waits for Temporal first")
	})
	t.Run("stopped while setting up: no failure", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		ready, err := setUpWhileReachable(ctx, quiet, up, func(context.Context) error {
			cancel()
			return fmt.Errorf("create schedule pix-reconcile:x: %w", context.Canceled)
		})
		require.NoError(t, err)
		require.False(t, ready)
	})
	t.Run("stopped while waiting: no failure", func(t *testing.T) {
		ready, err := setUpWhileReachable(t.Context(), quiet, func(context.Context) bool { return false }, func(context.Context) error {
			t.Fatal("set up without Temporal")
			return nil
		})
		require.NoError(t, err)
		require.False(t, ready)
	})
	t.Run("Temporal refuses: the worker fails", func(t *testing.T) {
		refused := errors.New("namespace default lacks search attributes PixAccountID")
		calls := 0
		ready, err := setUpWhileReachable(t.Context(), quiet, up, func(context.Context) error { calls++; return refused })
		require.ErrorIs(t, err, refused)
		require.False(t, ready)
		require.Equal(t, 1, calls)
	})
}
