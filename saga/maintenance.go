package saga

import (
	"context"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/activities"
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
		retention := activities.RetentionInput{BatchSize: 1000, MaxBatches: 100,
			OutboxRetention: payload.Duration(env.Cfg.OutboxRetention), InboxRetention: payload.Duration(env.Cfg.InboxRetention)}
		if err := workflows.EnsureRetentionSchedule(ctx, c, env.Schedules, env.Queues, env.Cfg.RetentionInterval, retention); err != nil {
			return err
		}
		return workflows.EnsureReconcileSchedule(ctx, c, env.Schedules, env.Queues, env.Cfg.ReconcileInterval)
	},
}
