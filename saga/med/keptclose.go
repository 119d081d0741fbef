package med

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/temporal"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/internal/dict"
)

// A refund request its report had taken (the DICT's notice before our
// close) and that is still OPEN when the report ends without returning it
// (DISAGREED: report_disagreed; cancelled by its reporter:
// report_cancelled) is kept on its own (keepUnanswered) and closed
// REJECTED at the DICT by the report's run as it ends (Workflow,
// StepDone): the payer's participant is answered, not left to the DICT's
// deadlines, and on-call is paged (PixMEDRefundRequestNotTaken) only when
// the close cannot be made. Written as the report's DICT writes are: marked
// before it is sent, read back before it is sent again, a refusal or an
// answer not verified recorded (the request's close_problem), never
// guessed past.

// KeptClosing is how the saga closes a request kept because its report
// ended without returning it: REJECTED, RefundRejectionReason OTHER, the
// details saying why.
//
// The specification's RefundRejectionReason (bacen/pix-dict-api 1.8.0) is
// NO_BALANCE, ACCOUNT_CLOSURE, CANNOT_REFUND or OTHER, described only as a
// whole ("Razão da rejeição da solicitação de devolução"), each value by
// its name. A request whose report we found not to be a fraud (DISAGREED),
// or whose report its reporter withdrew, is rejected on its merits: the
// account has the balance (NO_BALANCE is false: the saga held it until the
// close) and is open (ACCOUNT_CLOSURE is false), and nothing stops a
// devolução (CANNOT_REFUND, which the saga sends when one is impossible:
// the PIX's devolução window closed, Closing). OTHER is the one value that
// asserts nothing false; RefundAnalysisDetails says the reason.
func KeptClosing(q KeptRequest) dict.RefundClosing {
	details := "relato de infração analisado como não procedente (DISAGREED): nada a devolver"
	if q.Why == "report_cancelled" {
		details = "relato de infração cancelado pelo relator: nada a devolver"
	}
	return dict.RefundClosing{Result: dict.Rejected, RejectionReason: dict.RejectionOther, Details: details}
}

// keptClosedTotal counts the kept requests' closes by outcome: rejected
// (closed REJECTED by us: recorded by the run, or by the lister's copy of
// our close whose answer was lost, intakeRefund; once), moved (the DICT had it CANCELLED or CLOSED
// otherwise: nothing sent), not_closed (refused, not verified, or refused
// as invalid for an OPEN request: close_problem recorded, the request
// still OPEN and paging, PixMEDRefundRequestNotTaken).
var keptClosedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "pix_med_kept_requests_closed_total",
	Help: "MED refund requests kept because their report ended DISAGREED or cancelled, closed by the report's run, by outcome (rejected, moved, not_closed: paged while OPEN).",
}, []string{"outcome"})

// The outcomes of keptClosedTotal.
const (
	keptRejected  = "rejected"
	keptMoved     = "moved"
	keptNotClosed = "not_closed"
)

// EndsWithKeptRequests says whether the report r, ended, may have kept a
// request its run closes (CloseKeptRequests): ended DISAGREED or
// cancelled. Read by the run on its report: deterministic.
func EndsWithKeptRequests(r Report) bool {
	return r.Status == StatusEnded && (deref(r.EndCause) == EndCancelled || deref(r.AnalysisResult) == string(dict.Disagreed))
}

// CloseKeptRequests closes REJECTED at the DICT (KeptClosing) the refund
// requests the report at kept on its own as it ended without returning
// them, OPEN at the DICT. One that can't be closed (refused, not
// verified, no DICT behind a PSP) has its close_problem recorded and stays
// OPEN, paging; the others are closed all the same. A lost answer or a
// 429 fails the attempt, retried (read back first: the close was marked).
func (a *Activities) CloseKeptRequests(ctx context.Context, at Report) error {
	kept, err := a.Store.KeptToClose(ctx, at.ID)
	if err != nil {
		return activities.KindError(err)
	}
	for _, q := range kept {
		if a.BehindPSP {
			// No DICT call: the PSP's channel closes it, the operator's
			// cue the page (docs/med.md, "A bank behind a PSP").
			a.keptStop(ctx, q, ProblemRefused, "no DICT client configured (MED_DICT_DISABLED=true): close it REJECTED through the PSP's channel")
			continue
		}
		if err := a.closeKept(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// closeKept closes the kept request q REJECTED. A close marked sent before
// (a lost answer), or refused as invalid for the request's status
// (RefundOperationInvalid), reads the request back: OPEN, send it (again);
// CLOSED as we close it, record it; CANCELLED or CLOSED otherwise, record
// the DICT's word, nothing sent.
func (a *Activities) closeKept(ctx context.Context, q KeptRequest) error {
	closing := KeptClosing(q)
	id := q.ID.String()
	readBack := q.CloseSentAt != nil
	for range 2 {
		if readBack {
			seen, err := a.DICT.GetRefund(ctx, id)
			if err != nil {
				return a.keptFailed(ctx, q, "read back the kept refund request", err)
			}
			switch {
			case seen.Status == dict.RefundClosed && seen.AnalysisResult == closing.Result &&
				seen.RefundRejectionReason == closing.RejectionReason && seen.AnalysisDetails == dict.NormalizeDetails(closing.Details):
				return a.keptClosed(ctx, q, closing, seen)
			case seen.Status != dict.RefundOpen:
				return a.keptSeen(ctx, q, seen)
			}
		}
		marked, ok, err := a.Store.MarkKeptSent(ctx, q)
		if err != nil {
			return activities.KindError(err)
		}
		if !ok {
			return nil // moved since it was read: nothing sent
		}
		q = marked
		seen, err := a.DICT.CloseRefund(ctx, id, closing)
		if errors.Is(err, dict.ErrRefundOperationInvalid) && !readBack {
			readBack = true
			continue
		}
		if errors.Is(err, dict.ErrRefundOperationInvalid) {
			break // refused as invalid again, read back OPEN: dict_invalid_status below
		}
		if err != nil {
			return a.keptFailed(ctx, q, "close the kept refund request", err)
		}
		return a.keptClosed(ctx, q, closing, seen)
	}
	a.keptStop(ctx, q, ProblemInvalidStatus, "the DICT refused the close as invalid for the request's status, read back OPEN")
	return nil
}

// keptFailed answers a failed DICT call on q as its class says
// (dict.Classify): rate limited, retried after the DICT's Retry-After;
// outcome unknown, retried (marked sent: read back first); refused, not
// verified or malformed (dict.Malformed), recorded (keptStop), the request
// left OPEN and paging.
func (a *Activities) keptFailed(ctx context.Context, q KeptRequest, what string, err error) error {
	switch dict.Classify(err) {
	case dict.RateLimited:
		wait, _ := dict.RetryAfter(err)
		return temporal.NewApplicationErrorWithOptions(what+": rate limited", RateLimitedType,
			temporal.ApplicationErrorOptions{NextRetryDelay: wait, Cause: err})
	case dict.Refused:
		a.keptStop(ctx, q, ProblemRefused, fmt.Sprintf("%s: %v", what, err))
		return nil
	case dict.Unverified:
		a.keptStop(ctx, q, ProblemUnverified, fmt.Sprintf("%s: %v", what, err))
		return nil
	case dict.Malformed:
		a.keptStop(ctx, q, ProblemMalformed, fmt.Sprintf("%s: %v", what, err))
		return nil
	}
	return fmt.Errorf("%s %s: %w", what, q.ID, err)
}

// keptStop records why q could not be closed (its code; the text in the
// log) and counts it: the request stays OPEN at the DICT, paging
// (PixMEDRefundRequestNotTaken) for on-call. A record that fails is
// logged: the page is the net.
func (a *Activities) keptStop(ctx context.Context, q KeptRequest, code, problem string) {
	keptClosedTotal.WithLabelValues(keptNotClosed).Inc()
	a.Log.WarnContext(ctx, "MED kept refund request not closed at the DICT: on-call's (PixMEDRefundRequestNotTaken)",
		append(keptAttrs(q), "problem_code", code, "problem", problem)...)
	if _, _, err := a.Store.KeptProblem(ctx, q, code); err != nil {
		a.Log.ErrorContext(ctx, "MED kept refund request: its close problem not recorded", append(keptAttrs(q), "error", err)...)
	}
}

// keptClosed records our close of q (once: a late actor changes nothing).
func (a *Activities) keptClosed(ctx context.Context, q KeptRequest, closing dict.RefundClosing, seen dict.Refund) error {
	_, ok, err := a.Store.KeptClosed(ctx, q, closing, seen.LastModified)
	if err != nil {
		return activities.KindError(err)
	}
	if ok {
		keptClosedTotal.WithLabelValues(keptRejected).Inc()
		a.Log.InfoContext(ctx, "MED kept refund request closed REJECTED at the DICT",
			append(keptAttrs(q), "rejection_reason", closing.RejectionReason)...)
	}
	return nil
}

// keptSeen records q as the DICT has it, moved otherwise than by our close:
// CANCELLED by its requester, or CLOSED another way (dict_not_as_ours: by
// hand, on-call's answer before ours).
func (a *Activities) keptSeen(ctx context.Context, q KeptRequest, seen dict.Refund) error {
	var problem *string
	if seen.Status != dict.RefundCancelled {
		problem = ptr(ProblemNotAsOurs)
	}
	_, ok, err := a.Store.KeptSeen(ctx, q, seen, problem)
	if err != nil {
		return activities.KindError(err)
	}
	if ok {
		keptClosedTotal.WithLabelValues(keptMoved).Inc()
		a.Log.WarnContext(ctx, "MED kept refund request read back moved at the DICT: not closed by us",
			append(keptAttrs(q), "dict_status", seen.Status, "dict_result", seen.AnalysisResult)...)
	}
	return nil
}

// keptAttrs are a kept request's log attributes.
func keptAttrs(q KeptRequest) []any {
	return []any{"refund_request_id", q.ID, "report_id", q.ReportID, "workflow_id", WorkflowID(q.ReportID.String()),
		"why", q.Why, "amount_cents", q.AmountCents}
}
