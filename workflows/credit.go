package workflows

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/internal/durable"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/runconf"
)

// CreditWorkflowName is the registered name of CreditPix.
const CreditWorkflowName = "PixCredit"

// ErrTypeCreditFailed is the type of the error a failed credit run ends with.
const ErrTypeCreditFailed = "PixCreditFailed"

// CreditWorkflowID is the workflow ID of the credit of one PIX.
func CreditWorkflowID(endToEndID string) string { return "pix-credit:" + endToEndID }

// CreditLogAttrs are the attributes every log line about an incoming PIX
// carries: its end_to_end_id, its workflow's ID, and its credit attempt
// (the attempts made so far, where a line is not about one attempt).
func CreditLogAttrs(endToEndID string, attempt int) []any {
	return []any{"end_to_end_id", endToEndID, "workflow_id", CreditWorkflowID(endToEndID), "attempt", attempt}
}

// NonRetryableCreditErrors are the activity error types that can never
// succeed by retrying: the run fails at once. They are the final business
// kinds (pix.NonRetryableTypes). AccountNotFound is deliberately absent
// (its kind is Retryable): an account may be in the middle of being opened.
var NonRetryableCreditErrors = pix.NonRetryableTypes()

// roundBudget is how long one round of attempts of r can take: every
// attempt to its timeout, and every backoff between them.
func roundBudget(r runconf.RetrySettings) time.Duration {
	total := time.Duration(r.MaxAttempts) * time.Duration(r.ActivityTimeout)
	interval := time.Duration(r.InitialInterval)
	for i := int32(1); i < r.MaxAttempts; i++ {
		total += interval
		// Compared as floats: the product may not fit a Duration.
		if next := float64(interval) * r.BackoffCoefficient; next < float64(r.MaxInterval) {
			interval = time.Duration(next)
		} else {
			interval = time.Duration(r.MaxInterval)
		}
	}
	return total
}

// creditPolicy is the retry policy of the credit activity under r.
func creditPolicy(r runconf.RetrySettings) *temporal.RetryPolicy {
	return &temporal.RetryPolicy{
		InitialInterval:        time.Duration(r.InitialInterval),
		BackoffCoefficient:     r.BackoffCoefficient,
		MaximumInterval:        time.Duration(r.MaxInterval),
		MaximumAttempts:        r.MaxAttempts,
		NonRetryableErrorTypes: NonRetryableCreditErrors,
	}
}

// markFailedPolicy retries the closing write until PostgreSQL takes it: a
// failed PIX must end visibly failed without human action (I4).
var markFailedPolicy = &temporal.RetryPolicy{
	InitialInterval:        time.Second,
	BackoffCoefficient:     2,
	MaximumInterval:        time.Minute,
	MaximumAttempts:        0, // unlimited
	NonRetryableErrorTypes: pix.NonRetryableTypes(),
}

// CreditInput starts the credit of one PIX.
type CreditInput struct {
	EndToEndID string
	// PriorAttempts is the inbox row's attempt count at dispatch.
	PriorAttempts int
	// Drive is the inbox row's drive at dispatch: the run's writes are
	// fenced by it (0 in histories from before drives were numbered).
	Drive int
	Retry runconf.RetrySettings
	// ListingVersion is the run's shape in the Temporal UI, chosen by the
	// dispatcher that started it (CreditListingVersion) and recorded in the
	// history with the input: the run was started with its search
	// attributes and memo, and upserts only its final status. 0 in runs
	// started before it, which ask workflow.GetVersion (see
	// creditListingVersion).
	ListingVersion workflow.Version
}

// CreditListingVersion is the listing shape of the credits started now:
// the version of the search-attribute upserts (searchAttributesVersion),
// decided by the input rather than by a version marker. A marker is two
// commands and two events in every credit's history (the marker and the
// TemporalChangeVersion upsert the SDK adds to it): two of the three
// commands a credit had beyond a no-op workflow's (docs/benchmarks.md,
// "What a credit costs the engine").
const CreditListingVersion workflow.Version = 2

// CreditInputListingVersion is the listing version a dispatcher puts in a
// credit's input: CreditListingVersion, or 0 (none: the run asks
// workflow.GetVersion) when inInput is false (CREDIT_LISTING_IN_INPUT=false,
// config.Config.CreditListingInInput).
func CreditInputListingVersion(inInput bool) workflow.Version {
	if inInput {
		return CreditListingVersion
	}
	return 0
}

// creditListingVersion is the run's listing version. Runs whose input
// names one follow it: no version marker. Runs started before inputs named
// it ask GetVersion as they always did: their histories have the marker of
// version 1 or, older still, none (DefaultVersion: no upserts). A version
// newer than this worker knows fails the workflow task, as GetVersion does,
// until a worker that knows it takes the run.
func creditListingVersion(ctx workflow.Context, in CreditInput) workflow.Version {
	switch {
	case in.ListingVersion == 0:
		return ListingVersion(ctx)
	case in.ListingVersion > CreditListingVersion:
		panic(fmt.Sprintf("credit input has listing version %d; this worker knows up to %d", in.ListingVersion, CreditListingVersion))
	default:
		return in.ListingVersion
	}
}

// CreditOutput is the result of a successful run.
type CreditOutput struct {
	// Credited is false when the PIX had been credited before this run.
	Credited     bool
	AccountID    string
	AmountCents  int64
	BalanceAfter int64
}

// a is only used to name activities; the worker registers the real one.
var a *activities.Activities

// roundsPerRun bounds the history of a run that waits out a long outage:
// after that many rounds of attempts it continues as a new run.
const roundsPerRun = 50

// CreditPix credits one incoming PIX. The credit runs as a local activity
// (one database transaction; no activity task round trip through the
// server), retried by the round's policy: INBOX_ATTEMPTS_MAX attempts with
// exponential backoff.
//
// When a round gives up, the cause decides. A business failure (a
// non-retryable error, or the account still missing after every attempt)
// marks the inbox row failed with the reason and fails the run, so it shows
// as failed in the Temporal UI. A technical failure (the database
// unreachable, an attempt timed out) says nothing about the PIX: the row
// stays pending, with its attempts and last error, and another round starts
// after the maximum interval, until the infrastructure is back.
//
// A credit that succeeds is one workflow task, as cheap for the Temporal
// server as a no-op workflow of one local activity but for one command: the
// local activity's marker, then the upsert that moves PixStatus to done
// (the UI's search by status needs it; the search attributes and memo of
// the start are the dispatcher's), then the completion.
func CreditPix(ctx workflow.Context, in CreditInput) (CreditOutput, error) {
	creditCtx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		// Without it, a local activity's attempts share one StartToClose.
		ScheduleToCloseTimeout: 2 * roundBudget(in.Retry),
		StartToCloseTimeout:    time.Duration(in.Retry.ActivityTimeout),
		RetryPolicy:            creditPolicy(in.Retry),
	})
	version := creditListingVersion(ctx, in)
	for round := 1; ; round++ {
		var res activities.CreditResult
		err := workflow.ExecuteLocalActivity(creditCtx, a.CreditAccount, activities.CreditInput{
			EndToEndID:    in.EndToEndID,
			PriorAttempts: in.PriorAttempts,
			Drive:         in.Drive,
		}).Get(ctx, &res)
		if err == nil {
			UpsertStatus(ctx, version, pix.StatusDone, AttrAccountID.ValueSet(res.AccountID))
			return CreditOutput{Credited: res.Credited, AccountID: res.AccountID, AmountCents: res.AmountCents, BalanceAfter: res.BalanceAfter}, nil
		}
		if isSuperseded(err) {
			return CreditOutput{}, superseded(ctx, in, err)
		}
		if !isTechnical(err) {
			return failCredit(ctx, version, in, err)
		}
		in.PriorAttempts += int(in.Retry.MaxAttempts)
		workflow.GetLogger(ctx).Warn("technical failure; the PIX stays pending and is retried",
			"end_to_end_id", in.EndToEndID, "round", round, "attempts", in.PriorAttempts, "error", FailureReason(err))
		if round >= roundsPerRun {
			return CreditOutput{}, workflow.NewContinueAsNewError(ctx, CreditWorkflowName, in)
		}
		if err := workflow.Sleep(ctx, time.Duration(in.Retry.MaxInterval)); err != nil {
			return CreditOutput{}, err
		}
	}
}

// failCredit marks the row failed with the reason of err and fails the run,
// unless the row turns out to be done already.
func failCredit(ctx workflow.Context, version workflow.Version, in CreditInput, err error) (CreditOutput, error) {
	reason := FailureReason(err)
	// A permanent error stopped at the attempt that recorded itself; any
	// other error means the policy ran every attempt, including any that
	// died with their worker before recording.
	attempts := in.PriorAttempts + int(in.Retry.MaxAttempts)
	if isPermanent(err) {
		attempts = 0
	}
	markCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         markFailedPolicy,
	})
	var marked activities.MarkFailedResult
	if err := workflow.ExecuteActivity(markCtx, a.MarkCreditFailed, activities.MarkFailedInput{
		EndToEndID: in.EndToEndID,
		Drive:      in.Drive,
		Attempts:   attempts,
		Reason:     reason,
	}).Get(ctx, &marked); err != nil {
		return CreditOutput{}, fmt.Errorf("mark pix credit failed: %w", err)
	}
	if marked.Status == pix.StatusSuperseded {
		return CreditOutput{}, superseded(ctx, in, err)
	}
	UpsertStatus(ctx, version, marked.Status)
	if marked.Status == pix.StatusDone {
		// An attempt committed but its success never reached us.
		workflow.GetLogger(ctx).Info("credit had committed before the failure was recorded", "end_to_end_id", in.EndToEndID)
		return CreditOutput{}, nil
	}
	return CreditOutput{}, temporal.NewNonRetryableApplicationError("pix credit failed: "+reason, ErrTypeCreditFailed, err)
}

// superseded ends a run whose drive is no longer the row's: the row was
// re-driven after this run failed it (the failure's answer was lost and
// the activity ran again), and a newer run owns it. The run fails, naming
// that, and touches nothing: its listing keeps the status it had.
func superseded(ctx workflow.Context, in CreditInput, cause error) error {
	workflow.GetLogger(ctx).Warn("the PIX was re-driven since this run's drive; stopping", "end_to_end_id", in.EndToEndID, "drive", in.Drive)
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf("pix credit superseded: drive %d was re-driven", in.Drive),
		activities.ErrTypeSuperseded, cause)
}

// isSuperseded reports whether an activity found the run's drive superseded.
func isSuperseded(err error) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && appErr.Type() == activities.ErrTypeSuperseded
}

// isTechnical reports whether a round failed for a reason outside the PIX:
// the database (TechnicalFailure) or an attempt's timeout.
func isTechnical(err error) bool {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Type() == activities.ErrTypeTechnicalFailure
	}
	var timeoutErr *temporal.TimeoutError
	return errors.As(err, &timeoutErr)
}

// isPermanent reports whether an activity failure was not retried.
func isPermanent(err error) bool {
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) {
		return false
	}
	return appErr.NonRetryable() || slices.Contains(NonRetryableCreditErrors, appErr.Type())
}

// FailureReason renders an activity failure for inbox_messages.last_error:
// "<type>: <message>" for application errors, the timeout for timeouts.
func FailureReason(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Type() + ": " + appErr.Message()
	}
	var timeoutErr *temporal.TimeoutError
	if errors.As(err, &timeoutErr) {
		return "Timeout: attempt exceeded its " + timeoutErr.TimeoutType().String() + " timeout"
	}
	return err.Error()
}

// StartCredit starts the credit workflow of one PIX. Starting is idempotent:
// when a run is already open under the workflow ID it starts nothing and
// returns started=false, which is not an error. A closed run (a failed one
// being re-driven) is followed by a new run.
func StartCredit(ctx context.Context, c client.Client, taskQueue string, in CreditInput, listing Listing) (started bool, err error) {
	return durable.StartOnce(ctx, c, listing.Workflow(CreditWorkflowID(in.EndToEndID), taskQueue, CreditWorkflowName), in)
}

// CreditSource is the durable start of credits: the pending inbox rows'
// credit workflows, with listingVersion in their inputs (CreditListingVersion,
// or 0 while workers of releases that do not read it may take a run:
// CREDIT_LISTING_IN_INPUT).
func CreditSource(q durable.Queue, taskQueue string, retry runconf.RetrySettings, listingVersion workflow.Version) durable.Source {
	return durable.Source{
		Kind:  "inbox",
		Queue: q,
		Start: func(ctx context.Context, c client.Client, due durable.Due) (bool, error) {
			return StartCredit(ctx, c, taskQueue, CreditInput{
				EndToEndID: due.Key, PriorAttempts: due.Attempts, Drive: due.Drive, Retry: retry,
				ListingVersion: listingVersion,
			}, ListingOf(due))
		},
		LogAttrs: func(due durable.Due) []any { return CreditLogAttrs(due.Key, due.Attempts) },
		Redrives: true,
	}
}
