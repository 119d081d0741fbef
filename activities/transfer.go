package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
)

// Application error types of the transfer activities.
const (
	// ErrTypePSPUnavailable: the PSP did not answer (5xx, timeout,
	// connection); retried with backoff.
	ErrTypePSPUnavailable = "PSPUnavailable"
	// ErrTypeSettlementPending: the PSP has not settled the transfer yet;
	// the retry policy paces the polling.
	ErrTypeSettlementPending = "SettlementPending"
	// ErrTypePSPTransferUnknown: the PSP knows no transfer it had accepted.
	// The run fails (visible); the dispatcher's recheck starts a new run,
	// which submits again under the same end_to_end_id.
	ErrTypePSPTransferUnknown = "PSPTransferUnknown"
	// ErrTypePSPRequestRefused: the PSP refused our request itself (401,
	// 403, 400, 404, 413, ...): our credentials or request are wrong. Never
	// a reason to refund: retried with backoff; after
	// refusedAttemptsPerRun attempts of a run the run fails visibly, the
	// transfer stays open, and the dispatcher's recheck starts another run.
	ErrTypePSPRequestRefused = "PSPRequestRefused"
	// ErrTypeRejectionUnconfirmed: the PSP rejected the submission but its
	// status query did not confirm it (no answer, or no such transfer):
	// nothing is refunded on a guess; retried.
	ErrTypeRejectionUnconfirmed = "RejectionUnconfirmed"
	// ErrTypeTransferNotFound: no transfer with that id.
	ErrTypeTransferNotFound = "TransferNotFound"
	// ErrTypeTransferFinal: the PSP's answer contradicts the transfer's
	// final status (settled vs refunded): a human must look.
	ErrTypeTransferFinal = "TransferFinal"
)

// TransferRef names a transfer.
type TransferRef struct {
	TransferID string
}

// PSPResult is where the PSP says a transfer stands (Status is a
// psp.Status), or, with AlreadyFinal, where our own record says it ended
// (Status is pix.TransferSettled or pix.TransferRefunded): a new run of a
// finished saga has nothing to do.
type PSPResult struct {
	EndToEndID   string
	Status       string
	Reason       string
	AlreadyFinal bool
}

// loadTransfer reads the transfer and a logger that names it.
func (a *Activities) loadTransfer(ctx context.Context, id string) (pix.Transfer, *slog.Logger, error) {
	tid, err := uuid.Parse(id)
	if err != nil {
		return pix.Transfer{}, nil, temporal.NewNonRetryableApplicationError("transfer id: "+err.Error(), ErrTypeTransferNotFound, err)
	}
	t, err := a.Store.GetTransfer(ctx, tid)
	if err != nil {
		return pix.Transfer{}, nil, transferError(err)
	}
	info := activity.GetInfo(ctx)
	log := a.Logger.With("transfer_id", id, "end_to_end_id", t.EndToEndID, "workflow_id", info.WorkflowExecution.ID, "attempt", info.Attempt)
	return t, log, nil
}

// refusedAttemptsPerRun is how many attempts of one run's submission may
// meet a refused request (ErrTypePSPRequestRefused) before the run fails:
// with the saga's backoff, a minute or two of retries, then a failed run
// that an operator sees, and a new run at the dispatcher's recheck.
const refusedAttemptsPerRun = 8

// SubmitTransfer asks the PSP to send the transfer, under its end_to_end_id
// (the PSP deduplicates on it, so a retry never sends twice), and records
// the submission. What it returns follows the PSP answer classes
// (psp.Classify, README "PSP answers"):
//   - a Result: pending or settled, recorded as submitted; rejected only
//     once the PSP's status query confirms it (an earlier submission whose
//     answer was lost may have made it settled or pending);
//   - 409 (already submitted): the PSP's status is asked and returned;
//   - a refused request (credentials, a malformed request): an error of
//     type PSPRequestRefused, never a rejection, retried and counted;
//   - no answer: an error of type PSPUnavailable, retried.
func (a *Activities) SubmitTransfer(ctx context.Context, in TransferRef) (PSPResult, error) {
	t, log, err := a.loadTransfer(ctx, in.TransferID)
	if err != nil {
		return PSPResult{}, err
	}
	if t.Status == pix.TransferSettled || t.Status == pix.TransferRefunded {
		return PSPResult{EndToEndID: t.EndToEndID, Status: t.Status, AlreadyFinal: true}, nil
	}
	res, err := a.PSP.Submit(ctx, psp.Transfer{EndToEndID: t.EndToEndID, AccountID: t.AccountID, AmountCents: t.AmountCents, PixKey: t.PixKey})
	switch answer := psp.Classify(err); answer {
	case psp.AnswerResult:
		if res.Status == psp.StatusRejected {
			// A rejection refunds: only on the PSP's own record of it.
			log.Warn("psp rejected the submission; confirming with its status", "reason", res.Reason)
			if res, err = a.confirmRejection(ctx, log, t.EndToEndID); err != nil {
				return PSPResult{}, err
			}
		}
	case psp.AnswerAlreadySubmitted:
		log.Info("psp already has the transfer; asking its status")
		if res, err = a.PSP.Status(ctx, t.EndToEndID); err != nil {
			return PSPResult{}, a.statusError(ctx, log, t.EndToEndID, err)
		}
	case psp.AnswerRequestRefused:
		return PSPResult{}, a.requestRefused(ctx, log, err)
	default:
		return PSPResult{}, pspError(err)
	}
	if res.Status != psp.StatusRejected {
		if _, err := a.Store.MarkTransferSubmitted(ctx, uuid.MustParse(t.ID)); err != nil {
			return PSPResult{}, transferError(err)
		}
	}
	log.Info("transfer submitted to the psp", "psp_status", res.Status, "reason", res.Reason)
	return PSPResult{EndToEndID: t.EndToEndID, Status: string(res.Status), Reason: res.Reason}, nil
}

// confirmRejection asks the PSP's status of a transfer whose submission it
// rejected, and returns that status: rejected confirms the rejection;
// pending or settled mean the PSP holds the transfer after all. No answer,
// or no such transfer, is an error: nothing is refunded on a guess.
func (a *Activities) confirmRejection(ctx context.Context, log *slog.Logger, e2e string) (psp.Result, error) {
	res, err := a.PSP.Status(ctx, e2e)
	if err != nil {
		return psp.Result{}, a.statusError(ctx, log, e2e, err)
	}
	if res.Status != psp.StatusRejected {
		log.Warn("psp rejected the submission but holds the transfer", "psp_status", res.Status)
	}
	return res, nil
}

// statusError is the activity error for a failed status query made during
// a submission: retryable whatever it was, since a submission whose
// rejection or duplicate could not be looked up has an unknown outcome.
func (a *Activities) statusError(ctx context.Context, log *slog.Logger, e2e string, err error) error {
	switch psp.Classify(err) {
	case psp.AnswerRequestRefused:
		return a.requestRefused(ctx, log, err)
	case psp.AnswerNotFound:
		log.Warn("psp answered the submission but has no status for it; retrying", "error", err)
		return temporal.NewApplicationErrorWithCause("psp: no status for "+e2e+" after it answered the submission; nothing refunded",
			ErrTypeRejectionUnconfirmed, err)
	default:
		return pspError(err)
	}
}

// requestRefused counts and reports a refused request: an error the
// submission's policy retries with backoff, until refusedAttemptsPerRun
// attempts of the run, when it fails the run (visibly; the transfer stays
// open and a later run tries again). Never a rejection.
func (a *Activities) requestRefused(ctx context.Context, log *slog.Logger, err error) error {
	var refused *psp.RequestError
	code := 0
	if errors.As(err, &refused) {
		code = refused.StatusCode
	}
	a.Metrics.PSPRequestRefused(code)
	attempt := activity.GetInfo(ctx).Attempt
	log.Error("psp refused our request: credentials or request wrong; not refunded, retrying", "status_code", code, "error", err)
	msg := fmt.Sprintf("psp refused the request (http %d); the transfer stays open, never refunded: %v", code, err)
	if attempt >= refusedAttemptsPerRun {
		return temporal.NewNonRetryableApplicationError(msg, ErrTypePSPRequestRefused, err)
	}
	return temporal.NewApplicationErrorWithCause(msg, ErrTypePSPRequestRefused, err)
}

// AwaitSettlement asks the PSP where a submitted transfer stands: settled or
// rejected (the PSP's own record: definitive), or a retryable
// SettlementPending error while it is pending. Any other answer is retried
// and never refunds; no such transfer fails the run (PSPTransferUnknown)
// so that a new run submits it again.
func (a *Activities) AwaitSettlement(ctx context.Context, in PSPResult) (PSPResult, error) {
	res, err := a.PSP.Status(ctx, in.EndToEndID)
	switch psp.Classify(err) {
	case psp.AnswerResult:
	case psp.AnswerNotFound:
		return PSPResult{}, temporal.NewNonRetryableApplicationError("the psp knows no transfer "+in.EndToEndID, ErrTypePSPTransferUnknown, err)
	case psp.AnswerRequestRefused:
		var refused *psp.RequestError
		if errors.As(err, &refused) {
			a.Metrics.PSPRequestRefused(refused.StatusCode)
		}
		return PSPResult{}, pspError(err)
	default:
		return PSPResult{}, pspError(err)
	}
	switch {
	case res.Status == psp.StatusPending:
		return PSPResult{}, temporal.NewApplicationError("not settled yet", ErrTypeSettlementPending)
	}
	return PSPResult{EndToEndID: in.EndToEndID, Status: string(res.Status), Reason: res.Reason}, nil
}

// SettleTransfer marks the transfer settled: final.
func (a *Activities) SettleTransfer(ctx context.Context, in TransferRef) error {
	t, log, err := a.loadTransfer(ctx, in.TransferID)
	if err != nil {
		return err
	}
	if _, err := a.Store.SettleTransfer(ctx, uuid.MustParse(t.ID)); err != nil {
		return transferError(err)
	}
	a.Metrics.TransferFinished(pix.TransferSettled)
	log.Info("transfer settled")
	return nil
}

// RefundInput compensates a rejected transfer.
type RefundInput struct {
	TransferID string
	Reason     string
}

// RefundTransfer credits the amount back and marks the transfer refunded, in
// one transaction, exactly once.
func (a *Activities) RefundTransfer(ctx context.Context, in RefundInput) error {
	t, log, err := a.loadTransfer(ctx, in.TransferID)
	if err != nil {
		return err
	}
	if _, err := a.Store.RefundTransfer(ctx, uuid.MustParse(t.ID), in.Reason); err != nil {
		return transferError(err)
	}
	a.Metrics.TransferFinished(pix.TransferRefunded)
	log.Info("transfer refunded", "account_id", t.AccountID, "amount_cents", t.AmountCents, "reason", in.Reason)
	return nil
}

func pspError(err error) error {
	return temporal.NewApplicationErrorWithCause("psp: "+err.Error(), ErrTypePSPUnavailable, err)
}

func transferError(err error) error {
	switch {
	case errors.Is(err, pix.ErrTransferNotFound):
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeTransferNotFound, err)
	case errors.Is(err, pix.ErrTransferFinal):
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeTransferFinal, err)
	default:
		return technicalFailure(err)
	}
}

// RetentionInput bounds one run of the retention.
type RetentionInput struct {
	BatchSize int
	// MaxBatches bounds one run per table; the next scheduled run takes the
	// rest.
	MaxBatches int
	// OutboxRetention is how long published events are kept.
	OutboxRetention time.Duration
	// InboxRetention is how long done inbox rows are kept.
	InboxRetention time.Duration
}

// inBatches runs deleteBatch until a batch comes back short or MaxBatches
// ran, heartbeating the running total.
func inBatches(ctx context.Context, in RetentionInput, deleteBatch func() (int64, error)) (int64, error) {
	var total int64
	for range in.MaxBatches {
		n, err := deleteBatch()
		total += n
		if err != nil {
			return total, technicalFailure(err)
		}
		activity.RecordHeartbeat(ctx, total)
		if n < int64(in.BatchSize) {
			break
		}
	}
	return total, nil
}

// DeleteExpiredIdempotencyKeys deletes expired idempotency keys in small
// batches (short transactions, no long lock) and returns how many.
func (a *Activities) DeleteExpiredIdempotencyKeys(ctx context.Context, in RetentionInput) (int64, error) {
	n, err := inBatches(ctx, in, func() (int64, error) { return a.Store.DeleteExpiredKeys(ctx, in.BatchSize) })
	a.Logger.Info("expired idempotency keys deleted", "deleted", n)
	return n, err
}

// DeletePublishedEvents deletes outbox events published longer ago than the
// retention, in small batches, and returns how many.
func (a *Activities) DeletePublishedEvents(ctx context.Context, in RetentionInput) (int64, error) {
	n, err := inBatches(ctx, in, func() (int64, error) {
		return a.Store.DeletePublishedEvents(ctx, in.OutboxRetention, in.BatchSize)
	})
	a.Logger.Info("published outbox events deleted", "deleted", n, "older_than", in.OutboxRetention.String())
	return n, err
}

// DeleteDoneInboxRows deletes inbox rows done longer ago than the retention,
// in small batches, and returns how many. The credits stay.
func (a *Activities) DeleteDoneInboxRows(ctx context.Context, in RetentionInput) (int64, error) {
	n, err := inBatches(ctx, in, func() (int64, error) {
		return a.Store.DeleteDoneInboxRows(ctx, in.InboxRetention, in.BatchSize)
	})
	a.Logger.Info("done inbox rows deleted", "deleted", n, "older_than", in.InboxRetention.String())
	return n, err
}
