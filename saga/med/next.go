package med

import (
	"time"

	"github.com/pixbank/pix/internal/dict"
)

// Step is what the run does next with a report, as Next reads it.
type Step string

// The steps of the run. Each acts on the report as read (its generation):
// an activity's transition fenced by it, or a wait on the report's timer.
const (
	StepDone          Step = "done"
	StepHold          Step = "hold"
	StepAcknowledge   Step = "acknowledge"
	StepAwaitAnalysis Step = "await_analysis"
	StepCloseReport   Step = "close_report"
	StepCancel        Step = "cancel"
	StepAwaitRequest  Step = "await_request"
	StepExpireRequest Step = "expire_request"
	StepReturn        Step = "return"
	StepSettle        Step = "settle"
	StepCloseRefund   Step = "close_refund"
	StepFinish        Step = "finish"
)

// Next is the step the report r calls for at now. It decides nothing the
// store would not: each transition checks again under the row's lock.
func Next(r Report, now time.Time) Step {
	if !r.Open() {
		return StepDone
	}
	if r.Cancelled() && cancellable(r) {
		return StepCancel
	}
	switch r.Status {
	case StatusReceived:
		return StepHold
	case StatusHeld:
		return StepAcknowledge
	case StatusAcknowledged:
		return StepAwaitAnalysis
	case StatusAnalysed:
		return StepCloseReport
	case StatusAwaitingRequest:
		switch {
		case r.ReturnUntil != nil && r.RefundClosedAt == nil && (closedCopy(r) || rejectedAtTheDICT(r)):
			// Its request's CLOSED copy taken in (the DICT's list, the
			// PSP's notice) before our record of the close: closed, never
			// the 72 hours' expiry nor a wait for it; CloseRefund reads it
			// back (or takes the PSP's notice) and records it, then the
			// report ends as below. So too a request CLOSED REJECTED
			// outside the run (our operator through the PSP's channel),
			// our close neither marked nor recorded: nothing is ever
			// returned on it, nor is another request taken (one more is
			// kept, another_request), so its hold is released at once,
			// not at the 72 hours' expiry.
			return StepCloseRefund
		case r.ReturnUntil != nil && (r.RefundClosedAt != nil || (r.RequestOpen() && !now.Before(*r.ReturnUntil))):
			// Its request taken (or reopened) too late to be returned by
			// return_until (Return changes nothing past it): closed as the
			// deadline closes it (NO_BALANCE), then the report ended, what
			// it holds released (Finish), as a return in parts ends.
			return nextInParts(r, now)
		case r.RequestOpen():
			return StepReturn
		case !now.Before(r.RequestDueAt.Add(-earlyTolerance)):
			return StepExpireRequest
		}
		return StepAwaitRequest
	case StatusReturning:
		return StepSettle
	}
	return nextInParts(r, now)
}

// nextInParts is the step of a report returned in part, or that had
// nothing to return when its request came (awaiting_credit).
func nextInParts(r Report, now time.Time) Step {
	requestCancelled, rejected := RequestCancelled(r), rejectedOutside(r)
	switch {
	case r.RefundClosedAt == nil && !requestCancelled && (r.Returns > 0 || rejected || !now.Before(*r.ReturnUntil) || r.ReturnRefused != nil):
		// The request is answered with the first part's rtrId, or, at the
		// 90 days with nothing returned (or the return refused), rejected;
		// CLOSED REJECTED outside the run, recorded so at once
		// (CloseRefund: no DICT write).
		return StepCloseRefund
	case r.ReturnedCents >= r.Target() || requestCancelled || rejected || r.ReturnRefused != nil ||
		!now.Before(r.ReturnUntil.Add(-earlyTolerance)):
		// Rejected at the DICT, nothing more is returned on the request:
		// ended now, what is held released, not kept (and filled) until
		// return_until (review r19 HIGH-1).
		return StepFinish
	}
	return StepReturn
}

// rejectedAtTheDICT says whether r's own refund request is CLOSED
// REJECTED by the DICT's copy taken in (IntakeRefund: the DICT's list, the
// PSP's notice), whoever closed it: nothing more is returned on it
// (closedRejected). Its report is closed and ended at once only when our
// record does not contradict it (rejectedOutside); after an accepted close
// of ours recorded it is dict_not_as_ours, left to an operator.
func rejectedAtTheDICT(r Report) bool {
	return r.RefundRequestID != nil && deref(r.RefundRequestState) == string(dict.RefundClosed) &&
		deref(r.RefundRequestDICTResult) == string(dict.Rejected)
}

// rejectedOutside says whether r's own refund request is CLOSED REJECTED
// at the DICT (rejectedAtTheDICT) while our record of its close does not
// contradict it: no close recorded, or a REJECTED one (no rtrId). Only then
// is the report ended at once, what it holds released. An accepted close
// of ours recorded (a part returned, its rtrId), then noticed REJECTED, is
// the DICT's word against a devolução made: noted dict_not_as_ours and
// left to an operator, nothing more returned (closedRejected), held until
// return_until as before, whichever of the two came first (review r21
// HIGH-1).
func rejectedOutside(r Report) bool {
	return rejectedAtTheDICT(r) && (r.RefundClosedAt == nil || r.RefundClosedRtrID == nil)
}

// closedByTheDICT says whether r's request, CLOSED REJECTED at the DICT
// with no accepted close of ours recorded (rejectedOutside), was closed by
// another than our close: none of ours marked sent (MarkSent; our operator
// through the PSP's channel before the run's cue, the DICT itself), or the
// DICT holds it with another reason than ours (Closing: never OTHER, the
// reason of a close made outside the run). Its close is recorded from the
// DICT's copy, the DICT's reason kept (RefundRequestDICTReason), and its
// report ends rejected_at_dict, never as if we closed it (review r21 MED-3,
// LOW-6). A copy that says no reason, after our close was marked, is taken
// for ours.
func closedByTheDICT(r Report) bool {
	return rejectedOutside(r) && (r.RefundCloseSentAt == nil ||
		(r.RefundRequestDICTReason != nil && *r.RefundRequestDICTReason != string(Closing(r).RejectionReason)))
}

// closedCopy says whether r's own refund request is CLOSED by the copy
// taken in (IntakeRefund) after our close was marked sent (MarkSent; behind
// a PSP, before the operator's cue) while it is not recorded
// (refund_closed_at, RefundClosed). A request taken CLOSED already, no
// close of ours marked, is not ours to close: it goes as before.
func closedCopy(r Report) bool {
	return r.RefundClosedAt == nil && r.RefundCloseSentAt != nil && r.RefundRequestID != nil &&
		deref(r.RefundRequestState) == string(dict.RefundClosed)
}

// RequestCancelled says whether the payer's participant cancelled its
// refund request.
func RequestCancelled(r Report) bool {
	return deref(r.RefundRequestState) == string(dict.RefundCancelled)
}

// DeadlineClosing says whether c closes a refund request as return_until
// closes it: REJECTED NO_BALANCE, nothing returned within it (CANNOT_REFUND
// and ACCOUNT_CLOSURE answer a refusal recorded within it, by the
// database's clock; an accepted close, something returned). Sent only
// once return_until has passed by the database's clock (Store.MarkSent).
func DeadlineClosing(c dict.RefundClosing) bool {
	return c.Result == dict.Rejected && c.RejectionReason == dict.RejectionNoBalance
}

// Closing is how the saga closes the report's refund request at the DICT:
// TOTALLY_ACCEPTED when all is returned, PARTIALLY_ACCEPTED with the first
// part's rtrId otherwise, REJECTED when nothing could be returned: NO_BALANCE
// within the 90 days, CANNOT_REFUND when the devolução was refused for good
// (its window closed), ACCOUNT_CLOSURE when the account closed.
func Closing(r Report) dict.RefundClosing {
	switch {
	case (r.Returns == 0 || r.FirstRtrID == nil) && deref(r.ReturnRefused) == "account_closed":
		return dict.RefundClosing{Result: dict.Rejected, RejectionReason: dict.RejectionAccountClosure,
			Details: "conta encerrada"}
	case (r.Returns == 0 || r.FirstRtrID == nil) && r.ReturnRefused != nil:
		return dict.RefundClosing{Result: dict.Rejected, RejectionReason: dict.RejectionCannotRefund,
			Details: "prazo de devolução da transação encerrado"}
	case r.Returns == 0 || r.FirstRtrID == nil:
		return dict.RefundClosing{Result: dict.Rejected, RejectionReason: dict.RejectionNoBalance,
			Details: "sem saldo para devolução no prazo"}
	case r.ReturnedCents >= r.Target():
		return dict.RefundClosing{Result: dict.TotallyAccepted, RefundTransactionID: *r.FirstRtrID}
	}
	return dict.RefundClosing{Result: dict.PartiallyAccepted, RefundTransactionID: *r.FirstRtrID,
		Details: "devolução parcial: o restante é devolvido conforme houver saldo"}
}
