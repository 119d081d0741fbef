package saga

import (
	"github.com/pixbank/pix/activities"
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
	Deps: func(env Env) any {
		return &activities.Refunds{Store: env.Store, PSP: env.PSP, Logger: env.Log, Metrics: env.Metrics}
	},
	Activities: func(deps any) []any { return []any{deps} },
	Source: func(env Env, taskQueue string) durable.Source {
		return workflows.RefundSource(env.Store.RefundQueue(), taskQueue, env.Cfg.Refund())
	},
	Kinds:  pix.RefundKinds,
	Events: db.RefundEvents,
}
