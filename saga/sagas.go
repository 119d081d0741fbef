package saga

import (
	"context"

	"go.temporal.io/sdk/client"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/internal/durable"
	"github.com/pixbank/pix/workflows"
)

// The credit of a received PIX (workflows/credit.go), started from the
// inbox.
var Credit = Descriptor{
	Name:      "credit",
	Family:    workflows.Credits,
	Workflows: map[string]any{workflows.CreditWorkflowName: workflows.CreditPix},
	Deps:      sharedActivities,
	Activities: func(deps any) []any {
		a := deps.(*activities.Activities)
		return []any{
			a.CreditAccount, // a local activity
			a.MarkCreditFailed,
		}
	},
	Source: func(env Env, taskQueue string) durable.Source {
		return workflows.CreditSource(env.Store.InboxQueue(), taskQueue, env.Cfg.Retry(), env.Cfg.CreditInputListingVersion())
	},
}

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
	Deps:      sharedActivities,
	Activities: func(deps any) []any {
		a := deps.(*activities.Activities)
		return []any{a.SubmitTransfer, a.AwaitSettlement, a.SettleTransfer, a.RefundTransfer}
	},
	Source: func(env Env, taskQueue string) durable.Source {
		return workflows.TransferSource(env.Store.TransferQueue(), taskQueue, env.Cfg.Transfer())
	},
}

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
}

// The retention and the reconciliation of the books (workflows/cleanup.go),
// started by their Schedules.
var Maintenance = Descriptor{
	Name:   "maintenance",
	Family: workflows.Maintenance,
	// Deploy safety, as the transfer's: a retention or reconciliation run
	// started by a Schedule not yet moved to the maintenance queue
	// (EnsureRetentionSchedule moves it at the worker's start) runs on
	// pix-credit. Remove with the transfer's.
	AlsoOn: []workflows.Family{workflows.Credits},
	Workflows: map[string]any{
		workflows.RetentionWorkflowName: workflows.Retention,
		workflows.ReconcileWorkflowName: workflows.Reconcile,
	},
	Deps: sharedActivities,
	Activities: func(deps any) []any {
		a := deps.(*activities.Activities)
		return []any{a.DeleteExpiredIdempotencyKeys, a.DeletePublishedEvents, a.DeleteDoneInboxRows, a.ReconcileBooks}
	},
	Schedule: func(ctx context.Context, c client.Client, env Env) error {
		retention := activities.RetentionInput{BatchSize: 1000, MaxBatches: 100, OutboxRetention: env.Cfg.OutboxRetention, InboxRetention: env.Cfg.InboxRetention}
		if err := workflows.EnsureRetentionSchedule(ctx, c, env.Queues, env.Cfg.RetentionInterval, retention); err != nil {
			return err
		}
		return workflows.EnsureReconcileSchedule(ctx, c, env.Queues, env.Cfg.ReconcileInterval)
	},
}

// The PSP catch-up (workflows/catchup.go): the PIX the PSP's record holds
// that no webhook brought, started by its Schedule. It never ran on the
// credits' queue: no AlsoOn.
var PSPCatchUp = Descriptor{
	Name:      "psp-catchup",
	Family:    workflows.Maintenance,
	Workflows: map[string]any{workflows.PSPCatchUpWorkflowName: workflows.PSPCatchUp},
	Deps: func(env Env) any {
		return &activities.CatchUp{Store: env.Store, PSP: env.PSP, Overlap: env.Cfg.PSPCatchUpOverlap, Lookback: env.Cfg.PSPCatchUpLookback,
			Grace: env.Cfg.PSPCatchUpGrace, Logger: env.Log, Metrics: env.Metrics, Found: env.CatchUpFound}
	},
	Activities: func(deps any) []any { return []any{deps} },
	Schedule: func(ctx context.Context, c client.Client, env Env) error {
		return workflows.EnsurePSPCatchUpSchedule(ctx, c, env.Queues, env.Cfg.PSPCatchUpInterval)
	},
}

// sharedActivities are the credit's, the transfer's and the maintenance's
// activities, which share one struct of dependencies.
func sharedActivities(env Env) any {
	return &activities.Activities{Store: env.Store, PSP: env.PSP, Logger: env.Log, Metrics: env.Metrics}
}
