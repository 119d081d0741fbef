package saga

import (
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/durable"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/workflows"
)

// The devolução of a received PIX (workflows/refund.go), started from the
// open refunds.
var Refund = Descriptor{
	Name:      "refund",
	Family:    workflows.Refunds,
	Workflows: map[string]any{workflows.RefundWorkflowName: workflows.RefundPix},
	// Pinned, as the transfer: a devolução's PUTs are counted by the build
	// that sends them (psp_asks), so one build sends them all; its run is
	// bounded (the outcome's wait, a day by default).
	Versioning: workflow.VersioningBehaviorPinned,
	Deps: func(env Env) any {
		return &activities.Refunds{Store: env.Store, PSP: env.PSP, Logger: env.Log, Metrics: env.Metrics}
	},
	Activities: func(deps any) []any { return []any{deps} },
	Source: func(env Env, taskQueue string) durable.Source {
		return workflows.RefundSource(env.Store.RefundQueue(), taskQueue, env.Cfg.Refund())
	},
	Kinds:  pix.RefundKinds,
	Events: db.RefundEvents,
	HTTP:   inAPI(api.RefundHTTP),
}
