package transfer

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/internal/metrics"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/saga/sagakit"
)

// Application error types of the transfer's activities (the PSP's
// unanswered and refused calls are every saga's: activities.PSPError,
// activities.PSPRequestRefused).
const (
	// ErrTypeSettlementPending: the PSP has not settled the transfer yet;
	// the retry policy paces the polling.
	ErrTypeSettlementPending = "SettlementPending"
	// ErrTypePSPTransferUnknown: the PSP knows no transfer it had accepted.
	// The run fails (visible); the dispatcher's recheck starts a new run,
	// which submits again under the same end_to_end_id.
	ErrTypePSPTransferUnknown = "PSPTransferUnknown"
	// ErrTypeRejectionUnconfirmed: the PSP answered about the transfer (a
	// rejection, a 409) but its status query finds no record of it:
	// nothing is refunded on a guess; retried, then the run fails.
	ErrTypeRejectionUnconfirmed = "RejectionUnconfirmed"
	// ErrTypePSPTransferMismatch: the PSP's record under our end_to_end_id
	// is another transfer (amount, key or account differ): never settled
	// nor refunded on it; retried, then the run fails; a human must look.
	ErrTypePSPTransferMismatch = "PSPTransferMismatch"
	// ErrTypeRefundUnconfirmed: the compensation found the PSP holding the
	// transfer as pending or settled: not refunded; the run fails and the
	// next one follows the PSP.
	ErrTypeRefundUnconfirmed = activities.ErrTypeRefundUnconfirmed
)

// Application error types of the transfer's business errors, declared with
// their kind (pix.Kinds).
var (
	// ErrTypeTransferNotFound: no transfer with that id.
	ErrTypeTransferNotFound = pix.TemporalType(pix.ErrTransferNotFound)
	// ErrTypeTransferFinal: the PSP's answer contradicts the transfer's
	// final status (settled vs refunded): a human must look.
	ErrTypeTransferFinal = pix.TemporalType(pix.ErrTransferFinal)
)

// Activities are the transfer's activities, with what they need. Their
// method names are the activities' registered names, recorded in every
// run's history: never rename one.
type Activities struct {
	// Store is the database (*Store in production; fakes in the unit
	// tests).
	Store ActivityStore
	// PSP sends the transfers.
	PSP    psp.Client
	Logger *slog.Logger
	// Metrics counts the PSP's answers that need a human (every saga's);
	// Finished the transfers settled or refunded. nil counts nothing.
	Metrics  *metrics.Worker
	Finished *sagakit.Finished
}

// ActivityStore is what the activities need of the database.
type ActivityStore interface {
	GetTransfer(ctx context.Context, id uuid.UUID) (pix.Transfer, error)
	GetTransferByEndToEndID(ctx context.Context, endToEndID string) (pix.Transfer, error)
	MarkTransferSubmitted(ctx context.Context, id uuid.UUID) (pix.Transfer, error)
	SettleTransfer(ctx context.Context, id uuid.UUID) (pix.Transfer, error)
	RefundTransfer(ctx context.Context, id uuid.UUID, reason string) (pix.Transfer, error)
}

// Ref names a transfer.
type Ref struct {
	TransferID string
}

// PSPResult is where the PSP says a transfer stands (Status is a
// psp.Status), or, with AlreadyFinal, where our own record says it ended
// (Status is pix.TransferSettled or pix.TransferRefunded): a new run of a
// finished saga has nothing to do.
type PSPResult struct {
	// TransferID is the transfer the result is about ("" in results
	// recorded before it was carried).
	TransferID   string
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
		return pix.Transfer{}, nil, activities.KindError(err)
	}
	info := activity.GetInfo(ctx)
	log := a.Logger.With("transfer_id", id, "end_to_end_id", t.EndToEndID, "workflow_id", info.WorkflowExecution.ID, "attempt", info.Attempt)
	return t, log, nil
}

// SubmitTransfer asks the PSP to send the transfer, under its end_to_end_id
// (the PSP deduplicates on it, so a retry never sends twice), and records
// the submission. What it returns follows the PSP answer classes
// (psp.Classify, docs/outgoing.md "PSP answers"):
//   - a Result about our transfer: pending, recorded as submitted; a final
//     status (settled, rejected) only once the PSP's status record of our
//     transfer confirms it (an earlier submission whose answer was lost may
//     have made it settled or pending);
//   - 409 (already submitted): the PSP's status is asked and returned;
//   - a refused request (credentials, the OAuth 2.0 token endpoint refusing
//     our client, a malformed request; a devolução's problem type, which
//     says nothing of a transfer): an error of type PSPRequestRefused,
//     never a rejection, retried and counted;
//   - no answer (the token endpoint down too): an error of type
//     PSPUnavailable, retried.
//
// A status that describes another transfer than ours under our
// end_to_end_id is never adopted (PSPTransferMismatch).
func (a *Activities) SubmitTransfer(ctx context.Context, in Ref) (PSPResult, error) {
	t, log, err := a.loadTransfer(ctx, in.TransferID)
	if err != nil {
		return PSPResult{}, err
	}
	if t.Status == pix.TransferSettled || t.Status == pix.TransferRefunded {
		return PSPResult{EndToEndID: t.EndToEndID, Status: t.Status, AlreadyFinal: true}, nil
	}
	res, err := a.PSP.Submit(ctx, pspTransfer(t))
	switch psp.Classify(err) {
	case psp.AnswerResult:
		if err := a.ours(ctx, log, t, res); err != nil {
			return PSPResult{}, err
		}
		if res.Status.Final() {
			// A final answer moves money (a refund) or ends the saga (a
			// settlement): only on the PSP's own record of our transfer.
			log.WarnContext(ctx, "psp answered the submission with a final status; confirming with its record", "psp_status", res.Status, "reason", res.Reason)
			reason := res.Reason
			if res, err = a.pspRecord(ctx, log, t); err != nil {
				return PSPResult{}, err
			}
			if res.Status == psp.StatusRejected && res.Reason == "" {
				res.Reason = reason
			}
		}
	case psp.AnswerAlreadySubmitted:
		log.InfoContext(ctx, "psp already has the transfer; asking its status")
		if res, err = a.pspRecord(ctx, log, t); err != nil {
			return PSPResult{}, err
		}
	case psp.AnswerRequestRefused, psp.AnswerRefundRefused:
		return PSPResult{}, a.requestRefused(ctx, log, err)
	default:
		return PSPResult{}, activities.PSPError(err)
	}
	if res.Status != psp.StatusRejected {
		if _, err := a.Store.MarkTransferSubmitted(ctx, uuid.MustParse(t.ID)); err != nil {
			return PSPResult{}, activities.KindError(err)
		}
	}
	log.InfoContext(ctx, "transfer submitted to the psp", "psp_status", res.Status, "reason", res.Reason)
	return PSPResult{TransferID: t.ID, EndToEndID: t.EndToEndID, Status: string(res.Status), Reason: res.Reason}, nil
}

func pspTransfer(t pix.Transfer) psp.Transfer {
	return psp.Transfer{EndToEndID: t.EndToEndID, AccountID: t.AccountID, AmountCents: t.AmountCents, PixKey: t.PixKey}
}

// pspRecord asks the PSP's status of t, the record that decides a
// rejection or a duplicate. Its errors are activity errors: a record that
// is not t's (another amount, key or account under our end_to_end_id), no
// record, or a refused query need attention (counted, retried, then the
// run fails with the transfer open); no answer is retried. None of them is
// ever a rejection.
func (a *Activities) pspRecord(ctx context.Context, log *slog.Logger, t pix.Transfer) (psp.Result, error) {
	res, err := a.PSP.Status(ctx, t.EndToEndID)
	switch psp.Classify(err) {
	case psp.AnswerResult:
		return res, a.ours(ctx, log, t, res)
	case psp.AnswerRequestRefused, psp.AnswerRefundRefused:
		return psp.Result{}, a.requestRefused(ctx, log, err)
	case psp.AnswerNotFound:
		return psp.Result{}, a.needsAttention(ctx, log, ErrTypeRejectionUnconfirmed, 0,
			fmt.Errorf("the psp has no record of %s although it answered about it; nothing refunded: %w", t.EndToEndID, err))
	default:
		return psp.Result{}, activities.PSPError(err)
	}
}

// ours checks that a PSP answer is about t itself (psp.Result.Matches):
// an answer naming another amount, key or account under our end_to_end_id
// is another transfer's, never adopted (neither settled nor refunded on
// it), and needs attention.
func (a *Activities) ours(ctx context.Context, log *slog.Logger, t pix.Transfer, res psp.Result) error {
	if res.Matches(pspTransfer(t)) {
		return nil
	}
	return a.needsAttention(ctx, log, ErrTypePSPTransferMismatch, 0,
		fmt.Errorf("the psp's answer under %s is another transfer (amount %d, key %q, account %q); neither settled nor refunded",
			t.EndToEndID, res.AmountCents, res.PixKey, res.AccountID))
}

// requestRefused reports a refused request (credentials, a malformed
// request): never a rejection; see needsAttention.
func (a *Activities) requestRefused(ctx context.Context, log *slog.Logger, err error) error {
	return activities.PSPRequestRefused(ctx, a.Metrics, log, err, transferStaysOpen)
}

// needsAttention: see PSPNeedsAttention. The transfer stays open, nothing
// settled, nothing refunded.
func (a *Activities) needsAttention(ctx context.Context, log *slog.Logger, kind string, statusCode int, err error) error {
	return activities.PSPNeedsAttention(ctx, a.Metrics, log, kind, statusCode, err, transferStaysOpen)
}

// transferStaysOpen is what an answer that needs attention leaves of a
// transfer.
const transferStaysOpen = "the transfer stays open, never refunded on this answer"

// AwaitSettlement asks the PSP where a submitted transfer stands: settled or
// rejected (the PSP's own record of our transfer: definitive), or a
// retryable SettlementPending error while it is pending. A refused query
// or a record that is not ours needs attention (see needsAttention); no
// answer is retried; no such transfer fails the run (PSPTransferUnknown) so
// that a new run submits it again. None of these ever refunds.
func (a *Activities) AwaitSettlement(ctx context.Context, in PSPResult) (PSPResult, error) {
	t, log, err := a.transferOf(ctx, in)
	if err != nil {
		return PSPResult{}, err
	}
	res, err := a.PSP.Status(ctx, in.EndToEndID)
	switch psp.Classify(err) {
	case psp.AnswerResult:
		if err := a.ours(ctx, log, t, res); err != nil {
			return PSPResult{}, err
		}
	case psp.AnswerNotFound:
		return PSPResult{}, temporal.NewNonRetryableApplicationError("the psp knows no transfer "+in.EndToEndID, ErrTypePSPTransferUnknown, err)
	case psp.AnswerRequestRefused, psp.AnswerRefundRefused:
		return PSPResult{}, a.requestRefused(ctx, log, err)
	default:
		return PSPResult{}, activities.PSPError(err)
	}
	if res.Status == psp.StatusPending {
		return PSPResult{}, temporal.NewApplicationError("not settled yet", ErrTypeSettlementPending)
	}
	return PSPResult{TransferID: t.ID, EndToEndID: in.EndToEndID, Status: string(res.Status), Reason: res.Reason}, nil
}

// transferOf loads the transfer a PSPResult is about: by its id, or, in a
// result recorded before it carried the id, by its end_to_end_id.
func (a *Activities) transferOf(ctx context.Context, in PSPResult) (pix.Transfer, *slog.Logger, error) {
	if in.TransferID != "" {
		return a.loadTransfer(ctx, in.TransferID)
	}
	t, err := a.Store.GetTransferByEndToEndID(ctx, in.EndToEndID)
	if err != nil {
		return pix.Transfer{}, nil, activities.KindError(err)
	}
	return a.loadTransfer(ctx, t.ID)
}

// SettleTransfer marks the transfer settled: final.
func (a *Activities) SettleTransfer(ctx context.Context, in Ref) error {
	t, log, err := a.loadTransfer(ctx, in.TransferID)
	if err != nil {
		return err
	}
	if _, err := a.Store.SettleTransfer(ctx, uuid.MustParse(t.ID)); err != nil {
		return activities.KindError(err)
	}
	a.Finished.Count(pix.TransferSettled)
	log.InfoContext(ctx, "transfer settled")
	return nil
}

// RefundInput compensates a rejected transfer.
type RefundInput struct {
	TransferID string
	Reason     string
}

// RefundTransfer credits the amount back and marks the transfer refunded, in
// one transaction, exactly once, and only if the PSP's own record of the
// transfer says rejected (I8): the compensation checks for itself, whatever
// decided it (a run recorded by an older version of the saga included). A
// record that says pending or settled fails the run (RefundUnconfirmed):
// nothing is refunded, the transfer stays open, and the next run resubmits
// and follows the PSP.
func (a *Activities) RefundTransfer(ctx context.Context, in RefundInput) error {
	t, log, err := a.loadTransfer(ctx, in.TransferID)
	if err != nil {
		return err
	}
	if t.Status == pix.TransferRefunded {
		return nil // a retry whose first try committed
	}
	res, err := a.pspRecord(ctx, log, t)
	if err != nil {
		return err
	}
	if res.Status != psp.StatusRejected {
		a.Metrics.PSPNeedsAttention(ErrTypeRefundUnconfirmed, 0)
		log.ErrorContext(ctx, "refund not confirmed: the psp does not hold the transfer as rejected; nothing refunded", "psp_status", res.Status)
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("not refunded: the psp holds the transfer as %s", res.Status), ErrTypeRefundUnconfirmed, nil)
	}
	if in.Reason == "" {
		in.Reason = res.Reason
	}
	if _, err := a.Store.RefundTransfer(ctx, uuid.MustParse(t.ID), in.Reason); err != nil {
		return activities.KindError(err)
	}
	a.Finished.Count(pix.TransferRefunded)
	log.InfoContext(ctx, "transfer refunded", "account_id", t.AccountID, "amount_cents", t.AmountCents, "reason", in.Reason)
	return nil
}
