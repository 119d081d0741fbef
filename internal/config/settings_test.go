package config_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/payload"
	"github.com/pixbank/pix/internal/runconf"
)

// The pace of the sagas' calls to the PSP (the transfer's, the
// devolução's runs take it whole): an attempt may take the PSP client's
// whole timeout, and then some; the retries' pace is PSP_RETRY_*'s.
func TestPSPCalls(t *testing.T) {
	cfg := config.Default()
	cfg.PSPTimeout, cfg.PSPRetryInitial, cfg.PSPRetryMax = 3*time.Second, 200*time.Millisecond, 3*time.Second
	require.Equal(t, runconf.PSPCalls{PSPCallTimeout: payload.Duration(8 * time.Second),
		PSPRetryInitial: payload.Duration(200 * time.Millisecond), PSPRetryMax: payload.Duration(3 * time.Second)}, cfg.PSPCalls())
}

type sagaSettings struct{ Wait, Poll time.Duration }

var sagaReader = config.SagaSettings[sagaSettings]{What: "test",
	Defaults: func() sagaSettings { return sagaSettings{Wait: time.Minute, Poll: time.Second} },
	Read: func(r *config.Settings, s *sagaSettings) {
		r.Duration("TEST_WAIT", &s.Wait)
		r.Duration("TEST_POLL", &s.Poll)
	}}

// A saga's settings: each variable set over its default; every mistake
// named at once (Check, pixd's start); read unchecked (Of), a mistake is
// wiring's, a panic; no lookup at all (a test's Env), the defaults.
func TestSagaSettings(t *testing.T) {
	s, err := sagaReader.From(config.LookupIn(map[string]string{"TEST_POLL": "2s"}))
	require.NoError(t, err)
	require.Equal(t, sagaSettings{Wait: time.Minute, Poll: 2 * time.Second}, s)
	require.Equal(t, s, sagaReader.Of(config.LookupIn(map[string]string{"TEST_POLL": "2s"})))

	wrong := config.LookupIn(map[string]string{"TEST_WAIT": "0", "TEST_POLL": "soon"})
	want := `TEST_WAIT: "0" is not a positive duration such as 500ms or 2m` + "\n" +
		`TEST_POLL: "soon" is not a positive duration such as 500ms or 2m`
	require.EqualError(t, sagaReader.Check(wrong), want)
	require.PanicsWithValue(t, "test settings read unchecked: "+want, func() { sagaReader.Of(wrong) })
	require.NoError(t, sagaReader.Check(config.LookupIn(nil)))

	require.Equal(t, sagaSettings{Wait: time.Minute, Poll: time.Second}, sagaReader.Of(nil))
}
