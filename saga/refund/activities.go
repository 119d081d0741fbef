package refund

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/internal/metrics"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/saga/sagakit"
)

// Application error types of the refund activities (beside every saga's
// PSPUnavailable and PSPRequestRefused: activities.PSPError,
// activities.PSPRequestRefused).
const (
	// ErrTypePSPRefundUnknown: the PSP knows no devolução it had accepted.
	// The run fails (visible); the dispatcher's recheck starts a new run,
	// which asks for it again under the same id (the PSP deduplicates).
	ErrTypePSPRefundUnknown = "PSPRefundUnknown"
	// ErrTypePSPRefundMismatch: the PSP's record under our id is another
	// devolução (another amount, id or PIX): never acted on; retried, then
	// the run fails; a human must look.
	ErrTypePSPRefundMismatch = "PSPRefundMismatch"
	// ErrTypeReversalUnconfirmed: the reversal found the PSP holding the
	// devolução as in process or returned: nothing credited back; the run
	// fails and the next one follows the PSP.
	ErrTypeReversalUnconfirmed = "ReversalUnconfirmed"
)

// ErrTypeRefundNotFound: no refund with that id (pix.Kinds).
var ErrTypeRefundNotFound = pix.TemporalType(pix.ErrRefundNotFound)

// ActivityStore is what the activities need of the database.
type ActivityStore interface {
	GetRefund(ctx context.Context, id string) (pix.Refund, error)
	MarkRefundRequested(ctx context.Context, id, rtrID string) (pix.Refund, error)
	MarkRefundReturned(ctx context.Context, id, rtrID string) (pix.Refund, error)
	ReverseRefund(ctx context.Context, id, reason string, refused bool) (pix.Refund, error)
	MarkRefundAsked(ctx context.Context, id string) (first bool, err error)
	MarkRefundRefused(ctx context.Context, id, reason string) (recorded bool, err error)
	StandingRefusal(ctx context.Context, id string) (reason string, stands bool, err error)
}

// Activities are the devolução's activities, with what they need. Each
// exported method is an activity, registered under its name, recorded in
// every run's history: never rename one, nor export another method.
type Activities struct {
	// Store is the database (*Store in production; fakes in the unit
	// tests).
	Store ActivityStore
	PSP   psp.RefundClient
	// Logger gets one line per decision; Metrics counts the answers that
	// need attention (every saga's), Finished the devoluções returned or
	// reversed. nil counts nothing.
	Logger   *slog.Logger
	Metrics  *metrics.Worker
	Finished *sagakit.Finished
}

// Ref names a refund. To ReverseRefund, PSPRefused says that the
// PSP refused the devolução itself (RefusedByPSP), with Reason.
type Ref struct {
	RefundID   string
	PSPRefused bool   `json:",omitempty"`
	Reason     string `json:",omitempty"`
}

// RefusedByPSP is State.Status when the PSP refused the
// devolução itself (the spec's 400 PixDevolucaoInvalida to the first PUT of
// the refund that ever reached it: psp.AnswerRefundRefused) and holds no
// record of it: nothing was made. The saga reverses the debit after a
// quiet period, once a second look still finds no record. The refusal is
// recorded (MarkRefundRefused): a later run, while it stands, goes
// straight to that second look.
const RefusedByPSP = "RECUSADA"

// State is where the PSP says a devolução stands (Status is a
// psp.RefundStatus), or, with AlreadyFinal, where our record says it ended
// (Status is pix.RefundReturned or pix.RefundReversed).
type State struct {
	RefundID     string
	Status       string
	RtrID        string
	Reason       string
	AlreadyFinal bool
}

// refundStaysOpen is what an answer that needs attention leaves of a refund.
const refundStaysOpen = "the refund stays open, its debit never reversed on this answer"

func (a *Activities) load(ctx context.Context, id string) (pix.Refund, *slog.Logger, error) {
	r, err := a.Store.GetRefund(ctx, id)
	if err != nil {
		return pix.Refund{}, nil, activities.KindError(err)
	}
	info := activity.GetInfo(ctx)
	log := a.Logger.With("refund_id", id, "end_to_end_id", r.EndToEndID, "workflow_id", info.WorkflowExecution.ID, "attempt", info.Attempt)
	return r, log, nil
}

func pspRefund(r pix.Refund) psp.RefundRequest {
	req := psp.RefundRequest{EndToEndID: r.EndToEndID, ID: r.ID, AmountCents: r.AmountCents, Nature: psp.NatureOriginal}
	if r.Reason != nil {
		req.Description = *r.Reason
	}
	return req
}

// RequestRefund asks the PSP for the devolução (PUT, under our id: the PSP
// deduplicates on it, so a retry never returns twice) and records that the
// PSP holds it. Its answer classes follow the transfer's submission
// (psp.Classify):
//   - a result about our devolução: in process, recorded as requested; a
//     final status only once the PSP's record (GET) confirms it;
//   - the PSP refusing the devolução (400 PixDevolucaoInvalida): its record
//     decides, on any attempt, since the same problem answers a retried PUT
//     whose first one made the devolução and lost its answer (the id is
//     already used): our devolução there is followed as accepted; no
//     record is RECUSADA only when this PUT is the first of the refund
//     that ever reached the PSP (see neverAccepted; recorded, see
//     RefusedByPSP), else the refusal needs a human (counted,
//     retried, never reversed);
//   - a refused request (credentials, the token endpoint refusing our
//     client, a malformed request, a 409: our id is another devolução's):
//     PSPRequestRefused, counted, retried, never a reason to reverse;
//   - no answer (the token endpoint down too): PSPUnavailable, retried.
func (a *Activities) RequestRefund(ctx context.Context, in Ref) (State, error) {
	r, log, err := a.load(ctx, in.RefundID)
	if err != nil {
		return State{}, err
	}
	if r.Final() {
		return State{RefundID: r.ID, Status: r.Status, AlreadyFinal: true}, nil
	}
	reason, refused, err := a.Store.StandingRefusal(ctx, r.ID)
	if err != nil {
		return State{}, activities.KindError(err)
	}
	if refused {
		// An earlier run (or attempt) decided RECUSADA and failed before
		// its second look ended: a new PUT would be refused again and,
		// no longer the first ask, never reversed. Straight to the look.
		log.WarnContext(ctx, "the psp refused the devolução before and nothing says it took it since: looking at its record again, not asking again", "reason", reason)
		return State{RefundID: r.ID, Status: RefusedByPSP, Reason: reason}, nil
	}
	// The ask is recorded, committed, just before the PUT is handed to the
	// network with its token: once any PUT may have reached the PSP, a
	// refusal can no longer prove that the PSP never took it. An attempt
	// that sent nothing (the token endpoint refusing us or down) spends
	// nothing.
	var firstAsk, asked bool
	var askErr error
	sendCtx := psp.BeforeSend(ctx, func(ctx context.Context) error {
		if !asked {
			if firstAsk, askErr = a.Store.MarkRefundAsked(ctx, r.ID); askErr != nil {
				return askErr
			}
			asked = true
		}
		return nil
	})
	res, err := a.PSP.RequestRefund(sendCtx, pspRefund(r))
	if askErr != nil {
		return State{}, activities.KindError(askErr)
	}
	refusal := err
	switch psp.Classify(err) {
	case psp.AnswerResult:
		if err := a.ours(ctx, log, r, res); err != nil {
			return State{}, err
		}
		// The PSP holds it: recorded at once (with its rtrId), before any
		// confirmation that may fail and lose it.
		if _, err := a.Store.MarkRefundRequested(ctx, r.ID, res.RtrID); err != nil {
			return State{}, activities.KindError(err)
		}
		if res.Status.Final() {
			log.WarnContext(ctx, "psp answered the devolução with a final status; confirming with its record", "psp_status", res.Status)
			if res, err = a.record(ctx, log, r); err != nil {
				return State{}, err
			}
		}
	case psp.AnswerRefundRefused:
		// The PSP refused the devolução itself, or our id is already used,
		// by our own earlier PUT whose answer was lost too: its record
		// decides, never the refusal alone.
		var found bool
		if res, found, err = a.recordIfAny(ctx, log, r); err != nil {
			return State{}, err
		}
		if !found {
			return a.refusedWithoutRecord(ctx, log, r, refusal, firstAsk)
		}
		log.InfoContext(ctx, "psp refused the PUT but holds our devolução (an earlier PUT made it): its record is followed", "error", refusal)
	case psp.AnswerRequestRefused, psp.AnswerAlreadySubmitted:
		return State{}, activities.PSPRequestRefused(ctx, a.Metrics, log, err, refundStaysOpen)
	default:
		return State{}, activities.PSPError(err)
	}
	if res.Status != psp.RefundNotDone {
		if _, err := a.Store.MarkRefundRequested(ctx, r.ID, res.RtrID); err != nil {
			return State{}, activities.KindError(err)
		}
	}
	log.InfoContext(ctx, "devolução requested at the psp", "psp_status", res.Status, "rtr_id", res.RtrID)
	return state(r.ID, res), nil
}

// refusedWithoutRecord decides a devolução the PSP refused (400
// PixDevolucaoInvalida) and holds no record of: RECUSADA, recorded, only
// when this PUT was the first of the refund that ever reached the PSP and
// nothing says it took the devolução since (neverAccepted,
// MarkRefundRefused); else the refusal proves nothing and the refund stays
// open: counted, retried, never reversed on this answer, for a human to
// look.
func (a *Activities) refusedWithoutRecord(ctx context.Context, log *slog.Logger, r pix.Refund, refusal error, firstAsk bool) (State, error) {
	if !firstAsk || !neverAccepted(r) {
		// A PUT may have reached the PSP before: its record may yet
		// appear. Never reversed on this answer; a human looks.
		return State{}, activities.PSPRequestRefused(ctx, a.Metrics, log, refusal, refundStaysOpen)
	}
	reason := refusalReason(refusal)
	recorded, err := a.Store.MarkRefundRefused(ctx, r.ID, reason)
	if err != nil {
		return State{}, activities.KindError(err)
	}
	if !recorded {
		// Since this PUT, another attempt or run asked again (its
		// PUT may have made the devolução, its answer lost), or
		// something says the PSP took it (an rtr_id, a notice): the
		// refusal proves nothing, as for a PUT that was not the
		// first. Never reversed on this answer; the next attempt
		// asks the PSP's record again; a human looks.
		return State{}, activities.PSPRequestRefused(ctx, a.Metrics, log,
			fmt.Errorf("the refusal no longer stands (another PUT was sent since, or the psp took the devolução): %w", refusal), refundStaysOpen)
	}
	log.WarnContext(ctx, "psp refused the devolução and holds no record of it", "error", refusal)
	return State{RefundID: r.ID, Status: RefusedByPSP, Reason: reason}, nil
}

func state(id string, res psp.RefundResult) State {
	return State{RefundID: id, Status: string(res.Status), RtrID: res.RtrID, Reason: res.Reason}
}

// record asks the PSP's record of r's devolução (GET), the record that
// decides. A record that is not r's, no record, or a refused query need
// attention; no answer is retried. None of them ever reverses.
func (a *Activities) record(ctx context.Context, log *slog.Logger, r pix.Refund) (psp.RefundResult, error) {
	res, found, err := a.recordIfAny(ctx, log, r)
	if err == nil && !found {
		err = temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("the psp knows no devolução %s of %s; the next run asks for it again", r.ID, r.EndToEndID), ErrTypePSPRefundUnknown, nil)
	}
	return res, err
}

// recordIfAny is record, with found=false (and no error) when the PSP
// answers that it has no such devolução.
func (a *Activities) recordIfAny(ctx context.Context, log *slog.Logger, r pix.Refund) (res psp.RefundResult, found bool, err error) {
	res, err = a.PSP.RefundStatus(ctx, r.EndToEndID, r.ID)
	switch psp.Classify(err) {
	case psp.AnswerResult:
		return res, true, a.ours(ctx, log, r, res)
	case psp.AnswerNotFound:
		return psp.RefundResult{}, false, nil
	case psp.AnswerRequestRefused, psp.AnswerAlreadySubmitted, psp.AnswerRefundRefused:
		return psp.RefundResult{}, false, activities.PSPRequestRefused(ctx, a.Metrics, log, err, refundStaysOpen)
	default:
		return psp.RefundResult{}, false, activities.PSPError(err)
	}
}

// neverAccepted reports whether nothing says the PSP ever took r: our row
// is still debited with no rtr_id (no answer of the PSP was ever
// recorded). With the first ask of the refund ever (MarkRefundAsked, run
// just before a PUT is handed to the network: no earlier attempt's or
// run's PUT may have reached the PSP and lost its answer), only then may a
// refusal lead, after a second look, to a reversal; otherwise it needs a
// human.
func neverAccepted(r pix.Refund) bool {
	return r.Status == pix.RefundDebited && r.RtrID == nil
}

// refusalReason is what the PSP said when it refused, bounded: the problem
// type's name (PixDevolucaoInvalida) and its title and detail.
func refusalReason(err error) string {
	var refused *psp.RequestError
	if errors.As(err, &refused) {
		return boundedReason(fmt.Sprintf("the psp refused the devolução (http %d %s): %s", refused.StatusCode,
			strings.TrimPrefix(cmp.Or(refused.Type, refused.Code), psp.ProblemTypePrefix), refused.Message))
	}
	return "the psp refused the devolução"
}

// boundedReason keeps a PSP's text fit to store and show: printable, at
// most pix.MaxRefundReasonLength characters.
func boundedReason(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, s)
	if utf8.RuneCountInString(s) > pix.MaxRefundReasonLength {
		s = string([]rune(s)[:pix.MaxRefundReasonLength])
	}
	return s
}

// ours checks that a PSP answer is about r itself: another amount under
// our id is another devolução's, never acted on.
func (a *Activities) ours(ctx context.Context, log *slog.Logger, r pix.Refund, res psp.RefundResult) error {
	if res.Matches(pspRefund(r)) && res.EndToEndID == r.EndToEndID {
		return nil
	}
	return activities.PSPNeedsAttention(ctx, a.Metrics, log, ErrTypePSPRefundMismatch, 0,
		fmt.Errorf("the psp's devolução %s of %s is another one (amount %d)", res.ID, res.EndToEndID, res.AmountCents), refundStaysOpen)
}

// CheckRefund asks the PSP where a requested devolução stands: in process,
// returned or not made (the PSP's own record: definitive). The saga calls
// it when a notice arrives and at its polling times.
func (a *Activities) CheckRefund(ctx context.Context, in Ref) (State, error) {
	r, log, err := a.load(ctx, in.RefundID)
	if err != nil {
		return State{}, err
	}
	if r.Final() {
		return State{RefundID: r.ID, Status: r.Status, AlreadyFinal: true}, nil
	}
	res, err := a.record(ctx, log, r)
	if err != nil {
		return State{}, err
	}
	return state(r.ID, res), nil
}

// MarkRefundReturned records that the PSP returned the money: final.
func (a *Activities) MarkRefundReturned(ctx context.Context, in State) error {
	_, log, err := a.load(ctx, in.RefundID)
	if err != nil {
		return err
	}
	if _, err := a.Store.MarkRefundReturned(ctx, in.RefundID, in.RtrID); err != nil {
		return activities.KindError(err)
	}
	a.Finished.Count(pix.RefundReturned)
	log.InfoContext(ctx, "refund returned by the psp", "rtr_id", in.RtrID)
	return nil
}

// ReverseRefund credits the refund's amount back and marks it reversed, in
// one transaction, exactly once, and only on the PSP's own word, checked
// here whatever decided it: its record says the devolução was not made
// (NAO_REALIZADO), or, for a devolução the PSP refused itself
// (in.PSPRefused), it still holds no record of it. A record that says in
// process or returned fails the run (ReversalUnconfirmed): nothing is
// credited back, the refund stays open, and the next run follows the PSP.
func (a *Activities) ReverseRefund(ctx context.Context, in Ref) error {
	r, log, err := a.load(ctx, in.RefundID)
	if err != nil {
		return err
	}
	if r.Status == pix.RefundReversed {
		return nil // a retry whose first try committed
	}
	var res psp.RefundResult
	if in.PSPRefused && (r.Status != pix.RefundDebited || r.RtrID != nil) {
		// The PSP took it since (or a record of ours says so): the
		// refusal no longer stands; the next run follows the PSP.
		return temporal.NewNonRetryableApplicationError("not reversed: the psp accepted the devolução after refusing it",
			ErrTypeReversalUnconfirmed, nil)
	}
	if in.PSPRefused {
		var found bool
		if res, found, err = a.recordIfAny(ctx, log, r); err != nil {
			return err
		}
		if !found {
			return a.reverse(ctx, log, r, cmp.Or(boundedReason(in.Reason), "the psp refused the devolução"), true)
		}
	} else if res, err = a.record(ctx, log, r); err != nil {
		return err
	}
	if res.Status != psp.RefundNotDone {
		// The PSP holds it (in process or made): recorded at once, as
		// RequestRefund does, so that the fence the store checks under the
		// lock (no rtr_id) stops a late attempt of a reversal on the
		// refusal that got its 404 before the record appeared.
		if _, err := a.Store.MarkRefundRequested(ctx, r.ID, res.RtrID); err != nil {
			return activities.KindError(err)
		}
		a.Metrics.PSPNeedsAttention(ErrTypeReversalUnconfirmed, 0)
		log.ErrorContext(ctx, "reversal not confirmed: the psp does not hold the devolução as not made; nothing credited back", "psp_status", res.Status)
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("not reversed: the psp holds the devolução as %s", res.Status), ErrTypeReversalUnconfirmed, nil)
	}
	return a.reverse(ctx, log, r, cmp.Or(boundedReason(res.Reason), "the psp did not make the devolução"), false)
}

// reverse credits r back; refused: on the PSP's refusal, which the store
// checks still stands under the refund's lock.
func (a *Activities) reverse(ctx context.Context, log *slog.Logger, r pix.Refund, reason string, refused bool) error {
	if _, err := a.Store.ReverseRefund(ctx, r.ID, reason, refused); err != nil {
		return activities.KindError(err)
	}
	a.Finished.Count(pix.RefundReversed)
	log.InfoContext(ctx, "refund reversed: the psp did not make the devolução", "account_id", r.AccountID, "amount_cents", r.AmountCents, "reason", reason)
	return nil
}
