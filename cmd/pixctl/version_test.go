package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/buildinfo"
	"github.com/pixbank/pix/internal/cli"
)

// pixctl version prints the build in an empty environment, asking nothing;
// an argument is a usage error; help lists it with the shared exit table.
func TestVersion(t *testing.T) {
	t.Parallel()
	empty := env()
	r := pixctl(t, empty, "version")
	r.requireStatus(t, cli.ExitOK)
	require.Equal(t, "pixctl "+buildinfo.Read().String()+"\n", r.stdout)
	require.Empty(t, r.stderr)

	r = pixctl(t, empty, "version", "now")
	r.requireStatus(t, cli.ExitUsage)
	require.Empty(t, r.stdout)
	require.True(t, strings.HasPrefix(r.stderr, `pixctl version: unexpected argument "now"`), r.stderr)

	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		r = pixctl(t, empty, args...)
		r.requireStatus(t, cli.ExitOK)
		require.Contains(t, r.stdout, "\n  version ")
		for _, s := range cli.Statuses {
			require.Contains(t, r.stdout, s.Meaning, "pixctl %q prints the one exit table", args)
		}
	}
}
