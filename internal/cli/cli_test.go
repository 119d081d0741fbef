package cli_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/cli"
)

func TestStatus(t *testing.T) {
	require.Equal(t, cli.ExitOK, cli.Status(nil))
	require.Equal(t, cli.ExitProblem, cli.Status(errors.New("any other error")), "a command that tells none apart exits 1")
	require.Nil(t, cli.WithStatus(cli.ExitUsage, nil))
	unavailable := cli.WithStatus(cli.ExitUnavailable, errors.New("connection refused"))
	require.Equal(t, cli.ExitUnavailable, cli.Status(unavailable))
	wrapped := fmt.Errorf("look up the account: %w", unavailable)
	require.Equal(t, cli.ExitUnavailable, cli.Status(wrapped), "wrapping keeps the status")
	require.Equal(t, "look up the account: connection refused", wrapped.Error())

	var w bytes.Buffer
	require.Equal(t, cli.ExitUnavailable, cli.Report(&w, "pixctl", wrapped))
	require.Equal(t, "pixctl: look up the account: connection refused\n", w.String())
	w.Reset()
	require.Equal(t, cli.ExitUsage, cli.Report(&w, "pixctl", cli.Exit(cli.ExitUsage)))
	require.Empty(t, w.String(), "reported already")
	require.Equal(t, cli.ExitOK, cli.Report(&w, "pixctl", nil))
	require.Empty(t, w.String())
}
