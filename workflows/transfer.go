package workflows

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/internal/durable"
	"github.com/pixbank/pix/internal/payload"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
)

// TransferWorkflowName is the registered name of TransferPix.
const TransferWorkflowName = "PixTransfer"

// ErrTypeTransferFailed is the type of the error a saga run ends with when
// it can't go on (the PSP lost the transfer, the settlement took longer than
// TRANSFER_SETTLEMENT_TIMEOUT, or the PSP contradicts a final status). The
// transfer stays open, so the dispatcher's recheck starts a new run; the
// contradiction needs a human.
const ErrTypeTransferFailed = "PixTransferFailed"

// TransferWorkflowID is the workflow ID of the saga of one outgoing transfer.
func TransferWorkflowID(transferID string) string { return "pix-transfer:" + transferID }

// TransferSettings shape the saga's timeouts and retries. They travel in
// the workflow input so that each run's policy is in its history (its
// durations as the UI should show them: payload.Duration).
type TransferSettings struct {
	// PSPCalls pace the submission (unlimited attempts: the transfer is
	// debited, it must go out or come back).
	PSPCalls
	// SettlementPollInitial and SettlementPollMax pace the polling of a
	// pending transfer; SettlementTimeout bounds the wait, after which the
	// run fails visibly and the dispatcher's recheck starts another.
	SettlementPollInitial payload.Duration
	SettlementPollMax     payload.Duration
	SettlementTimeout     payload.Duration
}

// DefaultTransferSettings are the defaults of the configuration.
func DefaultTransferSettings() TransferSettings {
	return TransferSettings{
		PSPCalls:              defaultPSPCalls,
		SettlementPollInitial: payload.Duration(200 * time.Millisecond),
		SettlementPollMax:     payload.Duration(10 * time.Second),
		SettlementTimeout:     payload.Duration(24 * time.Hour),
	}
}

// PSPCalls pace a saga's calls to the PSP. Embedded in a saga's settings,
// its fields are the settings' own (in Go and in the JSON of a workflow's
// input).
type PSPCalls struct {
	// PSPCallTimeout bounds one call to the PSP (StartToClose); a call that
	// takes longer is retried.
	PSPCallTimeout payload.Duration
	// PSPRetryInitial and PSPRetryMax pace the retries of transient PSP
	// errors, doubling.
	PSPRetryInitial payload.Duration
	PSPRetryMax     payload.Duration
}

var defaultPSPCalls = PSPCalls{
	PSPCallTimeout:  payload.Duration(15 * time.Second),
	PSPRetryInitial: payload.Duration(time.Second),
	PSPRetryMax:     payload.Duration(30 * time.Second),
}

// retryPolicy retries a PSP call without limit, but never a final business
// kind (pix.NonRetryableTypes) nor an error of the types more.
func (p PSPCalls) retryPolicy(more ...string) *temporal.RetryPolicy {
	return &temporal.RetryPolicy{
		InitialInterval:        time.Duration(p.PSPRetryInitial),
		BackoffCoefficient:     2,
		MaximumInterval:        time.Duration(p.PSPRetryMax),
		NonRetryableErrorTypes: append(pix.NonRetryableTypes(), more...),
	}
}

// TransferInput starts the saga of one transfer.
type TransferInput struct {
	TransferID string
	Settings   TransferSettings
}

// TransferOutput is how the saga ended: pix.TransferSettled or
// pix.TransferRefunded (with the PSP's reason).
type TransferOutput struct {
	Status string
	Reason string
}

// databasePolicy retries the saga's own writes until PostgreSQL takes
// them: a debited transfer must end settled or refunded without human
// action. The final business kinds (pix.NonRetryableTypes) are not retried
// in any step of the saga.
var databasePolicy = &temporal.RetryPolicy{
	InitialInterval:        time.Second,
	BackoffCoefficient:     2,
	MaximumInterval:        time.Minute,
	NonRetryableErrorTypes: append(pix.NonRetryableTypes(), activities.ErrTypeRefundUnconfirmed),
}

// pollPolicy paces the polling of a pending transfer; a PSP that knows no
// such transfer fails the run.
func (s TransferSettings) pollPolicy() *temporal.RetryPolicy {
	return &temporal.RetryPolicy{
		InitialInterval:        time.Duration(s.SettlementPollInitial),
		BackoffCoefficient:     2,
		MaximumInterval:        time.Duration(s.SettlementPollMax),
		NonRetryableErrorTypes: append(pix.NonRetryableTypes(), activities.ErrTypePSPTransferUnknown),
	}
}

// TransferPix is the saga of an outgoing PIX, after the debit committed:
// submit it to the PSP under its end_to_end_id, wait for the settlement,
// mark it settled. On a definitive rejection (at submission or at
// settlement) it compensates: the amount goes back to the account and the
// transfer is marked refunded, in one transaction, exactly once. Transient
// PSP errors and timeouts are retried with backoff; the PSP deduplicates a
// resubmission by end_to_end_id, so a retry never sends the money twice.
func TransferPix(ctx workflow.Context, in TransferInput) (TransferOutput, error) {
	s := in.Settings
	ref := activities.TransferRef{TransferID: in.TransferID}
	log := workflow.GetLogger(ctx)
	dbCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second, RetryPolicy: databasePolicy})
	version := listingVersion(ctx)

	submitCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Duration(s.PSPCallTimeout),
		RetryPolicy:         s.retryPolicy(),
	})
	var res activities.PSPResult
	if err := workflow.ExecuteActivity(submitCtx, a.SubmitTransfer, ref).Get(ctx, &res); err != nil {
		return TransferOutput{}, transferFailed("submit to the psp", err)
	}
	if res.AlreadyFinal {
		upsertStatus(ctx, version, res.Status)
		return TransferOutput{Status: res.Status}, nil
	}
	if res.Status != string(psp.StatusRejected) {
		upsertStatus(ctx, version, pix.TransferSubmitted)
	}
	if res.Status == string(psp.StatusPending) {
		pollCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout:    time.Duration(s.PSPCallTimeout),
			ScheduleToCloseTimeout: time.Duration(s.SettlementTimeout),
			RetryPolicy:            s.pollPolicy(),
		})
		if err := workflow.ExecuteActivity(pollCtx, a.AwaitSettlement, res).Get(ctx, &res); err != nil {
			return TransferOutput{}, transferFailed("await settlement", err)
		}
	}

	if res.Status == string(psp.StatusRejected) {
		log.Warn("psp rejected the transfer; refunding", "transfer_id", in.TransferID, "end_to_end_id", res.EndToEndID, "reason", res.Reason)
		if err := workflow.ExecuteActivity(dbCtx, a.RefundTransfer, activities.RefundInput{TransferID: in.TransferID, Reason: res.Reason}).Get(ctx, nil); err != nil {
			return TransferOutput{}, transferFailed("refund", err)
		}
		upsertStatus(ctx, version, pix.TransferRefunded)
		return TransferOutput{Status: pix.TransferRefunded, Reason: res.Reason}, nil
	}
	if err := workflow.ExecuteActivity(dbCtx, a.SettleTransfer, ref).Get(ctx, nil); err != nil {
		return TransferOutput{}, transferFailed("settle", err)
	}
	upsertStatus(ctx, version, pix.TransferSettled)
	return TransferOutput{Status: pix.TransferSettled}, nil
}

// transferFailed ends the run failed, naming the step and the activity's
// failure, so that the Temporal UI says why.
func transferFailed(step string, err error) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf("pix transfer stopped at %s: %s", step, FailureReason(err)), ErrTypeTransferFailed, err)
}

// StartTransfer starts the saga of one transfer; like StartCredit, an open
// run is not an error (started=false).
func StartTransfer(ctx context.Context, c client.Client, taskQueue string, in TransferInput, listing Listing) (started bool, err error) {
	return durable.StartOnce(ctx, c, listing.workflow(TransferWorkflowID(in.TransferID), taskQueue, TransferWorkflowName), in)
}

// TransferSource is the durable start of transfers: the open transfers'
// sagas.
func TransferSource(q durable.Queue, taskQueue string, s TransferSettings) durable.Source {
	return durable.Source{
		Kind:  "transfers",
		Queue: q,
		Start: func(ctx context.Context, c client.Client, due durable.Due) (bool, error) {
			return StartTransfer(ctx, c, taskQueue, TransferInput{TransferID: due.Key, Settings: s}, listingOf(due))
		},
		LogAttrs: func(due durable.Due) []any {
			return []any{"transfer_id", due.Key, "workflow_id", TransferWorkflowID(due.Key)}
		},
	}
}
