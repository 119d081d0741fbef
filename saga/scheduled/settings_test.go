package scheduled_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/scheduled"
)

// The date is São Paulo's: today or later, at most a year ahead; it runs
// at the configured hour there.
func TestTheDateIsSaoPaulos(t *testing.T) {
	sp, err := time.LoadLocation("America/Sao_Paulo")
	require.NoError(t, err)
	// 02:30 UTC on 2 Dec is still 1 Dec (23:30) in São Paulo (UTC-3).
	now := time.Date(2026, 12, 2, 2, 30, 0, 0, time.UTC)
	s, err := scheduled.SettingsFrom(config.LookupIn(nil))
	require.NoError(t, err)

	at, err := s.RunAt("2026-12-01", now)
	require.NoError(t, err, "today in São Paulo")
	require.Equal(t, time.Date(2026, 12, 1, 0, 0, 0, 0, sp), at, "the start of the day: already past, it runs at once")
	require.True(t, at.Before(now))

	_, err = s.RunAt("2026-11-30", now)
	require.ErrorAs(t, err, new(*pix.ValidationError), "yesterday in São Paulo")

	at, err = s.RunAt("2027-12-01", now)
	require.NoError(t, err, "one year ahead")
	require.Equal(t, time.Date(2027, 12, 1, 0, 0, 0, 0, sp), at)
	_, err = s.RunAt("2027-12-02", now)
	require.ErrorAs(t, err, new(*pix.ValidationError), "more than one year ahead")

	for _, bad := range []string{"2026-12-1", "01/12/2026", "2026-02-30", "", "2026-12-01T00:00:00Z"} {
		_, err := s.RunAt(bad, now)
		require.ErrorAs(t, err, new(*pix.ValidationError), bad)
	}

	s, err = scheduled.SettingsFrom(config.LookupIn(map[string]string{scheduled.HourSetting: "9"}))
	require.NoError(t, err)
	at, err = s.RunAt("2026-12-24", now)
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 12, 24, 12, 0, 0, 0, time.UTC), at.UTC(), "09:00 in São Paulo")

	s, err = scheduled.SettingsFrom(config.LookupIn(map[string]string{scheduled.MaxPendingSetting: "7"}))
	require.NoError(t, err)
	require.Equal(t, 7, s.MaxPending)
	s, err = scheduled.SettingsFrom(config.LookupIn(nil))
	require.NoError(t, err)
	require.Equal(t, scheduled.DefaultMaxPending, s.MaxPending)
	for _, bad := range []string{"0", "-1", "many", "100001"} {
		_, err := scheduled.SettingsFrom(config.LookupIn(map[string]string{scheduled.MaxPendingSetting: bad}))
		require.ErrorContains(t, err, scheduled.MaxPendingSetting, bad)
	}

	for _, bad := range []string{"24", "-1", "nine", "9.5"} {
		_, err := scheduled.SettingsFrom(config.LookupIn(map[string]string{scheduled.HourSetting: bad}))
		require.ErrorContains(t, err, scheduled.HourSetting, bad)
	}
}
