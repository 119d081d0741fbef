package dictsim

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

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
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.reports[id]
	if !ok {
		return dict.InfractionReport{}, false
	}
	return r.InfractionReport, true
}

// Reports are every report the simulator holds, by LastModified.
func (s *Simulator) Reports() []dict.InfractionReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]dict.InfractionReport, 0, len(s.reports))
	for _, r := range byLastModified(s.reports, reportKey) {
		out = append(out, r.InfractionReport)
	}
	return out
}

func reportKey(r *report) (string, time.Time) { return r.ID, r.LastModified }

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
	for _, r := range byLastModified(s.reports, reportKey) {
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
	page, more := paged(list, q)
	root := answerRoot("ListInfractionReportsResponse")
	root.CreateElement("HasMoreElements").SetText(strconv.FormatBool(more))
	if len(page) > 0 {
		wrap := root.CreateElement("InfractionReports")
		for _, r := range page {
			reportElement(wrap, &r.InfractionReport, q.Get("IncludeDetails") == "true")
		}
	}
	return Answer{Status: http.StatusOK, Body: root}
}

// reportOf is the report of the request's path, when its participant is
// a party of it: a report of others' looks like none.
func (s *Simulator) reportOf(x *Exchange) (*report, *Answer) {
	r, ok := s.reports[x.params["InfractionReportId"]]
	if !ok || !r.isParty(x.Participant) {
		a := problem(http.StatusNotFound, dict.ErrNotFound, "no such infraction report")
		return nil, &a
	}
	return r, nil
}

// reportAnswer is the answer name about r.
func reportAnswer(name string, r *report) Answer {
	root := answerRoot(name)
	reportElement(root, &r.InfractionReport, true)
	return Answer{Status: http.StatusOK, Body: root}
}

func (s *Simulator) getReport(x *Exchange, _ time.Time) Answer {
	r, refused := s.reportOf(x)
	if refused != nil {
		return *refused
	}
	return reportAnswer("GetInfractionReportResponse", r)
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
	return reportAnswer("AcknowledgeInfractionReportResponse", r)
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
	return reportAnswer("CloseInfractionReportResponse", r)
}

// byLastModified are m's values by LastModified, then id: the lists'
// order, made stable for equal instants.
func byLastModified[T any](m map[string]T, key func(T) (string, time.Time)) []T {
	out := make([]T, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b T) int {
		ia, ta := key(a)
		ib, tb := key(b)
		return cmp.Or(ta.Compare(tb), cmp.Compare(ia, ib))
	})
	return out
}

// hasStatus applies a list's Status filter (none: every status).
func hasStatus(q url.Values, status string) bool {
	return len(q["Status"]) == 0 || slices.Contains(q["Status"], status)
}

// listed applies a list's ModifiedAfter and ModifiedBefore (both
// included) and the lists' lag (Options.ListLag) to mod.
func (s *Simulator) listed(mod time.Time, q url.Values, now time.Time) bool {
	if s.listLag > 0 && mod.After(now.Add(-s.listLag)) {
		return false
	}
	if a := q.Get("ModifiedAfter"); a != "" {
		if t, err := time.Parse(time.RFC3339Nano, a); err == nil && mod.Before(t) {
			return false
		}
	}
	if b := q.Get("ModifiedBefore"); b != "" {
		if t, err := time.Parse(time.RFC3339Nano, b); err == nil && mod.After(t) {
			return false
		}
	}
	return true
}

// paged cuts list to the query's Limit (dict.DefaultLimit without one),
// and says whether more follow.
func paged[T any](list []T, q url.Values) ([]T, bool) {
	limit := dict.DefaultLimit
	if v, err := strconv.Atoi(q.Get("Limit")); err == nil {
		limit = v
	}
	if len(list) > limit {
		return list[:limit], true
	}
	return list, false
}
