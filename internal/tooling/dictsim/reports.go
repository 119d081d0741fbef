package dictsim

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/beevik/etree"
	"github.com/google/uuid"

	"github.com/pixbank/pix/internal/dict"
)

// ErrInvalid is a control call the simulator refuses for what it asks (a
// malformed end_to_end_id, an amount beyond the PIX's): the caller's
// mistake. The refusals of the DICT's own rules are its declared problems
// (dict.ErrInfractionReportAlreadyBeingProcessedForTransaction, ...).
var ErrInvalid = errors.New("dict simulator: invalid")

// ErrNoSuch is a control call about a report or a refund request the
// simulator does not hold.
var ErrNoSuch = errors.New("dict simulator: no such")

// report is an infraction report as the simulator holds it: the DICT's,
// and the amount of the PIX it is about, which bounds its refund request.
type report struct {
	dict.InfractionReport
	amount dict.Amount
}

// NewReport is an infraction report another participant opens against a
// PIX (OpenReport).
type NewReport struct {
	// EndToEndID is the PIX's (32 characters).
	EndToEndID string
	// Amount is the PIX's, in centavos: the most a refund request of it
	// asks.
	Amount dict.Amount
	// Debited is the payer's participant (ISPB), Credited the
	// receiver's: the bank's, in MED.
	Debited, Credited string
	// ReportedBy is which of the two reports; "" is
	// dict.ReportedByDebited: the other one acknowledges and closes it.
	ReportedBy dict.ReportedBy
	// InfractionType; "" is dict.InfractionFraud.
	InfractionType dict.InfractionType
	// Details are the ReportDetails, at most 2,000 characters.
	Details string
}

var endToEndIDPattern = regexp.MustCompile(`^\w{32}$`)

func (n *NewReport) check() error {
	n.ReportedBy = cmp.Or(n.ReportedBy, dict.ReportedByDebited)
	n.InfractionType = cmp.Or(n.InfractionType, dict.InfractionFraud)
	var errs []error
	if !endToEndIDPattern.MatchString(n.EndToEndID) {
		errs = append(errs, fmt.Errorf("end_to_end_id %q: want 32 letters or digits", n.EndToEndID))
	}
	if n.Amount <= 0 {
		errs = append(errs, errors.New("amount: want the PIX's, positive"))
	}
	if !ispbPattern.MatchString(n.Debited) || !ispbPattern.MatchString(n.Credited) || n.Debited == n.Credited {
		errs = append(errs, fmt.Errorf("debited %q, credited %q: want two ISPBs, 8 digits, not the same", n.Debited, n.Credited))
	}
	if n.ReportedBy != dict.ReportedByDebited && n.ReportedBy != dict.ReportedByCredited {
		errs = append(errs, fmt.Errorf("reported_by %q", n.ReportedBy))
	}
	if !slices.Contains([]dict.InfractionType{dict.InfractionFraud, dict.InfractionRefundRequest, dict.InfractionRefundCancelled}, n.InfractionType) {
		errs = append(errs, fmt.Errorf("infraction_type %q", n.InfractionType))
	}
	if utf8.RuneCountInString(n.Details) > 2000 {
		errs = append(errs, errors.New("details: at most 2,000 characters"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

// OpenReport opens an infraction report against a PIX, as the reporting
// participant does (createInfractionReport, which is not the bank's call):
// OPEN, by the simulated clock. As the DICT, it refuses a second report of
// a PIX while one is open or acknowledged
// (dict.ErrInfractionReportAlreadyBeingProcessedForTransaction) or once
// one is closed (dict.ErrInfractionReportAlreadyProcessedForTransaction);
// a cancelled one does not count.
func (s *Simulator) OpenReport(n NewReport) (dict.InfractionReport, error) {
	if err := n.check(); err != nil {
		return dict.InfractionReport{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.reports {
		if r.TransactionID != n.EndToEndID {
			continue
		}
		switch r.Status {
		case dict.ReportOpen, dict.ReportAcknowledged:
			return dict.InfractionReport{}, fmt.Errorf("report %s of %s is %s: %w", r.ID, n.EndToEndID, r.Status, dict.ErrInfractionReportAlreadyBeingProcessedForTransaction)
		case dict.ReportClosed:
			return dict.InfractionReport{}, fmt.Errorf("report %s of %s is closed: %w", r.ID, n.EndToEndID, dict.ErrInfractionReportAlreadyProcessedForTransaction)
		}
	}
	now := s.now()
	r := &report{amount: n.Amount, InfractionReport: dict.InfractionReport{
		ID: uuid.NewString(), TransactionID: n.EndToEndID, TransactionType: "SPI", TransactionResult: "SETTLED",
		InfractionType: n.InfractionType, ReportedBy: n.ReportedBy, ReportDetails: n.Details,
		Status: dict.ReportOpen, DebitedParticipant: n.Debited, CreditedParticipant: n.Credited,
		CreationTime: now, LastModified: now,
	}}
	s.reports[r.ID] = r
	return r.InfractionReport, nil
}

// CancelReport cancels a report, as its creator may at any time, even
// once it is closed: CANCELLED. Cancelling a cancelled report changes
// nothing.
func (s *Simulator) CancelReport(id string) (dict.InfractionReport, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.reports[id]
	if !ok {
		return dict.InfractionReport{}, fmt.Errorf("%w infraction report %s", ErrNoSuch, id)
	}
	if r.Status != dict.ReportCancelled {
		r.Status, r.LastModified = dict.ReportCancelled, s.now()
	}
	return r.InfractionReport, nil
}

// Report is the report id as the simulator holds it.
func (s *Simulator) Report(id string) (dict.InfractionReport, bool) {
	return heldOne(s, s.reports, id, (*report).value)
}

// Reports are every report the simulator holds, by LastModified.
func (s *Simulator) Reports() []dict.InfractionReport {
	return heldAll(s, s.reports, (*report).value)
}

func (r *report) value() dict.InfractionReport { return r.InfractionReport }

func (r *report) key() (string, time.Time) { return r.ID, r.LastModified }

func (r *report) element(parent *etree.Element, details bool) {
	reportElement(parent, &r.InfractionReport, details)
}

// isParty reports whether ispb is one of r's participants.
func (r *report) isParty(ispb string) bool {
	return r.DebitedParticipant == ispb || r.CreditedParticipant == ispb
}

// analyst is the participant that acknowledges and closes r: the party
// that did not report it.
func (r *report) analyst() string {
	if r.ReportedBy == dict.ReportedByCredited {
		return r.DebitedParticipant
	}
	return r.CreditedParticipant
}

func (s *Simulator) listReports(x *Exchange, now time.Time) Answer {
	q := x.Request.URL.Query()
	p := x.Participant
	credited, debited := q.Get("IsCredited") == "true", q.Get("IsDebited") == "true"
	var list []*report
	for _, r := range byLastModified(s.reports) {
		// IsCredited and IsDebited both: either role, as the lists read
		// their role filters.
		role := r.isParty(p)
		if credited || debited {
			role = credited && r.CreditedParticipant == p || debited && r.DebitedParticipant == p
		}
		if role && hasStatus(q, string(r.Status)) && s.listed(r.LastModified, q, now) {
			list = append(list, r)
		}
	}
	return listAnswer("ListInfractionReportsResponse", "InfractionReports", list, q)
}

// reportOf is the report of the request's path, when its participant is
// a party of it: a report of others' looks like none.
func (s *Simulator) reportOf(x *Exchange) (*report, *Answer) {
	return partyOf(s.reports, x, "InfractionReportId", "infraction report")
}

func (s *Simulator) getReport(x *Exchange, _ time.Time) Answer {
	r, refused := s.reportOf(x)
	if refused != nil {
		return *refused
	}
	return itemAnswer("GetInfractionReportResponse", r)
}

// reportWrite is the report of an acknowledge or a close, when the
// request may write it: its party that analyses it, the body about the
// path's report.
func (s *Simulator) reportWrite(x *Exchange) (*report, *Answer) {
	r, refused := s.reportOf(x)
	switch {
	case refused != nil:
		return nil, refused
	case x.fields["InfractionReportId"] != r.ID:
		a := problem(http.StatusBadRequest, dict.ErrBadRequest, "InfractionReportId is not the path's")
		return nil, &a
	case r.analyst() != x.Participant:
		a := problem(http.StatusForbidden, dict.ErrForbidden, "the report is acknowledged and closed by the party that did not report it")
		return nil, &a
	}
	return r, nil
}

func (s *Simulator) acknowledgeReport(x *Exchange, now time.Time) Answer {
	r, refused := s.reportWrite(x)
	if refused != nil {
		return *refused
	}
	switch r.Status {
	case dict.ReportOpen:
		r.Status, r.LastModified = dict.ReportAcknowledged, now
	case dict.ReportAcknowledged:
		// Idempotent while still ACKNOWLEDGED: the same answer.
	default:
		return problem(http.StatusBadRequest, dict.ErrInfractionReportOperationInvalid, "the report is "+string(r.Status))
	}
	return itemAnswer("AcknowledgeInfractionReportResponse", r)
}

func (s *Simulator) closeReport(x *Exchange, now time.Time) Answer {
	r, refused := s.reportWrite(x)
	if refused != nil {
		return *refused
	}
	result, details := dict.AnalysisResult(x.fields["AnalysisResult"]), x.fields["AnalysisDetails"]
	switch {
	case r.Status == dict.ReportAcknowledged:
		r.Status, r.AnalysisResult, r.AnalysisDetails, r.LastModified = dict.ReportClosed, result, details, now
	case r.Status == dict.ReportClosed && r.AnalysisResult == result && r.AnalysisDetails == details:
		// Idempotent with the same parameters: the same answer.
	default:
		return problem(http.StatusBadRequest, dict.ErrInfractionReportOperationInvalid, "the report is "+string(r.Status)+
			" (a close needs it ACKNOWLEDGED, or closed with the same parameters)")
	}
	return itemAnswer("CloseInfractionReportResponse", r)
}
