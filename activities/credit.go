package activities

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/metrics"
	"github.com/pixbank/pix/internal/pix"
)

// Application error types raised by the credit activities. The types of
// business errors are declared with their kind (pix.Kinds), which also says
// whether they are retried; the variables here name them for the workflows
// and tests.
var (
	// ErrTypeAccountNotFound: retried like a transient error (the account may
	// be in the middle of being opened) until the attempts run out.
	ErrTypeAccountNotFound = pix.TemporalType(pix.ErrAccountNotFound)
	// ErrTypePixKeyNotFound and ErrTypeChargeNotFound: an API Pix
	// notification's chave or txid resolves to no account (yet). Retried
	// like ErrTypeAccountNotFound; a re-drive after the key or charge is
	// registered credits it.
	ErrTypePixKeyNotFound = pix.TemporalType(pix.ErrPixKeyNotFound)
	ErrTypeChargeNotFound = pix.TemporalType(pix.ErrChargeNotFound)
	// ErrTypeAccountClosed: a closed account never takes a credit.
	ErrTypeAccountClosed = pix.TemporalType(pix.ErrAccountClosed)
	// ErrTypeInboxMessageNotFound: no inbox row for the end_to_end_id.
	ErrTypeInboxMessageNotFound = pix.TemporalType(pix.ErrCreditNotFound)
	// ErrTypeInboxMessageNotPending: the row is failed; only a re-drive
	// (which puts it back to pending) may credit it.
	ErrTypeInboxMessageNotPending = pix.TemporalType(pix.ErrNotPending)
	// ErrTypePayloadMismatch: an earlier credit of this end_to_end_id went to
	// another account or amount.
	ErrTypePayloadMismatch = pix.TemporalType(pix.ErrPayloadMismatch)
	// ErrTypeSuperseded: the row was re-driven since this run's drive; a
	// newer run owns it. The run stops without touching the row.
	ErrTypeSuperseded = pix.TemporalType(pix.ErrSuperseded)
	// ErrTypeBalanceOverflow: the credit would overflow the balance.
	ErrTypeBalanceOverflow = pix.TemporalType(pix.ErrBalanceOverflow)
)

// ErrTypeTechnicalFailure: the database was unreachable or refused the
// transaction; nothing about the PIX itself. Retried.
const ErrTypeTechnicalFailure = "TechnicalFailure"

// Activities are the credits' activities, with what they need. (The
// other sagas' are their own: saga/transfer, saga/reconcile, ...)
type Activities struct {
	// Store is the database (*db.Store in production; fakes in the unit
	// tests).
	Store  Store
	Logger *slog.Logger
	// Metrics counts what the activities did; nil counts nothing.
	Metrics *metrics.Worker
}

// Store is what these activities need of the database.
type Store interface {
	CreditStore
}

// CreditStore is what the credit activities need of the database.
type CreditStore interface {
	Credit(ctx context.Context, endToEndID string, drive, attempt int) (db.CreditOutcome, error)
	RecordAttemptFailure(ctx context.Context, endToEndID string, drive, attempt int, reason string) error
	MarkFailed(ctx context.Context, endToEndID string, drive, attempts int, reason string) (db.MarkFailedOutcome, error)
}

// CreditInput names the PIX to credit. PriorAttempts is the row's attempt
// count when its workflow run was started, so that attempt numbers keep
// counting across re-drives. Drive is the row's drive the run was started
// for (0 in runs started before drives were numbered): every write of the
// run is fenced by it.
type CreditInput struct {
	EndToEndID    string
	PriorAttempts int
	Drive         int
}

// CreditResult says what the credit did.
type CreditResult struct {
	AccountID   string
	AmountCents int64
	// Credited is false when an earlier attempt had already credited it.
	Credited     bool
	BalanceAfter int64
	// ChargeOutcome is what the credit did to the charge its PIX named
	// (db.ChargeConcluded, ...), "" when it named none.
	ChargeOutcome string
}

// failureRecordTimeout bounds the write of a failed attempt, which runs on a
// fresh context because the attempt's own may be the thing that expired.
const failureRecordTimeout = 5 * time.Second

// CreditAccount credits the account of a pending inbox row, records the
// pix_credits row and marks the inbox row done in one transaction. A failed
// attempt leaves its number and error on the row before returning the error
// to Temporal, which decides whether and when to retry.
func (a *Activities) CreditAccount(ctx context.Context, in CreditInput) (CreditResult, error) {
	info := activity.GetInfo(ctx)
	attempt := in.PriorAttempts + int(info.Attempt)
	log := a.Logger.With("end_to_end_id", in.EndToEndID, "workflow_id", info.WorkflowExecution.ID, "attempt", attempt)

	out, err := a.Store.Credit(ctx, in.EndToEndID, in.Drive, attempt)
	if err == nil {
		if out.Credited {
			a.Metrics.Credited()
			log.InfoContext(ctx, "pix credited", "account_id", out.AccountID, "amount_cents", out.AmountCents, "balance_after_cents", out.BalanceAfter)
			if out.ChargeOutcome != "" && out.ChargeOutcome != db.ChargeConcluded {
				a.Metrics.ChargeNotConcluded(out.ChargeOutcome)
				log.WarnContext(ctx, "pix credited; the charge it names was not concluded", "charge_outcome", out.ChargeOutcome)
			}
		} else {
			log.InfoContext(ctx, "pix already credited; nothing changed", "account_id", out.AccountID)
		}
		return CreditResult(out), nil
	}

	appErr := toApplicationError(err)
	recordCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), failureRecordTimeout)
	defer cancel()
	if recErr := a.Store.RecordAttemptFailure(recordCtx, in.EndToEndID, in.Drive, attempt, appErr.Error()); recErr != nil {
		// The attempt's error still goes to Temporal; only the row's copy is missing.
		log.ErrorContext(ctx, "could not record failed attempt", "error", recErr)
	}
	log.WarnContext(ctx, "pix credit attempt failed", "error", err)
	return CreditResult{}, appErr
}

// MarkFailedInput closes a PIX's drive as failed.
type MarkFailedInput struct {
	EndToEndID string
	// Drive is the run's drive (0: not fenced); see CreditInput.
	Drive int
	// Attempts, when larger than the row's count, replaces it (attempts that
	// died with their worker never recorded themselves).
	Attempts int
	Reason   string
}

// MarkFailedResult is the row's status after MarkCreditFailed: "failed", or
// "done" if a credit had committed after all, or pix.StatusSuperseded if the
// row was re-driven since the run's drive (a newer run owns it).
type MarkFailedResult struct {
	Status string
}

// MarkCreditFailed moves a pending row of the run's drive to failed with the
// reason, unless a credit committed first or the row was re-driven since.
// Run again after it committed (its answer lost), it answers "failed" and
// writes nothing more.
func (a *Activities) MarkCreditFailed(ctx context.Context, in MarkFailedInput) (MarkFailedResult, error) {
	out, err := a.Store.MarkFailed(ctx, in.EndToEndID, in.Drive, in.Attempts, in.Reason)
	if err != nil {
		return MarkFailedResult{}, toApplicationError(err)
	}
	log := a.Logger.With("end_to_end_id", in.EndToEndID, "workflow_id", activity.GetInfo(ctx).WorkflowExecution.ID, "attempt", out.Attempts)
	switch {
	case out.Marked:
		errType, _, _ := strings.Cut(in.Reason, ":")
		a.Metrics.CreditFailed(errType)
		log.ErrorContext(ctx, "pix credit failed", "reason", in.Reason)
	case out.Status == pix.StatusSuperseded:
		log.WarnContext(ctx, "pix credit was re-driven since this run's drive; a newer run owns it", "drive", in.Drive)
	default:
		log.InfoContext(ctx, "pix credit was not marked failed now", "status", out.Status)
	}
	return MarkFailedResult{Status: out.Status}, nil
}

// toApplicationError turns a store error into a Temporal application error
// with its kind's type (pix.Kinds) for business errors; technical errors
// keep a generic, retryable type. Whether a business error is retried is
// the retry policy's (its NonRetryableErrorTypes come from the kinds).
func toApplicationError(err error) error {
	k := pix.KindOf(err)
	if k == nil || k.TemporalType == "" {
		return TechnicalFailure(err)
	}
	return temporal.NewApplicationError(err.Error(), k.TemporalType)
}

// TechnicalFailure is a failure outside the PIX (the database unreachable
// or refusing the transaction): retryable, of type TechnicalFailure.
func TechnicalFailure(err error) error {
	return temporal.NewApplicationErrorWithCause(fmt.Sprintf("technical failure: %v", err), ErrTypeTechnicalFailure, err)
}
