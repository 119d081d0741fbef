package reconcile

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/internal/runconf"
	"github.com/pixbank/pix/saga"
)

// Saga is the reconciliation of the books, declared once: listed in
// saga/registry. Its runs are started by its Schedule; an operator runs
// one at will with GET /admin/reconcile.
var Saga = saga.Descriptor{
	Name:   "reconcile",
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
		return &Activities{Store: storeOf(env), Logger: env.Log, Metrics: metricsOf(env)}
	},
	Activities: func(deps any) []any { return []any{deps} },
	Schedule: func(ctx context.Context, c client.Client, env saga.Env) error {
		return EnsureSchedule(ctx, c, env.Schedules, env.Queues, settings.Of(env.Lookup).Interval)
	},
	HTTP: func(env saga.Env) (api.SagaHTTP, error) {
		h := &Handlers{Store: storeOf(env), Log: env.Log}
		return h.HTTP(), nil
	},
	Collectors: func(env saga.Env) []prometheus.Collector { return metricsOf(env).collectors() },
}
