package refund

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
	"github.com/pixbank/pix/internal/runconf"
	"github.com/pixbank/pix/workflows"
)

// WorkflowName is the registered name of Workflow, recorded in every
// run's history: never change it.
const WorkflowName = "PixRefund"

// NoticeSignal carries a PSP's notice (its webhook's devolucoes) of a
// devolução's outcome to the refund's run: a wake-up, confirmed with the
// PSP's record before anything is decided. Recorded: never change it.
const NoticeSignal = "psp-refund-notice"

// ErrTypeFailed is the type of the error a refund run ends with when it
// can't go on (the PSP lost the devolução, it took longer than the
// outcome timeout, or an answer needs attention). The refund stays open
// and debited, so the dispatcher's recheck starts a new run.
const ErrTypeFailed = "PixRefundFailed"

// WorkflowID is the workflow ID of the saga of one refund.
func WorkflowID(refundID string) string { return "pix-refund:" + refundID }

// RunSettings shape the saga's timeouts and polling. They travel in the
// workflow input so that each run's policy is in its history (its
// durations as the UI should show them: payload.Duration).
type RunSettings struct {
	// PSPCalls pace the calls to the PSP (unlimited attempts: the account
	// is debited, the devolução must be made or reversed).
	runconf.PSPCalls
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

// DefaultRunSettings are the runs' settings of an environment that sets
// none.
func DefaultRunSettings() RunSettings {
	return RunSettings{
		PSPCalls:           runconf.DefaultPSPCalls(),
		PollInitial:        payload.Duration(time.Second),
		PollMax:            payload.Duration(10 * time.Minute),
		OutcomeTimeout:     payload.Duration(24 * time.Hour),
		RefusalQuietPeriod: payload.Duration(time.Minute),
	}
}

// Input starts the saga of one refund.
type Input struct {
	RefundID string
	Settings RunSettings
}

// Output is how the saga ended: pix.RefundReturned or
// pix.RefundReversed (with the PSP's motivo).
type Output struct {
	Status string
	Reason string
}

// Notice is the signal's payload: the outcome the PSP's webhook
// announced (DEVOLVIDO or NAO_REALIZADO).
type Notice struct {
	Status string
}

// databasePolicy retries the devolução's own writes until PostgreSQL takes
// them. The final business kinds (pix.NonRetryableTypes) are not retried
// in any step of the saga, nor RefundUnconfirmed, which this policy has
// always listed (a transfer's compensation's type, shared:
// activities.ErrTypeRefundUnconfirmed).
var databasePolicy = &temporal.RetryPolicy{
	InitialInterval:        time.Second,
	BackoffCoefficient:     2,
	MaximumInterval:        time.Minute,
	NonRetryableErrorTypes: append(pix.NonRetryableTypes(), activities.ErrTypeRefundUnconfirmed),
}

// refunds names the activities in the workflow; never called here.
var refunds *Activities

// Workflow is the saga of a refund (devolução), after the debit committed
// with the refund: ask the PSP for the devolução under the refund's id,
// wait for its outcome (a notice signalled from the inbox, or the polling
// of the PSP's record), and end it: returned (DEVOLVIDO) is final as it
// is; not made (NAO_REALIZADO) reverses the debit exactly once, only on
// the PSP's own record. Unknown stays open: the run fails visibly and the
// refund stays debited for the next run.
func Workflow(ctx workflow.Context, in Input) (Output, error) {
	s := in.Settings
	ref := Ref{RefundID: in.RefundID}
	log := workflow.GetLogger(ctx)
	pspPolicy := s.RetryPolicy(ErrTypePSPRefundUnknown, ErrTypeReversalUnconfirmed)
	pspCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Duration(s.PSPCallTimeout), RetryPolicy: pspPolicy})
	dbCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second, RetryPolicy: databasePolicy})
	version := workflows.ListingVersion(ctx)

	var st State
	if err := workflow.ExecuteActivity(pspCtx, refunds.RequestRefund, ref).Get(ctx, &st); err != nil {
		return Output{}, refundFailed("request the devolução", err)
	}
	if st.AlreadyFinal {
		workflows.UpsertStatus(ctx, version, st.Status)
		return Output{Status: st.Status}, nil
	}
	notices := workflow.GetSignalChannel(ctx, NoticeSignal)
	if st.Status == RefusedByPSP {
		// Nothing was made at the PSP. Look again after a quiet period: a
		// record that shows up late, or a notice of one meanwhile, is
		// followed, never reversed on.
		log.Warn("psp refused the devolução; reversing the debit if it still holds no record", "refund_id", in.RefundID, "reason", st.Reason)
		quiet := time.Duration(s.RefusalQuietPeriod)
		if quiet <= 0 { // an input from before the setting existed
			quiet = time.Duration(DefaultRunSettings().RefusalQuietPeriod)
		}
		if awaitNotice(ctx, notices, quiet) == nil {
			refused := Ref{RefundID: in.RefundID, PSPRefused: true, Reason: st.Reason}
			if err := workflow.ExecuteActivity(pspCtx, refunds.ReverseRefund, refused).Get(ctx, nil); err != nil {
				return Output{}, refundFailed("reverse", err)
			}
			workflows.UpsertStatus(ctx, version, pix.RefundReversed)
			return Output{Status: pix.RefundReversed, Reason: st.Reason}, nil
		}
		// The PSP notified an outcome after refusing: it holds a record
		// after all. Wait for it like any devolução in process.
		log.Warn("psp notified the devolução after refusing it; following its record", "refund_id", in.RefundID)
		st = State{RefundID: in.RefundID, Status: string(psp.RefundInProcessing)}
	}
	if st.Status != string(psp.RefundNotDone) {
		workflows.UpsertStatus(ctx, version, pix.RefundRequested)
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
			return Output{}, refundFailed("await the outcome", fmt.Errorf("no outcome within %s", s.OutcomeTimeout))
		}
		if n := awaitNotice(ctx, notices, wait); n != nil {
			log.Info("psp notice of the devolução's outcome; checking its record", "refund_id", in.RefundID, "notice", n.Status)
		} else {
			delay = min(2*delay, time.Duration(s.PollMax))
		}
		var checked State
		err := workflow.ExecuteActivity(checkCtx, refunds.CheckRefund, ref).Get(ctx, &checked)
		var appErr *temporal.ApplicationError
		switch {
		case err == nil:
			st = checked
		case errors.As(err, &appErr) && endsRefundRun(appErr.Type()):
			return Output{}, refundFailed("check the outcome", err)
		default:
			// No answer, a refused query or a record that is not ours
			// (counted and logged by the check): unknown stays open, and
			// the next poll or notice asks again.
			log.Warn("could not check the devolução's outcome; checking again later", "refund_id", in.RefundID, "error", err)
		}
	}
	if st.AlreadyFinal {
		workflows.UpsertStatus(ctx, version, st.Status)
		return Output{Status: st.Status}, nil
	}

	if st.Status == string(psp.RefundNotDone) {
		log.Warn("psp did not make the devolução; reversing the debit", "refund_id", in.RefundID, "reason", st.Reason)
		if err := workflow.ExecuteActivity(pspCtx, refunds.ReverseRefund, ref).Get(ctx, nil); err != nil {
			return Output{}, refundFailed("reverse", err)
		}
		workflows.UpsertStatus(ctx, version, pix.RefundReversed)
		return Output{Status: pix.RefundReversed, Reason: st.Reason}, nil
	}
	if err := workflow.ExecuteActivity(dbCtx, refunds.MarkRefundReturned, st).Get(ctx, nil); err != nil {
		return Output{}, refundFailed("mark returned", err)
	}
	workflows.UpsertStatus(ctx, version, pix.RefundReturned)
	return Output{Status: pix.RefundReturned}, nil
}

// awaitNotice waits up to wait for a PSP notice on notices and returns the
// latest one that arrived (one check answers every notice so far), nil
// when the wait ended without any.
func awaitNotice(ctx workflow.Context, notices workflow.ReceiveChannel, wait time.Duration) *Notice {
	timerCtx, cancelTimer := workflow.WithCancel(ctx)
	defer cancelTimer()
	var got *Notice
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(notices, func(c workflow.ReceiveChannel, _ bool) {
		var n Notice
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
	return t == ErrTypePSPRefundUnknown || slices.Contains(pix.NonRetryableTypes(), t)
}

// refundFailed ends the run failed, naming the step and the activity's
// failure, so that the Temporal UI says why.
func refundFailed(step string, err error) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf("pix refund stopped at %s: %s", step, workflows.FailureReason(err)), ErrTypeFailed, err)
}

// Start starts the saga of one refund, listed as listing says; an open run
// is not an error (started=false). With a notice, an open run is signalled it, and a run
// that closed before the signal is followed by a new one at once.
func Start(ctx context.Context, c client.Client, taskQueue string, in Input, listing workflows.Listing, notice *Notice) (started bool, err error) {
	w := listing.Workflow(WorkflowID(in.RefundID), taskQueue, WorkflowName)
	started, err = durable.StartOnce(ctx, c, w, in)
	if err != nil || started || notice == nil {
		return started, err
	}
	err = c.SignalWorkflow(ctx, w.ID, "", NoticeSignal, *notice)
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

// Source is the durable start of refunds: the open refunds' sagas,
// and the PSP's notices of their outcome, signalled to their open runs.
func Source(q durable.Queue, taskQueue string, s RunSettings) durable.Source {
	return durable.Source{
		Kind:  "refunds",
		Queue: q,
		Start: func(ctx context.Context, c client.Client, due durable.Due) (bool, error) {
			var notice *Notice
			if status, ok := due.Memo["psp_notice"].(string); ok {
				notice = &Notice{Status: status}
			}
			return Start(ctx, c, taskQueue, Input{RefundID: due.Key, Settings: s}, workflows.ListingOf(due), notice)
		},
		LogAttrs: func(due durable.Due) []any {
			return []any{"refund_id", due.Key, "end_to_end_id", due.EndToEndID, "workflow_id", WorkflowID(due.Key)}
		},
	}
}
