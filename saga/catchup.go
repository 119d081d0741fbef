package saga

import (
	"context"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/workflows"
)

// The PSP catch-up (workflows/catchup.go): the PIX the PSP's record holds
// that no webhook brought, started by its Schedule. It never ran on the
// credits' queue: no AlsoOn.
var PSPCatchUp = Descriptor{
	Name:      "psp-catchup",
	Family:    workflows.Maintenance,
	Workflows: map[string]any{workflows.PSPCatchUpWorkflowName: workflows.PSPCatchUp},
	// AutoUpgrade: a Schedule's run, short and idempotent; pinned to a
	// build stopped too soon it would hold the Schedule (no overlap) until
	// that build came back.
	Versioning: workflow.VersioningBehaviorAutoUpgrade,
	Deps: func(env Env) any {
		return &activities.CatchUp{Store: env.Store, PSP: env.PSP, Overlap: env.Cfg.PSPCatchUpOverlap, Lookback: env.Cfg.PSPCatchUpLookback,
			Grace: env.Cfg.PSPCatchUpGrace, Logger: env.Log, Metrics: env.Metrics, Found: env.CatchUpFound}
	},
	Activities: func(deps any) []any { return []any{deps} },
	Schedule: func(ctx context.Context, c client.Client, env Env) error {
		return workflows.EnsurePSPCatchUpSchedule(ctx, c, env.Schedules, env.Queues, env.Cfg.PSPCatchUpInterval)
	},
}
