package saga

import (
	"context"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/internal/runconf"
	"github.com/pixbank/pix/workflows"
)

// The reconciliation of the books (workflows/cleanup.go), started by its
// Schedule. (The retention, which shared this descriptor, is saga/retention.)
var Maintenance = Descriptor{
	Name:   "maintenance",
	Family: runconf.Maintenance,
	// Deploy safety, as the transfer's: a reconciliation run started by a
	// Schedule not yet moved to the maintenance queue
	// (EnsureReconcileSchedule moves it at the worker's start) runs on
	// pix-credit. Remove with the transfer's.
	AlsoOn: []runconf.Family{runconf.Credits},
	Workflows: map[string]any{
		workflows.ReconcileWorkflowName: workflows.Reconcile,
	},
	// AutoUpgrade, as the PSP catch-up: Schedules' runs, short and
	// idempotent, never held by a stopped build.
	Versioning: workflow.VersioningBehaviorAutoUpgrade,
	Deps:       sharedActivities,
	Activities: func(deps any) []any {
		a := deps.(*activities.Activities)
		return []any{a.ReconcileBooks}
	},
	Schedule: func(ctx context.Context, c client.Client, env Env) error {
		return workflows.EnsureReconcileSchedule(ctx, c, env.Schedules, env.Queues, env.Cfg.ReconcileInterval)
	},
}
