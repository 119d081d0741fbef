package retention_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/payload"
	"github.com/pixbank/pix/saga/retention"
	"github.com/pixbank/pix/saga/sagatest"
)

// The retention's settings read as config.Load read them before they moved
// here: the same defaults, forms and refusals.
func TestSettings(t *testing.T) {
	sagatest.RequireSettings(t, retention.SettingsFrom, []sagatest.SettingsCase[retention.Settings]{
		{Want: retention.Settings{Interval: time.Hour, InboxRetention: 720 * time.Hour, BatchPause: 100 * time.Millisecond}},
		{Env: map[string]string{"INBOX_RETENTION": "168h", "RETENTION_INTERVAL": "30m", "RETENTION_BATCH_PAUSE": "0"},
			Want: retention.Settings{Interval: 30 * time.Minute, InboxRetention: 168 * time.Hour}},
		{Env: map[string]string{"INBOX_RETENTION": "0", "RETENTION_INTERVAL": "often", "RETENTION_BATCH_PAUSE": "2s"},
			Err: `INBOX_RETENTION: "0" is not a positive duration such as 500ms or 2m` + "\n" +
				`RETENTION_INTERVAL: "often" is not a positive duration such as 500ms or 2m` + "\n" +
				`RETENTION_BATCH_PAUSE: "2s" is longer than 1s`},
		{Env: map[string]string{"RETENTION_BATCH_PAUSE": "-1ms"},
			Err: `RETENTION_BATCH_PAUSE: "-1ms" is not a duration of 0 or more, such as 100ms (0: no wait)`},
	})
}

// The Schedule's argument: batches of 1,000, up to 10,000 a run, the
// settings' pause and inbox retention, and the outbox's retention
// (OUTBOX_RETENTION, the process's).
func TestNewInput(t *testing.T) {
	in := retention.NewInput(retention.DefaultSettings(), 168*time.Hour)
	require.Equal(t, retention.Input{BatchSize: 1000, MaxBatches: 10_000, BatchPause: payload.Duration(100 * time.Millisecond),
		OutboxRetention: payload.Duration(168 * time.Hour), InboxRetention: payload.Duration(720 * time.Hour)}, in)
}

// What the retention's settings let it delete, at most, against the design
// rate (1,000 rows a second of each table): batches of 1,000, up to 10,000
// a run, RETENTION_BATCH_PAUSE apart within a run's 29 minutes, a run every
// RETENTION_INTERVAL.
func TestKeepsUpTo(t *testing.T) {
	for _, c := range []struct {
		name            string
		pause, interval time.Duration
		want            float64
	}{
		{"the defaults: 10,000 batches an hour", 100 * time.Millisecond, time.Hour, 10_000_000.0 / 3600},
		{"no pause", 0, time.Hour, 10_000_000.0 / 3600},
		{"a 1s pause: 1,741 batches in a run's 29 minutes", time.Second, time.Hour, 1_741_000.0 / 3600},
		{"a daily run", 100 * time.Millisecond, 24 * time.Hour, 10_000_000.0 / 86400},
		{"a run longer than the interval: the next starts at the first tick after it", 100 * time.Millisecond, time.Minute, 10_000_000.0 / 1020},
	} {
		s := retention.DefaultSettings()
		s.BatchPause, s.Interval = c.pause, c.interval
		require.InDelta(t, c.want, retention.KeepsUpTo(s), 0.01, c.name)
	}
}

// A worker whose retention settings can't keep up with the design rate says
// so at its start, at WARN, naming the numbers; the defaults say nothing.
func TestARetentionThatCannotKeepUpIsWarned(t *testing.T) {
	warned := func(s retention.Settings) []map[string]any {
		var buf bytes.Buffer
		retention.WarnIfFallsBehind(s, slog.New(slog.NewJSONHandler(&buf, nil)))
		var lines []map[string]any
		for _, l := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
			if len(l) == 0 {
				continue
			}
			var line map[string]any
			require.NoError(t, json.Unmarshal(l, &line))
			lines = append(lines, line)
		}
		return lines
	}
	require.Empty(t, warned(retention.DefaultSettings()), "the defaults keep up")

	s := retention.DefaultSettings()
	s.BatchPause = time.Second
	lines := warned(s)
	require.Len(t, lines, 1)
	l := lines[0]
	require.Equal(t, "WARN", l["level"])
	require.Contains(t, l["msg"], "at most 484 rows a second of each table, below the 1000 of the design rate")
	require.Contains(t, l["msg"], "RETENTION_BATCH_PAUSE")
	require.EqualValues(t, 484, l["rows_per_second_at_most"])
	require.EqualValues(t, 1000, l["design_rows_per_second"])
	require.Equal(t, "1s", l["retention_batch_pause"])
	require.Equal(t, "1h0m0s", l["retention_interval"])
	require.EqualValues(t, 1000, l["batch_size"])
	require.EqualValues(t, 10_000, l["max_batches"])
	require.Equal(t, "29m0s", l["run_at_most"])

	s = retention.DefaultSettings()
	s.Interval = 24 * time.Hour
	lines = warned(s)
	require.Len(t, lines, 1, "a daily run of 10 million rows a table falls behind too")
	require.EqualValues(t, 116, lines[0]["rows_per_second_at_most"])
}
