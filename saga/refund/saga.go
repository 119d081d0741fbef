package refund

import (
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/durable"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/runconf"
	"github.com/pixbank/pix/saga"
)

// Saga is the devolução of a received PIX, declared once: listed in
// saga/registry. Its runs are started from the open refunds
// (db.Store.RefundQueue), which POST /pix/credits/{id}/refunds and the
// sagas that hand a devolução over (db.RecordRefund: the cautionary block)
// record, and the PSP's notices of their outcome are signalled to them.
var Saga = saga.Descriptor{
	Name:      "refund",
	Family:    runconf.Refunds,
	Workflows: map[string]any{WorkflowName: Workflow},
	// Pinned, as the transfer: a devolução's PUTs are counted by the build
	// that sends them (psp_asks), so one build sends them all; its run is
	// bounded (the outcome's wait, a day by default).
	Versioning: workflow.VersioningBehaviorPinned,
	Settings:   settings.Check,
	Deps: func(env saga.Env) any {
		return &Activities{Store: NewStore(env.Store), PSP: env.PSP, Logger: env.Log, Metrics: env.Metrics, Finished: finishedOf(env)}
	},
	// The struct itself: each of its exported methods is an activity.
	Activities: func(deps any) []any { return []any{deps} },
	Source: func(env saga.Env, taskQueue string) durable.Source {
		return Source(env.Store.RefundQueue(), taskQueue, settings.Of(env.Lookup).Run(env.Cfg))
	},
	Kinds:      pix.RefundKinds,
	Events:     db.RefundEvents,
	HTTP:       httpOf,
	Collectors: collectors,
}
