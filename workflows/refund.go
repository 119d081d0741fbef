package workflows

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/internal/durable"
	"github.com/pixbank/pix/internal/payload"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
)

// Refunds is the family of the refund saga (devolução), on its own queue
// (pix-refund by default).
const Refunds Family = "refund"

// RefundWorkflowName is the registered name of RefundPix.
const RefundWorkflowName = "PixRefund"

// RefundNoticeSignal carries a PSP's notice (its webhook's devolucoes) of
// a devolução's outcome to the refund's run: a wake-up, confirmed with the
// PSP's record before anything is decided.
const RefundNoticeSignal = "psp-refund-notice"

// ErrTypeRefundFailed is the type of the error a refund run ends with when
// it can't go on (the PSP lost the devolução, it took longer than the
// outcome timeout, or an answer needs attention). The refund stays open
// and debited, so the dispatcher's recheck starts a new run.
const ErrTypeRefundFailed = "PixRefundFailed"

// RefundWorkflowID is the workflow ID of the saga of one refund.
func RefundWorkflowID(refundID string) string { return "pix-refund:" + refundID }

// RefundSettings shape the saga's timeouts and polling. They travel in the
// workflow input so that each run's policy is in its history (its
// durations as the UI should show them: payload.Duration).
type RefundSettings struct {
	// PSPCalls pace the calls to the PSP (unlimited attempts: the account
	// is debited, the devolução must be made or reversed).
	PSPCalls
	// PollInitial and PollMax pace the checks of the PSP's record while no
	// notice arrives (doubling); OutcomeTimeout bounds the run's wait,
	// after which it fails visibly and the dispatcher's recheck starts
	// another.
	PollInitial    payload.Duration
	PollMax        payload.Duration
	OutcomeTimeout payload.Duration
	// RefusalQuietPeriod is how long the saga waits after the PSP refused
	// the devolução itself before it looks again and, still finding no
	// record, reverses the debit.
	RefusalQuietPeriod payload.Duration
}

// DefaultRefundSettings are the defaults.
func DefaultRefundSettings() RefundSettings {
	return RefundSettings{
		PSPCalls:           DefaultPSPCalls(),
		PollInitial:        payload.Duration(time.Second),
		PollMax:            payload.Duration(10 * time.Minute),
		OutcomeTimeout:     payload.Duration(24 * time.Hour),
		RefusalQuietPeriod: payload.Duration(time.Minute),
	}
}

// RefundInput starts the saga of one refund.
type RefundInput struct {
	RefundID string
	Settings RefundSettings
}

// RefundOutput is how the saga ended: pix.RefundReturned or
// pix.RefundReversed (with the PSP's motivo).
type RefundOutput struct {
	Status string
	Reason string
}

// RefundNotice is the signal's payload: the outcome the PSP's webhook
// announced (DEVOLVIDO or NAO_REALIZADO).
type RefundNotice struct {
	Status string
}

var refunds *activities.Refunds // names the activities; never called here

// RefundPix is the saga of a refund (devolução), after the debit committed
// with the refund: ask the PSP for the devolução under the refund's id,
// wait for its outcome (a notice signalled from the inbox, or the polling
// of the PSP's record), and end it: returned (DEVOLVIDO) is final as it
// is; not made (NAO_REALIZADO) reverses the debit exactly once, only on
// the PSP's own record. Unknown stays open: the run fails visibly and the
// refund stays debited for the next run.
func RefundPix(ctx workflow.Context, in RefundInput) (RefundOutput, error) {
	s := in.Settings
	ref := activities.RefundRef{RefundID: in.RefundID}
	log := workflow.GetLogger(ctx)
	pspPolicy := s.RetryPolicy(activities.ErrTypePSPRefundUnknown, activities.ErrTypeReversalUnconfirmed)
	pspCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Duration(s.PSPCallTimeout), RetryPolicy: pspPolicy})
	dbCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second, RetryPolicy: databasePolicy})
	version := ListingVersion(ctx)

	var st activities.RefundState
	if err := workflow.ExecuteActivity(pspCtx, refunds.RequestRefund, ref).Get(ctx, &st); err != nil {
		return RefundOutput{}, refundFailed("request the devolução", err)
	}
	if st.AlreadyFinal {
		UpsertStatus(ctx, version, st.Status)
		return RefundOutput{Status: st.Status}, nil
	}
	notices := workflow.GetSignalChannel(ctx, RefundNoticeSignal)
	if st.Status == activities.RefundRefusedByPSP {
		// Nothing was made at the PSP. Look again after a quiet period: a
		// record that shows up late, or a notice of one meanwhile, is
		// followed, never reversed on.
		log.Warn("psp refused the devolução; reversing the debit if it still holds no record", "refund_id", in.RefundID, "reason", st.Reason)
		quiet := time.Duration(s.RefusalQuietPeriod)
		if quiet <= 0 { // an input from before the setting existed
			quiet = time.Duration(DefaultRefundSettings().RefusalQuietPeriod)
		}
		if awaitNotice(ctx, notices, quiet) == nil {
			refused := activities.RefundRef{RefundID: in.RefundID, PSPRefused: true, Reason: st.Reason}
			if err := workflow.ExecuteActivity(pspCtx, refunds.ReverseRefund, refused).Get(ctx, nil); err != nil {
				return RefundOutput{}, refundFailed("reverse", err)
			}
			UpsertStatus(ctx, version, pix.RefundReversed)
			return RefundOutput{Status: pix.RefundReversed, Reason: st.Reason}, nil
		}
		// The PSP notified an outcome after refusing: it holds a record
		// after all. Wait for it like any devolução in process.
		log.Warn("psp notified the devolução after refusing it; following its record", "refund_id", in.RefundID)
		st = activities.RefundState{RefundID: in.RefundID, Status: string(psp.RefundInProcessing)}
	}
	if st.Status != string(psp.RefundNotDone) {
		UpsertStatus(ctx, version, pix.RefundRequested)
	}

	// Wait for the outcome: each notice, and each poll time, asks the
	// PSP's record once (its transient failures retried within the check).
	deadline := workflow.Now(ctx).Add(time.Duration(s.OutcomeTimeout))
	delay := time.Duration(s.PollInitial)
	checkPolicy := *pspPolicy
	checkPolicy.MaximumAttempts = checkAttempts
	checkCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Duration(s.PSPCallTimeout), RetryPolicy: &checkPolicy})
	for !psp.RefundStatus(st.Status).Final() && !st.AlreadyFinal {
		wait := min(delay, deadline.Sub(workflow.Now(ctx)))
		if wait <= 0 {
			return RefundOutput{}, refundFailed("await the outcome", fmt.Errorf("no outcome within %s", s.OutcomeTimeout))
		}
		if n := awaitNotice(ctx, notices, wait); n != nil {
			log.Info("psp notice of the devolução's outcome; checking its record", "refund_id", in.RefundID, "notice", n.Status)
		} else {
			delay = min(2*delay, time.Duration(s.PollMax))
		}
		var checked activities.RefundState
		err := workflow.ExecuteActivity(checkCtx, refunds.CheckRefund, ref).Get(ctx, &checked)
		var appErr *temporal.ApplicationError
		switch {
		case err == nil:
			st = checked
		case errors.As(err, &appErr) && endsRefundRun(appErr.Type()):
			return RefundOutput{}, refundFailed("check the outcome", err)
		default:
			// No answer, a refused query or a record that is not ours
			// (counted and logged by the check): unknown stays open, and
			// the next poll or notice asks again.
			log.Warn("could not check the devolução's outcome; checking again later", "refund_id", in.RefundID, "error", err)
		}
	}
	if st.AlreadyFinal {
		UpsertStatus(ctx, version, st.Status)
		return RefundOutput{Status: st.Status}, nil
	}

	if st.Status == string(psp.RefundNotDone) {
		log.Warn("psp did not make the devolução; reversing the debit", "refund_id", in.RefundID, "reason", st.Reason)
		if err := workflow.ExecuteActivity(pspCtx, refunds.ReverseRefund, ref).Get(ctx, nil); err != nil {
			return RefundOutput{}, refundFailed("reverse", err)
		}
		UpsertStatus(ctx, version, pix.RefundReversed)
		return RefundOutput{Status: pix.RefundReversed, Reason: st.Reason}, nil
	}
	if err := workflow.ExecuteActivity(dbCtx, refunds.MarkRefundReturned, st).Get(ctx, nil); err != nil {
		return RefundOutput{}, refundFailed("mark returned", err)
	}
	UpsertStatus(ctx, version, pix.RefundReturned)
	return RefundOutput{Status: pix.RefundReturned}, nil
}

// awaitNotice waits up to wait for a PSP notice on notices and returns the
// latest one that arrived (one check answers every notice so far), nil
// when the wait ended without any.
func awaitNotice(ctx workflow.Context, notices workflow.ReceiveChannel, wait time.Duration) *RefundNotice {
	timerCtx, cancelTimer := workflow.WithCancel(ctx)
	defer cancelTimer()
	var got *RefundNotice
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(notices, func(c workflow.ReceiveChannel, _ bool) {
		var n RefundNotice
		c.Receive(ctx, &n)
		for c.ReceiveAsync(&n) {
		}
		got = &n
	})
	sel.AddFuture(workflow.NewTimer(timerCtx, wait), func(workflow.Future) {})
	sel.Select(ctx)
	return got
}

// checkAttempts bounds one check of the PSP's record: the polling is the
// retry beyond it.
const checkAttempts = 3

// endsRefundRun reports whether a check's error of type t ends the run: a
// final business kind, or a PSP that knows no devolução it had accepted
// (the next run asks for it again). Nothing else does: unknown stays open.
func endsRefundRun(t string) bool {
	return t == activities.ErrTypePSPRefundUnknown || slices.Contains(pix.NonRetryableTypes(), t)
}

// refundFailed ends the run failed, naming the step and the activity's
// failure, so that the Temporal UI says why.
func refundFailed(step string, err error) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf("pix refund stopped at %s: %s", step, FailureReason(err)), ErrTypeRefundFailed, err)
}

// StartRefund starts the saga of one refund; an open run is not an error
// (started=false). With a notice, an open run is signalled it, and a run
// that closed before the signal is followed by a new one at once.
func StartRefund(ctx context.Context, c client.Client, taskQueue string, in RefundInput, listing Listing, notice *RefundNotice) (started bool, err error) {
	w := listing.Workflow(RefundWorkflowID(in.RefundID), taskQueue, RefundWorkflowName)
	started, err = durable.StartOnce(ctx, c, w, in)
	if err != nil || started || notice == nil {
		return started, err
	}
	err = c.SignalWorkflow(ctx, w.ID, "", RefundNoticeSignal, *notice)
	var gone *serviceerror.NotFound
	if errors.As(err, &gone) {
		// Closed meanwhile (it gave up, or the refund ended): the next run
		// starts now rather than at the recheck, which may be minutes away
		// for a run that was open long. It asks the PSP under the same id
		// again and checks its record (a final refund ends it at once). An
		// open run found instead began after the notice, and checks too.
		return durable.StartOnce(ctx, c, w, in)
	}
	if err != nil {
		return false, fmt.Errorf("signal %s: %w", w.ID, err)
	}
	return false, nil
}

// RefundSource is the durable start of refunds: the open refunds' sagas,
// and the PSP's notices of their outcome, signalled to their open runs.
func RefundSource(q durable.Queue, taskQueue string, s RefundSettings) durable.Source {
	return durable.Source{
		Kind:  "refunds",
		Queue: q,
		Start: func(ctx context.Context, c client.Client, due durable.Due) (bool, error) {
			var notice *RefundNotice
			if status, ok := due.Memo["psp_notice"].(string); ok {
				notice = &RefundNotice{Status: status}
			}
			return StartRefund(ctx, c, taskQueue, RefundInput{RefundID: due.Key, Settings: s}, listingOf(due), notice)
		},
		LogAttrs: func(due durable.Due) []any {
			return []any{"refund_id", due.Key, "end_to_end_id", due.EndToEndID, "workflow_id", RefundWorkflowID(due.Key)}
		},
	}
}
