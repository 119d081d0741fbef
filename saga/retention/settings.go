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
	// BatchPause is the wait between batches of BatchSize rows
	// (RETENTION_BATCH_PAUSE; 0: none).
	BatchPause time.Duration
}

// DefaultSettings are the settings of an environment that sets none.
func DefaultSettings() Settings {
	return Settings{Interval: time.Hour, InboxRetention: 30 * 24 * time.Hour, BatchPause: 100 * time.Millisecond}
}

// settings reads the saga's settings, each variable over its default.
var settings = config.SagaSettings[Settings]{What: "retention", Defaults: DefaultSettings,
	Read: func(r *config.Settings, s *Settings) {
		r.Duration("INBOX_RETENTION", &s.InboxRetention)
		r.Duration("RETENTION_INTERVAL", &s.Interval)
		r.Wait("RETENTION_BATCH_PAUSE", "100ms", time.Second, &s.BatchPause)
	}}

// SettingsFrom reads the settings through lookup (os.LookupEnv): a value
// set that does not read is an error, never the default.
func SettingsFrom(lookup func(string) (string, bool)) (Settings, error) { return settings.From(lookup) }

// BatchSize and MaxBatches bound a run of the Schedule (NewInput): batches
// of 1,000 rows, up to 10 million rows of each table a run (a day of 1,000
// PIX/s is 86 million rows a table, 3.6 million an hour: a run of
// RETENTION_INTERVAL 1h takes them with room to spare, and a run stops
// before its activity's deadline anyway).
const (
	BatchSize  = 1000
	MaxBatches = 10_000
)

// NewInput is the retention Schedule's argument the settings make, with
// the outbox's retention (OUTBOX_RETENTION): batches of BatchSize rows,
// RETENTION_BATCH_PAUSE apart, up to MaxBatches of each table a run.
func NewInput(s Settings, outboxRetention time.Duration) Input {
	return Input{BatchSize: BatchSize, MaxBatches: MaxBatches, BatchPause: payload.Duration(s.BatchPause),
		OutboxRetention: payload.Duration(outboxRetention), InboxRetention: payload.Duration(s.InboxRetention)}
}

// DesignRate is the rows a second each table the retention keeps receives
// at the rate the service is designed for: 1,000 PIX/s (docs/scaling.md),
// 3.6 million rows a table an hour.
const DesignRate = 1000

// KeepsUpTo is the most rows a second of each table the retention's runs
// delete with s, a bound and not a forecast (each batch's own time is left
// out: at RETENTION_BATCH_PAUSE 100ms a table goes at about 7,000 rows/s
// here, docs/benchmarks.md): a run takes up to MaxBatches batches of
// BatchSize rows, RETENTION_BATCH_PAUSE apart, for at most its activity's
// deadline less the margin; a run starts every RETENTION_INTERVAL, and the
// Schedule skips a start while a run is open.
func KeepsUpTo(s Settings) float64 {
	batches := float64(MaxBatches)
	if s.BatchPause > 0 {
		window := RunTimeout - DeadlineMargin
		batches = min(batches, 1+math.Floor(window.Seconds()/s.BatchPause.Seconds()))
	}
	took := time.Duration(batches-1) * s.BatchPause
	every := s.Interval
	if took > every {
		every *= (took + every - 1) / every // the first start after the run
	}
	return batches * BatchSize / every.Seconds()
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
		"shorten RETENTION_BATCH_PAUSE or RETENTION_INTERVAL (docs/configuration.md)", rate, DesignRate),
		"rows_per_second_at_most", math.Round(rate), "design_rows_per_second", DesignRate,
		"retention_batch_pause", s.BatchPause.String(), "retention_interval", s.Interval.String(),
		"batch_size", BatchSize, "max_batches", MaxBatches,
		"run_at_most", (RunTimeout - DeadlineMargin).String())
}
