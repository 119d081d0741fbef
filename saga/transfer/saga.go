package transfer

import (
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/durable"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/runconf"
	"github.com/pixbank/pix/saga"
)

// Saga is the outgoing transfer, declared once: listed in saga/registry.
// Its runs are started from the open transfers (db.Store.TransferQueue),
// which POST /pix and the sagas that hand a transfer over
// (db.RecordTransfer: the scheduled PIX) record.
var Saga = saga.Descriptor{
	Name:   "transfer",
	Family: runconf.Transfers,
	// Deploy safety: until the release that gave each family a queue, every
	// family ran on the credits' queue (pix-credit). Transfer runs started
	// before it go on there, their activities scheduled on the same queue:
	// the credits' worker keeps running them so they complete. Remove in a
	// later release, once no transfer run started before that release is
	// open (a transfer's saga lasts hours at most; check with `temporal
	// workflow list --query "TaskQueue = 'pix-credit' AND WorkflowType !=
	// 'PixCredit' AND ExecutionStatus = 'Running'"`).
	AlsoOn:    []runconf.Family{runconf.Credits},
	Workflows: map[string]any{WorkflowName: Workflow},
	// Pinned: a transfer, debited and awaiting the PSP, finishes on the
	// build it started on (hours at most), activities included, so a
	// rollback strands none and a change to it needs no GetVersion.
	Versioning: workflow.VersioningBehaviorPinned,
	Settings:   settings.Check,
	Deps: func(env saga.Env) any {
		return &Activities{Store: NewStore(env.Store), PSP: env.PSP, Logger: env.Log, Metrics: env.Metrics, Finished: finishedOf(env)}
	},
	Activities: func(deps any) []any {
		a := deps.(*Activities)
		return []any{a.SubmitTransfer, a.AwaitSettlement, a.SettleTransfer, a.RefundTransfer}
	},
	Source: func(env saga.Env, taskQueue string) durable.Source {
		return Source(env.Store.TransferQueue(), taskQueue, settings.Of(env.Lookup).Run(env.Cfg))
	},
	Kinds:      pix.TransferKinds,
	Events:     db.TransferEvents,
	HTTP:       httpOf,
	Collectors: collectors,
}
