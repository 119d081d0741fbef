package retention

import (
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/payload"
)

// Settings are the retention's own (docs/configuration.md), read from the
// environment (SettingsFrom). OUTBOX_RETENTION, the outbox's, stays the
// process's (config.Config.OutboxRetention): the event stream's age is
// checked against it.
type Settings struct {
	// Interval is how often its Schedule runs (RETENTION_INTERVAL).
	Interval time.Duration
	// InboxRetention is how long done inbox rows are kept
	// (INBOX_RETENTION): the data-retention policy.
	InboxRetention time.Duration
	// RowsPerSecond is the most rows a second a run deletes of each table
	// (RETENTION_ROWS_PER_SECOND; 0: no limit).
	RowsPerSecond int
}

// DefaultRowsPerSecond is RETENTION_ROWS_PER_SECOND's default: 2,500 rows
// a second of each table, 7,500 of the three, in batches of BatchSize: a
// third of the pace before it (batches of 1,000 100 ms apart, about 23,000
// rows a second of the three), for the webhooks' ingest beside a run
// (docs/benchmarks.md, Growth), still 3.75 times the 2,000 a second the
// issue asks of the three, and 4.35 million rows a table in a run's 29
// minutes: more than the 3.6 million an hour of 1,000 PIX/s with an hourly
// RETENTION_INTERVAL.
const DefaultRowsPerSecond = 2500

// DefaultSettings are the settings of an environment that sets none.
func DefaultSettings() Settings {
	return Settings{Interval: time.Hour, InboxRetention: 30 * 24 * time.Hour, RowsPerSecond: DefaultRowsPerSecond}
}

// settings reads the saga's settings, each variable over its default.
// RETENTION_BATCH_PAUSE, the pace before RETENTION_ROWS_PER_SECOND, is
// refused rather than ignored: a value set that does not read is an error.
var settings = config.SagaSettings[Settings]{What: "retention", Defaults: DefaultSettings,
	Read: func(r *config.Settings, s *Settings) {
		r.Duration("INBOX_RETENTION", &s.InboxRetention)
		r.Duration("RETENTION_INTERVAL", &s.Interval)
		r.Integer("RETENTION_ROWS_PER_SECOND", 0, 1_000_000, func(n int64) {
			// Below a batch a second, the wait between batches outlasts what
			// the run's deadline check and its heartbeat (a minute) allow
			// for: at 1, 100 s (review r20 LOW-1).
			if n > 0 && n < BatchSize {
				r.Fail(fmt.Errorf("RETENTION_ROWS_PER_SECOND: \"%d\" is not 0 (no limit) or a whole number from %d (a batch a second) to 1000000", n, BatchSize))
				return
			}
			s.RowsPerSecond = int(n)
		})
		if v, set := r.Lookup("RETENTION_BATCH_PAUSE"); set {
			r.Fail(fmt.Errorf("RETENTION_BATCH_PAUSE: %q: no longer read; the retention's pace is RETENTION_ROWS_PER_SECOND, rows a second of each table (docs/configuration.md)", v))
		}
	}}

// SettingsFrom reads the settings through lookup (os.LookupEnv): a value
// set that does not read is an error, never the default.
func SettingsFrom(lookup func(string) (string, bool)) (Settings, error) { return settings.From(lookup) }

// BatchSize and MaxBatches bound a run of the Schedule (NewInput): batches
// of 100 rows, a tenth of those before, so that the run's deletes come in
// small bursts beside the ingest (docs/benchmarks.md, Growth), up to
// 10 million rows of each table a run (a day of 1,000 PIX/s is 86 million
// rows a table, 3.6 million an hour: a run of RETENTION_INTERVAL 1h takes
// them with room to spare, and a run stops before its activity's deadline
// anyway).
const (
	BatchSize  = 100
	MaxBatches = 100_000
)

// NewInput is the retention Schedule's argument the settings make, with
// the outbox's retention (OUTBOX_RETENTION): batches of BatchSize rows at
// RETENTION_ROWS_PER_SECOND, up to MaxBatches of each table a run.
// BatchPause is a batch's share of the rate, for a worker of a release
// before RowsPerSecond that takes a run during a rolling upgrade: it
// reads BatchPause only, and keeps about the same pace.
func NewInput(s Settings, outboxRetention time.Duration) Input {
	in := Input{BatchSize: BatchSize, MaxBatches: MaxBatches, RowsPerSecond: Rate(s.RowsPerSecond),
		OutboxRetention: payload.Duration(outboxRetention), InboxRetention: payload.Duration(s.InboxRetention)}
	if in.RowsPerSecond > 0 {
		in.BatchPause = payload.Duration(in.RowsPerSecond.share(BatchSize))
	}
	return in
}

// DesignRate is the rows a second each table the retention keeps receives
// at the rate the service is designed for: 1,000 PIX/s (docs/scaling.md),
// 3.6 million rows a table an hour.
const DesignRate = 1000

// KeepsUpTo is the most rows a second of each table the retention's runs
// delete with s, a bound and not a forecast (it leaves out how long the
// batches themselves take, which at the default pace is a small part of
// the run): a run takes up to MaxBatches batches of BatchSize rows at
// RETENTION_ROWS_PER_SECOND, for at most its activity's deadline less the
// margin; a run starts every RETENTION_INTERVAL, and the Schedule skips a
// start while a run is open.
func KeepsUpTo(s Settings) float64 {
	rows := float64(MaxBatches * BatchSize)
	var took time.Duration
	if s.RowsPerSecond > 0 {
		window := RunTimeout - DeadlineMargin
		rows = min(rows, window.Seconds()*float64(s.RowsPerSecond))
		took = time.Duration(rows / float64(s.RowsPerSecond) * float64(time.Second))
	}
	every := s.Interval
	if took > every {
		every *= (took + every - 1) / every // the first start after the run
	}
	return rows / every.Seconds()
}

// WarnIfFallsBehind logs at WARN, naming the numbers, when the settings
// keep the retention below DesignRate: a bank whose peak is below the rate
// they allow may run so, so it is said, not refused (a worker logs it at
// its start: the descriptor's Started).
func WarnIfFallsBehind(s Settings, log *slog.Logger) {
	rate := KeepsUpTo(s)
	if rate >= DesignRate {
		return
	}
	log.Warn(fmt.Sprintf("retention: its settings delete at most %.0f rows a second of each table, below the %d of the design rate "+
		"(1,000 PIX/s, 3.6 million rows a table an hour): at a higher peak the inbox, the outbox and the idempotency keys grow without end; "+
		"raise RETENTION_ROWS_PER_SECOND or shorten RETENTION_INTERVAL (docs/configuration.md)", rate, DesignRate),
		"rows_per_second_at_most", math.Round(rate), "design_rows_per_second", DesignRate,
		"retention_rows_per_second", s.RowsPerSecond, "retention_interval", s.Interval.String(),
		"batch_size", BatchSize, "max_batches", MaxBatches,
		"run_at_most", (RunTimeout - DeadlineMargin).String())
}
