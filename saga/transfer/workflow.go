package transfer

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/internal/durable"
	"github.com/pixbank/pix/internal/payload"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/internal/runconf"
	"github.com/pixbank/pix/workflows"
)

// WorkflowName is the registered name of Workflow, recorded in every
// run's history: never change it.
const WorkflowName = "PixTransfer"

// ErrTypeFailed is the type of the error a saga run ends with when it
// can't go on (the PSP lost the transfer, the settlement took longer than
// TRANSFER_SETTLEMENT_TIMEOUT, or the PSP contradicts a final status). The
// transfer stays open, so the dispatcher's recheck starts a new run; the
// contradiction needs a human.
const ErrTypeFailed = "PixTransferFailed"

// WorkflowID is the workflow ID of the saga of one outgoing transfer.
func WorkflowID(transferID string) string { return "pix-transfer:" + transferID }

// RunSettings shape the saga's timeouts and retries. They travel in the
// workflow input so that each run's policy is in its history (its
// durations as the UI should show them: payload.Duration).
type RunSettings struct {
	// PSPCalls pace the submission (unlimited attempts: the transfer is
	// debited, it must go out or come back).
	runconf.PSPCalls
	// SettlementPollInitial and SettlementPollMax pace the polling of a
	// pending transfer; SettlementTimeout bounds the wait, after which the
	// run fails visibly and the dispatcher's recheck starts another.
	SettlementPollInitial payload.Duration
	SettlementPollMax     payload.Duration
	SettlementTimeout     payload.Duration
}

// DefaultRunSettings are the runs' settings of an environment that sets
// none.
func DefaultRunSettings() RunSettings {
	return RunSettings{
		PSPCalls:              runconf.DefaultPSPCalls(),
		SettlementPollInitial: payload.Duration(200 * time.Millisecond),
		SettlementPollMax:     payload.Duration(10 * time.Second),
		SettlementTimeout:     payload.Duration(24 * time.Hour),
	}
}

// Input starts the saga of one transfer.
type Input struct {
	TransferID string
	Settings   RunSettings
}

// Output is how the saga ended: pix.TransferSettled or pix.TransferRefunded
// (with the PSP's reason).
type Output struct {
	Status string
	Reason string
}

// databasePolicy retries the saga's own writes until PostgreSQL takes
// them: a debited transfer must end settled or refunded without human
// action. The final business kinds (pix.NonRetryableTypes) are not retried
// in any step of the saga, nor a compensation the PSP's record does not
// confirm (RefundUnconfirmed).
var databasePolicy = &temporal.RetryPolicy{
	InitialInterval:        time.Second,
	BackoffCoefficient:     2,
	MaximumInterval:        time.Minute,
	NonRetryableErrorTypes: append(pix.NonRetryableTypes(), ErrTypeRefundUnconfirmed),
}

// pollPolicy paces the polling of a pending transfer; a PSP that knows no
// such transfer fails the run.
func (s RunSettings) pollPolicy() *temporal.RetryPolicy {
	return &temporal.RetryPolicy{
		InitialInterval:        time.Duration(s.SettlementPollInitial),
		BackoffCoefficient:     2,
		MaximumInterval:        time.Duration(s.SettlementPollMax),
		NonRetryableErrorTypes: append(pix.NonRetryableTypes(), ErrTypePSPTransferUnknown),
	}
}

// a names the activities in the workflow; never called here.
var a *Activities

// Workflow is the saga of an outgoing PIX, after the debit committed:
// submit it to the PSP under its end_to_end_id, wait for the settlement,
// mark it settled. On a definitive rejection (at submission or at
// settlement) it compensates: the amount goes back to the account and the
// transfer is marked refunded, in one transaction, exactly once. Transient
// PSP errors and timeouts are retried with backoff; the PSP deduplicates a
// resubmission by end_to_end_id, so a retry never sends the money twice.
func Workflow(ctx workflow.Context, in Input) (Output, error) {
	s := in.Settings
	ref := Ref{TransferID: in.TransferID}
	log := workflow.GetLogger(ctx)
	dbCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second, RetryPolicy: databasePolicy})
	version := workflows.ListingVersion(ctx)

	submitCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Duration(s.PSPCallTimeout),
		RetryPolicy:         s.RetryPolicy(),
	})
	var res PSPResult
	if err := workflow.ExecuteActivity(submitCtx, a.SubmitTransfer, ref).Get(ctx, &res); err != nil {
		return Output{}, failed("submit to the psp", err)
	}
	if res.AlreadyFinal {
		workflows.UpsertStatus(ctx, version, res.Status)
		return Output{Status: res.Status}, nil
	}
	if res.Status != string(psp.StatusRejected) {
		workflows.UpsertStatus(ctx, version, pix.TransferSubmitted)
	}
	if res.Status == string(psp.StatusPending) {
		pollCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout:    time.Duration(s.PSPCallTimeout),
			ScheduleToCloseTimeout: time.Duration(s.SettlementTimeout),
			RetryPolicy:            s.pollPolicy(),
		})
		if err := workflow.ExecuteActivity(pollCtx, a.AwaitSettlement, res).Get(ctx, &res); err != nil {
			return Output{}, failed("await settlement", err)
		}
	}

	if res.Status == string(psp.StatusRejected) {
		log.Warn("psp rejected the transfer; refunding", "transfer_id", in.TransferID, "end_to_end_id", res.EndToEndID, "reason", res.Reason)
		if err := workflow.ExecuteActivity(dbCtx, a.RefundTransfer, RefundInput{TransferID: in.TransferID, Reason: res.Reason}).Get(ctx, nil); err != nil {
			return Output{}, failed("refund", err)
		}
		workflows.UpsertStatus(ctx, version, pix.TransferRefunded)
		return Output{Status: pix.TransferRefunded, Reason: res.Reason}, nil
	}
	if err := workflow.ExecuteActivity(dbCtx, a.SettleTransfer, ref).Get(ctx, nil); err != nil {
		return Output{}, failed("settle", err)
	}
	workflows.UpsertStatus(ctx, version, pix.TransferSettled)
	return Output{Status: pix.TransferSettled}, nil
}

// failed ends the run failed, naming the step and the activity's failure,
// so that the Temporal UI says why.
func failed(step string, err error) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf("pix transfer stopped at %s: %s", step, workflows.FailureReason(err)), ErrTypeFailed, err)
}

// Start starts the saga of one transfer, listed as listing says; like
// workflows.StartCredit, an open run is not an error (started=false).
func Start(ctx context.Context, c client.Client, taskQueue string, in Input, listing workflows.Listing) (started bool, err error) {
	return durable.StartOnce(ctx, c, listing.Workflow(WorkflowID(in.TransferID), taskQueue, WorkflowName), in)
}

// Source is the durable start of transfers: the open transfers' sagas.
func Source(q durable.Queue, taskQueue string, s RunSettings) durable.Source {
	return durable.Source{
		Kind:  "transfers",
		Queue: q,
		Start: func(ctx context.Context, c client.Client, due durable.Due) (bool, error) {
			return workflows.StartDue(ctx, c, due, WorkflowID(due.Key), taskQueue, WorkflowName, Input{TransferID: due.Key, Settings: s})
		},
		LogAttrs: func(due durable.Due) []any {
			return []any{"transfer_id", due.Key, "workflow_id", WorkflowID(due.Key)}
		},
	}
}
