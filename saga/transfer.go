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

// The outgoing transfer (workflows/transfer.go), started from the open
// transfers.
var Transfer = Descriptor{
	Name:   "transfer",
	Family: workflows.Transfers,
	// Deploy safety: until the release that gave each family a queue, every
	// family ran on the credits' queue (pix-credit). Transfer runs started
	// before it go on there, their activities scheduled on the same queue:
	// the credits' worker keeps running them so they complete. Remove in a
	// later release, once no transfer run started before that release is
	// open (a transfer's saga lasts hours at most; check with `temporal
	// workflow list --query "TaskQueue = 'pix-credit' AND WorkflowType !=
	// 'PixCredit' AND ExecutionStatus = 'Running'"`).
	AlsoOn:    []workflows.Family{workflows.Credits},
	Workflows: map[string]any{workflows.TransferWorkflowName: workflows.TransferPix},
	// Pinned: a transfer, debited and awaiting the PSP, finishes on the
	// build it started on (hours at most), activities included, so a
	// rollback strands none and a change to it needs no GetVersion.
	Versioning: workflow.VersioningBehaviorPinned,
	Deps:       sharedActivities,
	Activities: func(deps any) []any {
		a := deps.(*activities.Activities)
		return []any{a.SubmitTransfer, a.AwaitSettlement, a.SettleTransfer, a.RefundTransfer}
	},
	Source: func(env Env, taskQueue string) durable.Source {
		return workflows.TransferSource(env.Store.TransferQueue(), taskQueue, env.Cfg.Transfer())
	},
	Kinds:  pix.TransferKinds,
	Events: db.TransferEvents,
	HTTP:   inAPI(api.TransferHTTP),
}
