package dictsim

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/beevik/etree"
	"github.com/google/uuid"

	"github.com/pixbank/pix/internal/dict"
)

// refund is a refund request as the simulator holds it.
type refund struct {
	dict.Refund
}

// NewRefund is a refund request the payer's participant opens after the
// report of its PIX was closed AGREED (OpenRefund).
type NewRefund struct {
	InfractionReportID string
	// Amount asked back, in centavos: at most the PIX's (NewReport.Amount);
	// 0 is all of it.
	Amount dict.Amount
	// Reason; "" is dict.RefundFraud.
	Reason dict.RefundReason
	// Details are the RefundDetails, at most 2,000 characters.
	Details string
}

// OpenRefund opens a refund request for a report, as the reporting (the
// payer's) participant does (createRefund, not the bank's call): OPEN,
// requested by the report's debited participant, contested by its
// credited one, by the simulated clock. As the DICT, it refuses one
// without an AGREED report of the PIX (dict.ErrRefundInfractionReportNotFound),
// and a second one while one is open
// (dict.ErrRefundAlreadyBeingProcessedForTransaction) or once one is
// closed (dict.ErrRefundAlreadyProcessedForTransaction); a cancelled one
// does not count. An amount beyond the PIX's is ErrInvalid.
func (s *Simulator) OpenRefund(n NewRefund) (dict.Refund, error) {
	n.Reason = cmp.Or(n.Reason, dict.RefundFraud)
	switch {
	case !slices.Contains([]dict.RefundReason{dict.RefundFraud, dict.RefundOperationalFlaw, dict.RefundReasonCancelled}, n.Reason):
		return dict.Refund{}, fmt.Errorf("%w: reason %q", ErrInvalid, n.Reason)
	case n.Amount < 0:
		return dict.Refund{}, fmt.Errorf("%w: amount %d: negative", ErrInvalid, n.Amount)
	case utf8.RuneCountInString(n.Details) > 2000:
		return dict.Refund{}, fmt.Errorf("%w: details: at most 2,000 characters", ErrInvalid)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.reports[n.InfractionReportID]
	switch {
	case !ok:
		return dict.Refund{}, fmt.Errorf("no infraction report %s: %w", n.InfractionReportID, dict.ErrRefundInfractionReportNotFound)
	case r.Status != dict.ReportClosed || r.AnalysisResult != dict.Agreed:
		return dict.Refund{}, fmt.Errorf("infraction report %s is %s %s, not CLOSED AGREED: %w", r.ID, r.Status, r.AnalysisResult, dict.ErrRefundInfractionReportNotFound)
	case n.Amount > r.amount:
		return dict.Refund{}, fmt.Errorf("%w: amount %d beyond the PIX's %d", ErrInvalid, n.Amount, r.amount)
	}
	for _, f := range s.refunds {
		if f.TransactionID != r.TransactionID {
			continue
		}
		switch f.Status {
		case dict.RefundOpen:
			return dict.Refund{}, fmt.Errorf("refund request %s of %s is open: %w", f.ID, r.TransactionID, dict.ErrRefundAlreadyBeingProcessedForTransaction)
		case dict.RefundClosed:
			return dict.Refund{}, fmt.Errorf("refund request %s of %s is closed: %w", f.ID, r.TransactionID, dict.ErrRefundAlreadyProcessedForTransaction)
		}
	}
	now := s.now()
	f := &refund{dict.Refund{
		ID: uuid.NewString(), TransactionID: r.TransactionID, RefundReason: n.Reason,
		RefundAmount: cmp.Or(n.Amount, r.amount), RefundDetails: n.Details, Status: dict.RefundOpen,
		RequestingParticipant: r.DebitedParticipant, ContestedParticipant: r.CreditedParticipant,
		CreationTime: now, LastModified: now, InfractionReportID: r.ID,
	}}
	s.refunds[f.ID] = f
	return f.Refund, nil
}

// CancelRefund cancels an open refund request, as its requester may
// before it is closed: CANCELLED. Cancelling a cancelled one changes
// nothing; a closed one is dict.ErrRefundOperationInvalid.
func (s *Simulator) CancelRefund(id string) (dict.Refund, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.refunds[id]
	switch {
	case !ok:
		return dict.Refund{}, fmt.Errorf("%w refund request %s", ErrNoSuch, id)
	case f.Status == dict.RefundClosed:
		return dict.Refund{}, fmt.Errorf("refund request %s is closed: %w", id, dict.ErrRefundOperationInvalid)
	case f.Status == dict.RefundOpen:
		f.Status, f.LastModified = dict.RefundCancelled, s.now()
	}
	return f.Refund, nil
}

// Refund is the refund request id as the simulator holds it.
func (s *Simulator) Refund(id string) (dict.Refund, bool) {
	return heldOne(s, s.refunds, id, (*refund).value)
}

// Refunds are every refund request the simulator holds, by LastModified.
func (s *Simulator) Refunds() []dict.Refund {
	return heldAll(s, s.refunds, (*refund).value)
}

func (f *refund) value() dict.Refund { return f.Refund }

func (f *refund) key() (string, time.Time) { return f.ID, f.LastModified }

func (f *refund) element(parent *etree.Element, details bool) {
	refundElement(parent, &f.Refund, details)
}

func (f *refund) isParty(ispb string) bool {
	return f.RequestingParticipant == ispb || f.ContestedParticipant == ispb
}

func (s *Simulator) listRefunds(x *Exchange, now time.Time) Answer {
	q := x.Request.URL.Query()
	var list []*refund
	for _, f := range byLastModified(s.refunds) {
		party := f.ContestedParticipant
		if q.Get("ParticipantRole") == string(dict.RoleRequesting) {
			party = f.RequestingParticipant
		}
		if party == x.Participant && hasStatus(q, string(f.Status)) && s.listed(f.LastModified, q, now) {
			list = append(list, f)
		}
	}
	return listAnswer("ListRefundsResponse", "Refunds", list, q)
}

// refundOf is the refund request of the request's path, when its
// participant is a party of it: one of others' looks like none.
func (s *Simulator) refundOf(x *Exchange) (*refund, *Answer) {
	return partyOf(s.refunds, x, "RefundId", "refund request")
}

func (s *Simulator) getRefund(x *Exchange, _ time.Time) Answer {
	f, refused := s.refundOf(x)
	if refused != nil {
		return *refused
	}
	return itemAnswer("GetRefundResponse", f)
}

func (s *Simulator) closeRefund(x *Exchange, now time.Time) Answer {
	f, refused := s.refundOf(x)
	switch {
	case refused != nil:
		return *refused
	case x.fields["RefundId"] != f.ID:
		return problem(http.StatusBadRequest, dict.ErrBadRequest, "RefundId is not the path's")
	case f.ContestedParticipant != x.Participant:
		return problem(http.StatusForbidden, dict.ErrForbidden, "a refund request is closed by its contested participant")
	}
	closing := dict.Refund{
		AnalysisResult:        dict.RefundAnalysisResult(x.fields["RefundAnalysisResult"]),
		AnalysisDetails:       x.fields["RefundAnalysisDetails"],
		RefundRejectionReason: dict.RefundRejectionReason(x.fields["RefundRejectionReason"]),
		RefundTransactionID:   x.fields["RefundTransactionId"],
	}
	same := f.AnalysisResult == closing.AnalysisResult && f.AnalysisDetails == closing.AnalysisDetails &&
		f.RefundRejectionReason == closing.RefundRejectionReason && f.RefundTransactionID == closing.RefundTransactionID
	switch {
	case f.Status == dict.RefundOpen:
		f.Status, f.LastModified = dict.RefundClosed, now
		f.AnalysisResult, f.AnalysisDetails = closing.AnalysisResult, closing.AnalysisDetails
		f.RefundRejectionReason, f.RefundTransactionID = closing.RefundRejectionReason, closing.RefundTransactionID
	case f.Status == dict.RefundClosed && same:
		// Idempotent with the same parameters: the same answer.
	default:
		return problem(http.StatusBadRequest, dict.ErrRefundOperationInvalid, "the refund request is "+string(f.Status)+
			" (a close needs it OPEN, or closed with the same parameters)")
	}
	return itemAnswer("CloseRefundResponse", f)
}
