package saga

import (
	"context"

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

// Retention is the retention Schedule's argument the configuration makes:
// batches of 1,000 rows, RETENTION_BATCH_PAUSE apart, up to 10 million rows
// of each table a run (a day of 1,000 PIX/s is 86 million rows a table, 3.6
// million an hour: a run of RETENTION_INTERVAL 1h takes them with room to
// spare, and a run stops before its activity's deadline anyway).
func Retention(cfg config.Config) activities.RetentionInput {
	return activities.RetentionInput{BatchSize: 1000, MaxBatches: 10_000, BatchPause: payload.Duration(cfg.RetentionBatchPause),
		OutboxRetention: payload.Duration(cfg.OutboxRetention), InboxRetention: payload.Duration(cfg.InboxRetention)}
}
