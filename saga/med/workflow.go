package med

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/internal/durable"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/sagakit"
	"github.com/pixbank/pix/workflows"
)

// WorkflowName is the saga's workflow type, recorded in every run's
// history: never change it.
const WorkflowName = "PixMED"

// ChangedSignal wakes a run after its report changed outside it (an
// intake, an operator's analysis; sent after the commit), or after an
// inflow of its account filled its hold (FillsWake, after the inflow's
// commit): the run reads the report and goes on as it says. A signal
// without a change changes nothing.
const ChangedSignal = "changed"

// closeKeptChange is the change id of the close of the kept requests at
// the run's end (workflow.GetVersion): the histories recorded before it
// end without it.
const closeKeptChange = "close-kept-requests"

// fillWakeVersion is the change id of the wait for credits that a fill of
// the report's hold ends (waitForCredits): the runs recorded before it (and
// their replays) wait for the report's generation only.
const fillWakeVersion = "pix-med-fill-wake"

// boundedWakeChange is the change id of the waits' bounded wakes: a burst
// of ChangedSignals (fill wake-ups, thousands for an account of many small
// credits) costs one reread, and each reread counts toward maxTurns, the
// run continuing as new when they are spent or when Temporal suggests it
// (its history long): unbounded, the wakes of one wait grew the history to
// Temporal's limit and the run was terminated, money held (issue 37,
// attack review r2 MED-3). The runs recorded before it reread at each
// signal and count turns only.
const boundedWakeChange = "pix-med-bounded-wake"

// stoppedWaitChange is the change id of the stopped step's wait carried
// across continue-as-new (Input.RetryAt): a wake that found the run's
// turns spent ended that wait at once and the next run tried the step
// stopped at the DICT at its start, not ProblemRetryAfter after its stop
// (attack review r4 LOW-1). The runs recorded before it continue as new
// with the report's id only.
const stoppedWaitChange = "pix-med-stopped-wait-carried"

// stopNotedChange is the change id of the decision, after a step stopped
// at the DICT, to wait only on the report at the generation that notes the
// stop (StopNote, waits.afterStop): a report moved since is decided on at
// once. The runs recorded before it wait ProblemRetryAfter on whatever
// generation they read.
const stopNotedChange = "pix-med-stop-noted-gen"

// retryAtReturnUntilChange is the change id of a stopped step's retry
// brought forward to just past its report's return_until (retryAt). The
// wait's timer is made again after every signal for the time then left
// (sagakit.Timer), and none once none is left: a run recorded waiting
// ProblemRetryAfter that took a signal past return_until would replay
// with another command (no timer) and stick. The runs recorded before it
// wait ProblemRetryAfter, as they did (review r24 MED-1).
const retryAtReturnUntilChange = "pix-med-retry-at-return-until"

// WorkflowID is the id of the saga's run of report id.
func WorkflowID(id string) string { return "pix-med:" + id }

// Input starts the saga of one report.
type Input struct {
	ID string
	// RetryAt, RetryGen: the run before continued as new during the wait
	// of a step stopped at the DICT, its turns spent (stoppedWaitChange):
	// this run waits on until RetryAt unless the report moved from
	// generation RetryGen, before it tries the step again. Zero (an input
	// from before them, or no such wait): none, the step is tried at once.
	RetryAt  time.Time `json:",omitzero"`
	RetryGen int64     `json:",omitempty"`
}

// The run's waits besides the report's deadlines.
const (
	// AnalysisReread: while the analysis is awaited the run reads the
	// report at least this often (a signal lost); the 7 days drive a
	// gauge and an alert, never a decision of the run.
	AnalysisReread = 24 * time.Hour
	// CreditPoll: a report returned in part returns what its hold holds at
	// once when a fill wakes it (FillsWake), and at least this often, until
	// the 90 days: the backstop of a wake lost. The hold fills from the
	// account's inflows in their own transactions
	// (db.NewHold.FillFromCredits): nothing is spendable between two tries.
	CreditPoll = time.Hour
	// ProblemRetryAfter: a run stopped at the DICT (StoppedType) tries the
	// step again, reading back first, after this or at a signal.
	ProblemRetryAfter = 6 * time.Hour
	// SettleFirst, SettleEvery: the wait for a devolução, read after
	// SettleFirst then at twice the interval before, at most SettleEvery.
	SettleFirst = 10 * time.Second
	SettleEvery = 30 * time.Minute
	// maxTurns is how many steps one run takes before it continues as new:
	// its history stays bounded over the 90 days.
	maxTurns = 500
)

// activityOptions retry the database and the DICT until they answer (a
// rate limit after the DICT's Retry-After); a report that does not exist,
// or a DICT step refused, ends the attempts.
func activityOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        5 * time.Minute,
			NonRetryableErrorTypes: append(slices.Clone(pix.NonRetryableTypes()), StoppedType, NotYetType),
		},
	}
}

// Workflow is the saga of one infraction report: it reads the report and
// does what it calls for (Next), one step at a time, each an activity
// fenced by the report's generation, or a wait on a durable timer a
// signal wakes (the analysis, the refund request's 72 hours, the credits
// of a return in parts until the 90 days, which a fill of the report's hold
// wakes: FillsWake). It ends when the report ends;
// its result is the report as it ended.
func Workflow(ctx workflow.Context, in Input) (Report, error) {
	ctx = workflow.WithActivityOptions(ctx, activityOptions())
	var a *Activities
	var r Report
	load := func(ctx workflow.Context) error {
		return workflow.ExecuteActivity(ctx, a.LoadReport, in.ID).Get(ctx, &r)
	}
	act := func(fn any) error { return workflow.ExecuteActivity(ctx, fn, r).Get(ctx, &r) }
	turn := 0
	// bounded: the waits drain a burst of signals into one reread and count
	// each reread as a turn (boundedWakeChange); woken is the timers' budget.
	bounded := workflow.GetVersion(ctx, boundedWakeChange, workflow.DefaultVersion, 1) == 1
	var woken func() bool
	if bounded {
		woken = func() bool {
			turn++
			return !continueAsNew(ctx, turn)
		}
	}
	w := newWaits(ctx, in, &r, load, bounded, woken)
	wait := w.wait
	if err := load(ctx); err != nil {
		return r, err
	}
	if err := w.resume(in); err != nil {
		return r, err
	}
	settleWait := SettleFirst
	for ; ; turn++ {
		if turn >= maxTurns || (bounded && continueAsNew(ctx, turn)) {
			return r, workflow.NewContinueAsNewError(ctx, WorkflowName, w.next)
		}
		now := workflow.Now(ctx)
		step := nextStep(ctx, r, now)
		if step != StepSettle {
			settleWait = SettleFirst
		}
		var err error
		switch step {
		case StepDone:
			// Ended DISAGREED or cancelled: the refund requests it kept
			// unanswered are closed REJECTED at the DICT (keptclose.go).
			// Versioned: a run that ended before it replays without it.
			if EndsWithKeptRequests(r) && workflow.GetVersion(ctx, closeKeptChange, workflow.DefaultVersion, 1) == 1 {
				if err := workflow.ExecuteActivity(ctx, a.CloseKeptRequests, r).Get(ctx, nil); err != nil {
					return r, err
				}
			}
			return r, nil
		case StepHold:
			err = act(a.HoldReport)
		case StepAcknowledge:
			err = act(a.AcknowledgeReport)
		case StepAwaitAnalysis:
			err = wait(now.Add(AnalysisReread))
		case StepCloseReport:
			err = act(a.CloseReport)
		case StepCancel:
			err = act(a.CancelReport)
		case StepAwaitRequest:
			err = wait(r.RequestDueAt.Add(time.Second))
		case StepExpireRequest:
			err = act(a.ExpireRequest)
		case StepReturn:
			err = w.returnOrWait(minTime(now.Add(CreditPoll), r.ReturnUntil.Add(time.Second)))
		case StepSettle:
			if err = workflow.Sleep(ctx, settleWait); err == nil {
				err = act(a.SettleReport)
			}
			settleWait = min(2*settleWait, SettleEvery)
		case StepCloseRefund:
			if err = act(a.CloseRefundRequest); notYet(ctx, err, closeNotYetChange) {
				// A close as the deadline closes it (NO_BALANCE) not yet
				// due by the database's clock: returned on until it is.
				err = w.returnOrWait(notYetUntil(ctx, now, err))
			}
		case StepFinish:
			if err = act(a.FinishReport); notYet(ctx, err, finishNotYetChange) {
				// Not yet by the database's clock (it lags the run's): the
				// return goes on until the time it says is left.
				err = w.returnOrWait(notYetUntil(ctx, now, err))
			}
		default:
			return r, fmt.Errorf("report %s: step %q has no action", in.ID, step)
		}
		if stopped(err) {
			err = w.afterStop(err)
		}
		if err != nil {
			return r, err
		}
	}
}

// returnToDeadlineChange is the change id of the returns in parts tried
// on until return_until by the run's clock (nextStep): Next asks Finish up
// to earlyTolerance before it, and a part that filled in that minute was
// released by the Finish at return_until, not returned. The runs recorded
// before it ask Finish then.
const returnToDeadlineChange = "pix-med-return-to-deadline"

// lateRequestChange is the change id of a request taken (or reopened)
// too late to be returned by return_until (Next: closed as the deadline
// closes it, then the report ended): the runs recorded before it tried its
// Return on (StepReturn), which now changes nothing past return_until.
const lateRequestChange = "pix-med-late-request"

// nextStep is the run's step for r at now (runStep, its changes asked of
// the run's history: workflow.GetVersion).
func nextStep(ctx workflow.Context, r Report, now time.Time) Step {
	return runStep(r, now, func(change string) bool {
		return workflow.GetVersion(ctx, change, workflow.DefaultVersion, 1) == 1
	})
}

// runStep is the run's step for r at now: Next's, but a return in parts
// is tried on (StepReturn, then the wait for credits until return_until
// plus a second) where Next asks Finish only by its early tolerance, the
// 90 days not ended by the run's clock (returnToDeadlineChange). Finish
// still decides by the database's clock: a run whose clock runs ahead of
// it is answered "not yet" (NotYetType), and returns on until the time
// that answer says is left (finishNotYetChange). A request taken too late
// to be returned is closed (lateRequestChange). versioned says whether
// the run takes a change (asked only where the change decides, as the
// run's history recorded it).
func runStep(r Report, now time.Time, versioned func(change string) bool) Step {
	step := Next(r, now)
	if rejectedAtTheDICT(r) {
		// The runs recorded before rejectedCopyChange never saw the DICT's
		// result (json:"-" then): their step is Next's without it.
		before := r
		before.RefundRequestDICTResult = nil
		if old := Next(before, now); old != step && !versioned(rejectedCopyChange) {
			r, step = before, old
		}
	}
	switch {
	case step == StepFinish && r.Status == StatusAwaitingCredit && r.ReturnUntil != nil && now.Before(*r.ReturnUntil) &&
		Next(r, now.Add(-earlyTolerance)) == StepReturn && versioned(returnToDeadlineChange):
		return StepReturn
	case step == StepCloseRefund && r.Status == StatusAwaitingRequest && closedCopy(r):
		if !versioned(closedCopyChange) {
			return awaitOrExpire(r, now)
		}
	case step == StepCloseRefund && r.Status == StatusAwaitingRequest && rejectedAtTheDICT(r):
		// rejectedCopyChange taken: not a late request's close.
	case step == StepCloseRefund && r.Status == StatusAwaitingRequest && !versioned(lateRequestChange):
		return StepReturn
	}
	return step
}

// closedCopyChange is the change id of a report awaiting its request whose
// request's CLOSED copy was taken in before our record of the close
// (closedCopy): Next closes it (CloseRefund reads it back and records it),
// where the runs recorded before it took it for no request (the 72 hours'
// expiry, or the wait for it: awaitOrExpire).
const closedCopyChange = "pix-med-closed-copy"

// rejectedCopyChange is the change id of a report whose request is
// CLOSED REJECTED at the DICT outside the run (rejectedAtTheDICT: our
// operator through the PSP's channel, or the DICT's list's copy): with no
// accepted close of ours recorded (rejectedOutside), Next closes it
// (CloseRefund records the copy's REJECTED, no DICT write) and ends it
// (Finish, before return_until), what it holds released at once (review
// r19 HIGH-1, MED-2); after our accepted close recorded, nothing more is
// returned (closedRejected), dict_not_as_ours left to an operator (review
// r21 HIGH-1). The runs recorded before it never saw the
// DICT's result (RefundRequestDICTResult was json:"-"): they returned on
// (nothing returned) and waited until return_until, or the 72 hours'
// expiry.
const rejectedCopyChange = "pix-med-rejected-copy"

// awaitOrExpire is the step Next gave, before closedCopyChange, a report
// awaiting its request with none open: the 72 hours' expiry once due (by
// earlyTolerance), the wait for it before.
func awaitOrExpire(r Report, now time.Time) Step {
	if !now.Before(r.RequestDueAt.Add(-earlyTolerance)) {
		return StepExpireRequest
	}
	return StepAwaitRequest
}

// finishNotYetChange is the change id of a Finish the database's clock
// answers "not yet" (NotYetType: the run's clock ahead of it), after which
// the run returns on, and waits for credits, until the time left by the
// database's clock, then decides again: the activity retried it with
// backoff, and the Finish that passed released a part that filled
// meanwhile (attack review r12 LOW-1). Asked only at such an answer,
// which the runs recorded before it never had (their retry policy
// retried it): they replay as they ran.
const finishNotYetChange = "pix-med-finish-not-yet"

// closeNotYetChange is the change id of a refund request's close as the
// deadline closes it (REJECTED NO_BALANCE) that the database's clock
// answers "not yet" (Store.MarkSent, NotYetType): the run returns on, and
// waits for credits, until the time left, then decides again, as after
// Finish's (the review of 4409c89, MED-2: a request taken between
// return_until by the database's clock and by the run's, its money held,
// was closed REJECTED and the money released). Asked only at such an
// answer, which the runs recorded before it never had.
const closeNotYetChange = "pix-med-close-not-yet"

// notYet says whether err is a "not yet" by the database's clock
// (NotYetType: Finish's, or the close's) that the run answers by returning
// on (change: finishNotYetChange, closeNotYetChange).
func notYet(ctx workflow.Context, err error, change string) bool {
	var app *temporal.ApplicationError
	return errors.As(err, &app) && app.Type() == NotYetType &&
		workflow.GetVersion(ctx, change, workflow.DefaultVersion, 1) == 1
}

// notYetUntil is how long the run returns on, and waits for credits,
// after a "not yet" (err, NotYetType) answered to the step it decided at
// now: until the time left by the database's clock plus a second, at most
// CreditPoll. A "not yet" that does not say the time left (its details
// missing or unreadable: an activity of another build) waits
// earlyTolerance, never a one-second poll of the database (review r14
// L2). Timers' durations are not checked on replay.
func notYetUntil(ctx workflow.Context, now time.Time, err error) time.Time {
	wait := earlyTolerance
	if left, ok := notYetLeft(err); ok {
		wait = left + time.Second
	}
	return minTime(now.Add(CreditPoll), workflow.Now(ctx).Add(wait))
}

// notYetLeft is the time left until return_until by the database's clock
// that a NotYetType error says (ok false: not said).
func notYetLeft(err error) (time.Duration, bool) {
	var app *temporal.ApplicationError
	var d NotYet
	if !errors.As(err, &app) || !app.HasDetails() || app.Details(&d) != nil {
		return 0, false
	}
	return max(d.Left, 0), true
}

// waits are a run's waits on its report (r, as the run last read it;
// load reads it again): bounded and woken as boundedWakeChange says, and
// the wait of a step stopped at the DICT carried across continue-as-new
// (carry, stoppedWaitChange: next is the next run's input).
type waits struct {
	ctx     workflow.Context
	r       *Report
	load    func(workflow.Context) error
	bounded bool
	woken   func() bool
	carry   bool
	next    Input
}

func newWaits(ctx workflow.Context, in Input, r *Report, load func(workflow.Context) error, bounded bool, woken func() bool) *waits {
	w := &waits{ctx: ctx, r: r, load: load, bounded: bounded, woken: woken, next: in,
		carry: workflow.GetVersion(ctx, stoppedWaitChange, workflow.DefaultVersion, 1) == 1}
	if w.carry {
		w.next = Input{ID: in.ID}
	}
	return w
}

// returnOrWait returns what the report holds (ReturnReport, as the run's
// act would run it); nothing arrived to return, it waits for a fill's
// wake, or the next look (until).
func (w *waits) returnOrWait(until time.Time) error {
	var a *Activities
	before := w.r.Gen
	if err := workflow.ExecuteActivity(w.ctx, a.ReturnReport, *w.r).Get(w.ctx, w.r); err != nil || w.r.Gen != before {
		return err
	}
	return waitForCredits(w.ctx, w.r, w.load, w.wait, w.woken, until)
}

// wait sleeps until deadline, or until a signal finds the report, read
// again, changed (another generation).
func (w *waits) wait(deadline time.Time) error {
	gen := w.r.Gen
	timer := sagakit.Timer{Signals: []string{ChangedSignal}, Reread: w.load, Drain: w.bounded, Woken: w.woken,
		Until: func() (time.Time, bool) { return deadline, w.r.Gen == gen }}
	if err := timer.Sleep(w.ctx); err != nil {
		return err
	}
	return w.load(w.ctx)
}

// stopped is the wait of a step stopped at the DICT until deadline: one
// the run's turns ended early (the report unchanged, the deadline ahead:
// the run continues as new next) goes on in the next run (w.next, when
// carried), never ended by the budget.
func (w *waits) stopped(deadline time.Time) error {
	gen := w.r.Gen
	if err := w.wait(deadline); err != nil {
		return err
	}
	if w.carry && w.r.Gen == gen && workflow.Now(w.ctx).Before(deadline) {
		w.next.RetryAt, w.next.RetryGen = deadline, gen
	}
	return nil
}

// afterStop is the run's wait after a step stopped at the DICT (stop, the
// step's error): the report notes why (a new generation); read again, the
// run waits for a signal of a change or the time to try again. Read at
// another generation than the one that notes the stop (StopNote: it moved
// since, and the signal of that move was before this read, which the wait
// would take for nothing new), it waits for nothing and the run decides
// again at once (stopNotedChange; attack review r6 MED-1).
func (w *waits) afterStop(stop error) error {
	if err := w.load(w.ctx); err != nil {
		return err
	}
	if movedSinceStop(w.ctx, stop, w.r.Gen) {
		return nil
	}
	now := workflow.Now(w.ctx)
	if workflow.GetVersion(w.ctx, retryAtReturnUntilChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return w.stopped(now.Add(ProblemRetryAfter))
	}
	return w.stopped(retryAt(*w.r, now))
}

// retryAt is when a run stopped at the DICT at now tries its step again:
// after ProblemRetryAfter, or just past its report's return_until when
// that comes first (the database's clock may lag the run's), so that the
// step its report takes past it (its Finish, a release) is tried then, not
// up to ProblemRetryAfter later. Its hold stops filling at return_until
// without it: the core's fence in each inflow (db.NewHold.FillUntil; a
// hold made before it is given one by the stopped run's first transaction:
// Store.stopFilling). Behind retryAtReturnUntilChange: the wait's timers
// after a signal are commands the deadline decides.
func retryAt(r Report, now time.Time) time.Time {
	retry := now.Add(ProblemRetryAfter)
	if r.ReturnUntil != nil {
		if at := r.ReturnUntil.Add(earlyTolerance); at.After(now) && at.Before(retry) {
			return at
		}
	}
	return retry
}

// movedSinceStop says whether the report, read at generation gen after its
// step stopped (stop), moved since the stop was noted (StopNote). A stop
// without the note (an activity of a build before it) and a run recorded
// before stopNotedChange wait as before.
func movedSinceStop(ctx workflow.Context, stop error, gen int64) bool {
	var app *temporal.ApplicationError
	var note StopNote
	if !errors.As(stop, &app) || !app.HasDetails() || app.Details(&note) != nil || note.Gen == gen {
		return false
	}
	return workflow.GetVersion(ctx, stopNotedChange, workflow.DefaultVersion, 1) == 1
}

// resume goes on, at the run's start, with the stopped wait the run
// before carried (in), while the report is at the generation it stopped
// at; any change since and the step is tried at once.
func (w *waits) resume(in Input) error {
	if !w.carry || in.RetryAt.IsZero() || w.r.Gen != in.RetryGen {
		return nil
	}
	return w.stopped(in.RetryAt)
}

// waitForCredits is the run's wait (wait) for credits of a return in
// parts, until deadline: a signal that finds the report's hold holding
// other than it did (a fill, FillsWake) ends it too, so that the part is
// returned at once; one that finds the hold as it was and the report at
// its generation (a duplicate, a late one) waits on. *r is the report as
// the run last read it (load reads it again). The runs recorded before
// fillWakeVersion wait for the generation only.
func waitForCredits(ctx workflow.Context, r *Report, load func(workflow.Context) error, wait func(time.Time) error, woken func() bool, deadline time.Time) error {
	if workflow.GetVersion(ctx, fillWakeVersion, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return wait(deadline)
	}
	gen, held := r.Gen, r.HeldCents
	timer := sagakit.Timer{Signals: []string{ChangedSignal}, Reread: load, Drain: woken != nil, Woken: woken,
		Until: func() (time.Time, bool) { return deadline, r.Gen == gen && r.HeldCents == held }}
	if err := timer.Sleep(ctx); err != nil {
		return err
	}
	return load(ctx)
}

// continueAsNew says whether a run bounded (boundedWakeChange) at turn
// (its steps and rereads) continues as new: its turns spent, or Temporal
// suggesting it (the history long or large).
func continueAsNew(ctx workflow.Context, turn int) bool {
	return turn >= maxTurns || workflow.GetInfo(ctx).GetContinueAsNewSuggested()
}

// stopped says whether err is a DICT step the saga stopped at.
func stopped(err error) bool {
	var app *temporal.ApplicationError
	return errors.As(err, &app) && app.Type() == StoppedType
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// Source is the durable start of the saga: a run for each open report,
// started at its intake, and again if lost.
func Source(q durable.Queue, taskQueue string) durable.Source {
	return durable.Source{
		Kind:  "med",
		Queue: q,
		Start: func(ctx context.Context, c client.Client, due durable.Due) (bool, error) {
			return workflows.StartDue(ctx, c, due, WorkflowID(due.Key), taskQueue, WorkflowName, Input{ID: due.Key})
		},
		LogAttrs: func(due durable.Due) []any {
			return []any{"report_id", due.Key, "workflow_id", WorkflowID(due.Key)}
		},
	}
}

// parseID reads a run's report id: one that is no UUID names no report
// (final).
func parseID(id string) (uuid.UUID, error) {
	key, err := uuid.Parse(id)
	if err != nil {
		return uuid.Nil, activities.KindError(fmt.Errorf("%w: %q is no report id", ErrNotFound, id))
	}
	return key, nil
}
