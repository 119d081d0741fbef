package catchup

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/internal/runconf"
	"github.com/pixbank/pix/saga"
)

// Saga is the PSP catch-up, declared once: listed in saga/registry. The
// PIX the PSP's record holds that no webhook brought, started by its
// Schedule. It never ran on the credits' queue: no AlsoOn.
var Saga = saga.Descriptor{
	Name:      "psp-catchup",
	Family:    runconf.Maintenance,
	Workflows: map[string]any{WorkflowName: Workflow},
	// AutoUpgrade: a Schedule's run, short and idempotent; pinned to a
	// build stopped too soon it would hold the Schedule (no overlap) until
	// that build came back.
	Versioning: workflow.VersioningBehaviorAutoUpgrade,
	Settings:   settings.Check,
	Deps: func(env saga.Env) any {
		s := settings.Of(env.Lookup)
		return &Activities{Store: NewStore(env.Store), PSP: env.PSP, Overlap: s.Overlap, Lookback: s.Lookback,
			Grace: s.Grace, Logger: env.Log, Metrics: env.Metrics, Found: metricsOf(env)}
	},
	Activities: func(deps any) []any { return []any{deps} },
	Schedule: func(ctx context.Context, c client.Client, env saga.Env) error {
		return EnsureSchedule(ctx, c, env.Schedules, env.Queues, settings.Of(env.Lookup).Interval)
	},
	Collectors: func(env saga.Env) []prometheus.Collector {
		return metricsOf(env).collectors(settings.Of(env.Lookup).Interval > 0)
	},
}
