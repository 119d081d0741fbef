package sagatest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/config"
)

// SettingsCase is an environment a saga's settings are read from (Env,
// nil: none set), and what they read: Want, or, when Err is set, the
// error it says (every mistake, one a line).
type SettingsCase[S any] struct {
	Env  map[string]string
	Want S
	Err  string
}

// RequireSettings reads each case's environment with from (the saga's
// SettingsFrom) and requires what the case says.
func RequireSettings[S any](t *testing.T, from func(lookup func(string) (string, bool)) (S, error), cases []SettingsCase[S]) {
	t.Helper()
	for _, c := range cases {
		got, err := from(config.LookupIn(c.Env))
		if c.Err != "" {
			require.EqualError(t, err, c.Err, "%v", c.Env)
			continue
		}
		require.NoError(t, err, "%v", c.Env)
		require.Equal(t, c.Want, got, "%v", c.Env)
	}
}
