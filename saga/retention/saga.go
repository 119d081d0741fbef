package retention

import (
	"context"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/internal/runconf"
	"github.com/pixbank/pix/saga"
)

// Saga is the retention, declared once: listed in saga/registry. Its runs
// are started by its Schedule; it has no metrics of its own (each run logs
// what it deleted).
var Saga = saga.Descriptor{
	Name:   "retention",
	Family: runconf.Maintenance,
	// Deploy safety, as the transfer's: a run started by a Schedule not yet
	// moved to the maintenance queue (EnsureSchedule moves it at the
	// worker's start) runs on pix-credit. Remove with the transfer's.
	AlsoOn:    []runconf.Family{runconf.Credits},
	Workflows: map[string]any{WorkflowName: Workflow},
	// AutoUpgrade, as the PSP catch-up: a Schedule's runs, short and
	// idempotent, never held by a stopped build.
	Versioning: workflow.VersioningBehaviorAutoUpgrade,
	Settings:   settings.Check,
	Deps: func(env saga.Env) any {
		return &Activities{Store: NewStore(env.Store), Logger: env.Log}
	},
	Activities: func(deps any) []any { return []any{deps} },
	Schedule: func(ctx context.Context, c client.Client, env saga.Env) error {
		s := settings.Of(env.Lookup)
		return EnsureSchedule(ctx, c, env.Schedules, env.Queues, s.Interval, NewInput(s, env.Cfg.OutboxRetention))
	},
	Started: func(env saga.Env) { WarnIfFallsBehind(settings.Of(env.Lookup), env.Log) },
}
