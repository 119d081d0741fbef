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
		{Want: retention.Settings{Interval: time.Hour, InboxRetention: 720 * time.Hour, RowsPerSecond: 2500}},
		{Env: map[string]string{"INBOX_RETENTION": "168h", "RETENTION_INTERVAL": "30m", "RETENTION_ROWS_PER_SECOND": "0"},
			Want: retention.Settings{Interval: 30 * time.Minute, InboxRetention: 168 * time.Hour}},
		{Env: map[string]string{"INBOX_RETENTION": "0", "RETENTION_INTERVAL": "often", "RETENTION_ROWS_PER_SECOND": "fast"},
			Err: `INBOX_RETENTION: "0" is not a positive duration such as 500ms or 2m` + "\n" +
				`RETENTION_INTERVAL: "often" is not a positive duration such as 500ms or 2m` + "\n" +
				`RETENTION_ROWS_PER_SECOND: "fast" is not a whole number from 0 to 1000000`},
		{Env: map[string]string{"RETENTION_ROWS_PER_SECOND": "-1"},
			Err: `RETENTION_ROWS_PER_SECOND: "-1" is not a whole number from 0 to 1000000`},
		// Slower than a batch a second: its waits would outlast the run's
		// heartbeat.
		{Env: map[string]string{"RETENTION_ROWS_PER_SECOND": "99"},
			Err: `RETENTION_ROWS_PER_SECOND: "99" is not 0 (no limit) or a whole number from 100 (a batch a second) to 1000000`},
		{Env: map[string]string{"RETENTION_ROWS_PER_SECOND": "100"},
			Want: retention.Settings{Interval: time.Hour, InboxRetention: 720 * time.Hour, RowsPerSecond: 100}},
		// The pace before RETENTION_ROWS_PER_SECOND: refused, not ignored.
		{Env: map[string]string{"RETENTION_BATCH_PAUSE": "100ms"},
			Err: `RETENTION_BATCH_PAUSE: "100ms": no longer read; the retention's pace is RETENTION_ROWS_PER_SECOND, rows a second of each table (docs/configuration.md)`},
	})
}

// The Schedule's argument: batches of 100, up to 100,000 a run, the
// settings' rows a second and inbox retention, the outbox's retention
// (OUTBOX_RETENTION, the process's), and a batch's share of the rate as
// the pause a worker of the release before reads.
func TestNewInput(t *testing.T) {
	in := retention.NewInput(retention.DefaultSettings(), 168*time.Hour)
	require.Equal(t, retention.Input{BatchSize: 100, MaxBatches: 100_000, RowsPerSecond: 2500, BatchPause: payload.Duration(40 * time.Millisecond),
		OutboxRetention: payload.Duration(168 * time.Hour), InboxRetention: payload.Duration(720 * time.Hour)}, in)
	s := retention.DefaultSettings()
	s.RowsPerSecond = 0
	in = retention.NewInput(s, 168*time.Hour)
	require.Zero(t, in.RowsPerSecond)
	require.Zero(t, in.BatchPause, "no limit: no pause either")
}

// What the retention's settings let it delete, at most, against the design
// rate (1,000 rows a second of each table): up to 10 million rows a run,
// at RETENTION_ROWS_PER_SECOND within a run's 29 minutes (1,740 s), a run
// every RETENTION_INTERVAL.
func TestKeepsUpTo(t *testing.T) {
	for _, c := range []struct {
		name     string
		rate     int
		interval time.Duration
		want     float64
	}{
		{"the defaults: 4.35 million rows in a run's 29 minutes, an hourly run", 2500, time.Hour, 2500 * 1740.0 / 3600},
		{"no limit: 10 million rows a run", 0, time.Hour, 10_000_000.0 / 3600},
		{"1,000 rows a second: 1.74 million a run", 1000, time.Hour, 1_740_000.0 / 3600},
		{"a daily run", 2500, 24 * time.Hour, 2500 * 1740.0 / 86400},
		{"a run longer than the interval: the next starts at the first tick after it", 2500, 10 * time.Minute, 2500 * 1740.0 / 1800},
		{"a rate that takes the 10 million before the deadline", 10_000, time.Hour, 10_000_000.0 / 3600},
	} {
		s := retention.DefaultSettings()
		s.RowsPerSecond, s.Interval = c.rate, c.interval
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
	s.RowsPerSecond = 1000
	lines := warned(s)
	require.Len(t, lines, 1)
	l := lines[0]
	require.Equal(t, "WARN", l["level"])
	require.Contains(t, l["msg"], "at most 483 rows a second of each table, below the 1000 of the design rate")
	require.Contains(t, l["msg"], "RETENTION_ROWS_PER_SECOND")
	require.EqualValues(t, 483, l["rows_per_second_at_most"])
	require.EqualValues(t, 1000, l["design_rows_per_second"])
	require.EqualValues(t, 1000, l["retention_rows_per_second"])
	require.Equal(t, "1h0m0s", l["retention_interval"])
	require.EqualValues(t, 100, l["batch_size"])
	require.EqualValues(t, 100_000, l["max_batches"])
	require.Equal(t, "29m0s", l["run_at_most"])

	s = retention.DefaultSettings()
	s.Interval = 24 * time.Hour
	lines = warned(s)
	require.Len(t, lines, 1, "a daily run of 4.35 million rows a table falls behind too")
	require.EqualValues(t, 50, lines[0]["rows_per_second_at_most"])
}
