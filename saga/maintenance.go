package saga

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/payload"
	"github.com/pixbank/pix/workflows"
)

// The retention and the reconciliation of the books (workflows/cleanup.go),
// started by their Schedules.
var Maintenance = Descriptor{
	Name:   "maintenance",
	Family: workflows.Maintenance,
	// Deploy safety, as the transfer's: a retention or reconciliation run
	// started by a Schedule not yet moved to the maintenance queue
	// (EnsureRetentionSchedule moves it at the worker's start) runs on
	// pix-credit. Remove with the transfer's.
	AlsoOn: []workflows.Family{workflows.Credits},
	Workflows: map[string]any{
		workflows.RetentionWorkflowName: workflows.Retention,
		workflows.ReconcileWorkflowName: workflows.Reconcile,
	},
	// AutoUpgrade, as the PSP catch-up: Schedules' runs, short and
	// idempotent, never held by a stopped build.
	Versioning: workflow.VersioningBehaviorAutoUpgrade,
	Deps:       sharedActivities,
	Activities: func(deps any) []any {
		a := deps.(*activities.Activities)
		return []any{a.DeleteExpiredIdempotencyKeys, a.DeletePublishedEvents, a.DeleteDoneInboxRows, a.ReconcileBooks}
	},
	Schedule: func(ctx context.Context, c client.Client, env Env) error {
		if err := workflows.EnsureRetentionSchedule(ctx, c, env.Schedules, env.Queues, env.Cfg.RetentionInterval, Retention(env.Cfg)); err != nil {
			return err
		}
		return workflows.EnsureReconcileSchedule(ctx, c, env.Schedules, env.Queues, env.Cfg.ReconcileInterval)
	},
}

// RetentionDesignRate is the rows a second each table the retention keeps
// receives at the rate the service is designed for: 1,000 PIX/s
// (docs/scaling.md), 3.6 million rows a table an hour.
const RetentionDesignRate = 1000

// RetentionKeepsUpTo is the most rows a second of each table the
// retention's runs delete with cfg, a bound and not a forecast (each
// batch's own time is left out: at RETENTION_BATCH_PAUSE 100ms a table
// goes at about 7,000 rows/s here, docs/benchmarks.md): a run takes up to
// MaxBatches batches of BatchSize rows, RETENTION_BATCH_PAUSE apart, for at
// most its activity's deadline less the margin; a run starts every
// RETENTION_INTERVAL, and the Schedule skips a start while a run is open.
func RetentionKeepsUpTo(cfg config.Config) float64 {
	in := Retention(cfg)
	pause := time.Duration(in.BatchPause)
	batches := float64(in.MaxBatches)
	if pause > 0 {
		window := workflows.RetentionRunTimeout - activities.RetentionDeadlineMargin
		batches = min(batches, 1+math.Floor(window.Seconds()/pause.Seconds()))
	}
	took := time.Duration(batches-1) * pause
	every := cfg.RetentionInterval
	if took > every {
		every *= (took + every - 1) / every // the first start after the run
	}
	return batches * float64(in.BatchSize) / every.Seconds()
}

// WarnIfRetentionFallsBehind logs at WARN, naming the numbers, when the
// retention's settings keep it below RetentionDesignRate: a bank whose
// peak is below the rate they allow may run so, so it is said, not
// refused (a worker logs it at its start).
func WarnIfRetentionFallsBehind(cfg config.Config, log *slog.Logger) {
	rate := RetentionKeepsUpTo(cfg)
	if rate >= RetentionDesignRate {
		return
	}
	in := Retention(cfg)
	log.Warn(fmt.Sprintf("retention: its settings delete at most %.0f rows a second of each table, below the %d of the design rate "+
		"(1,000 PIX/s, 3.6 million rows a table an hour): at a higher peak the inbox, the outbox and the idempotency keys grow without end; "+
		"shorten RETENTION_BATCH_PAUSE or RETENTION_INTERVAL (docs/configuration.md)", rate, RetentionDesignRate),
		"rows_per_second_at_most", math.Round(rate), "design_rows_per_second", RetentionDesignRate,
		"retention_batch_pause", cfg.RetentionBatchPause.String(), "retention_interval", cfg.RetentionInterval.String(),
		"batch_size", in.BatchSize, "max_batches", in.MaxBatches,
		"run_at_most", (workflows.RetentionRunTimeout - activities.RetentionDeadlineMargin).String())
}

// Retention is the retention Schedule's argument the configuration makes:
// batches of 1,000 rows, RETENTION_BATCH_PAUSE apart, up to 10 million rows
// of each table a run (a day of 1,000 PIX/s is 86 million rows a table, 3.6
// million an hour: a run of RETENTION_INTERVAL 1h takes them with room to
// spare, and a run stops before its activity's deadline anyway).
func Retention(cfg config.Config) activities.RetentionInput {
	return activities.RetentionInput{BatchSize: 1000, MaxBatches: 10_000, BatchPause: payload.Duration(cfg.RetentionBatchPause),
		OutboxRetention: payload.Duration(cfg.OutboxRetention), InboxRetention: payload.Duration(cfg.InboxRetention)}
}
