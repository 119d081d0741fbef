package dict

import (
	"context"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// MaxLimit is the most a list's page holds (the specification's Limit
// maximum); DefaultLimit what a page holds when Limit is not sent.
const (
	MaxLimit     = 200
	DefaultLimit = 20
)

// ListLag is how long the lists may lag the writes (the specification): a
// report modified at t may be listed only from t+ListLag on.
const ListLag = 5 * time.Second

// maxDetails is the most characters AnalysisDetails and
// RefundAnalysisDetails may hold.
const maxDetails = 2000

// NormalizeDetails is the text the DICT keeps of AnalysisDetails or
// RefundAnalysisDetails as the bank writes it: its line breaks are "\n",
// as every XML parser reads them ("\r\n" and a lone "\r" included, XML
// 1.0 §2.11). The closes send it so (what is signed is what the DICT
// reads), and a read-back compares the DICT's details with it, never with
// the text as written.
func NormalizeDetails(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

// ReportRole restricts a list to the reports where the bank is one party.
type ReportRole int

// The roles of a report's list: both (no filter), credited (IsCredited),
// debited (IsDebited).
const (
	EitherParty ReportRole = iota
	Credited
	Debited
)

// ReportQuery is a list of infraction reports' filters (GET
// /infraction-reports/): the bank's ISPB is always its Participant.
type ReportQuery struct {
	// Role: Credited, in MED as the receiver (IsCredited=true).
	Role ReportRole
	// Status keeps only the reports of these statuses; none: all.
	Status []InfractionReportStatus
	// ModifiedAfter and ModifiedBefore bound LastModified, both included;
	// a zero time is no bound.
	ModifiedAfter, ModifiedBefore time.Time
	// Limit is the page's size, 1 to MaxLimit; 0 does not send it (the
	// DICT's default, DefaultLimit) for a page, and is MaxLimit for a walk.
	Limit int
	// IncludeDetails asks for the reports' details (ReportDetails,
	// AnalysisDetails).
	IncludeDetails bool
	// IncludeIndirectParticipants adds the reports of the bank's indirect
	// participants.
	IncludeIndirectParticipants bool
	// Malformed takes, in a walk, each report of a verified page that is
	// not the specification's (MalformedItem), in its place in the list:
	// the walk goes on past it unless Malformed fails. nil: the walk stops
	// at it (an error that is a MalformedItem, ErrMalformedItem).
	Malformed func(MalformedItem) error
	// Paging is asked, in a walk, before each page is requested (an
	// instant's pages too): a lister that throttles itself by its bucket
	// waits there; an error stops the walk before that request, with that
	// error, every item of the pages before handed. nil: none.
	Paging func() error
}

// ReportPage is one page of a list of infraction reports, by LastModified
// ascending.
type ReportPage struct {
	Reports []InfractionReport
	// Malformed are the page's reports that are not the specification's,
	// the others read (Reports): each is decoded on its own, the page's
	// signature verified over all of them.
	Malformed []MalformedItem
	// HasMoreElements: more reports follow; ask from the last one's
	// LastModified (WalkInfractionReports does).
	HasMoreElements bool
	ResponseTime    time.Time
}

type reportAnswer struct {
	ResponseTime     time.Time `xml:"ResponseTime"`
	CorrelationID    string    `xml:"CorrelationId"`
	InfractionReport *rawItem  `xml:"InfractionReport"`
}

type reportList struct {
	ResponseTime      time.Time `xml:"ResponseTime"`
	HasMoreElements   *bool     `xml:"HasMoreElements"`
	InfractionReports []rawItem `xml:"InfractionReports>InfractionReport"`
}

// ListInfractionReports reads one page of the infraction reports the bank
// is party to (GET /infraction-reports/, listInfractionReport). The lists
// lag the writes by up to 5 seconds (the specification). A report of the
// page that is not the specification's is in Malformed, the others read.
func (c *HTTPClient) ListInfractionReports(ctx context.Context, q ReportQuery) (ReportPage, error) {
	items, p, err := c.listReports(ctx, q)
	p.Reports, p.Malformed = split(items)
	return p, err
}

// listReports reads one page, its reports each decoded on its own, in the
// page's order.
func (c *HTTPClient) listReports(ctx context.Context, q ReportQuery) ([]listed[InfractionReport], ReportPage, error) {
	query, pol, err := c.reportQuery(q)
	if err != nil {
		return nil, ReportPage{}, err
	}
	var a reportList
	err = c.do(ctx, exchange{
		op: "listInfractionReport", policy: pol, base: c.base,
		method: http.MethodGet, path: "/infraction-reports/", query: query,
		answer: "ListInfractionReportsResponse",
	}, &a)
	if err != nil {
		return nil, ReportPage{}, err
	}
	if a.HasMoreElements == nil {
		return nil, ReportPage{}, fmt.Errorf("dict listInfractionReport: %w: no HasMoreElements", ErrUnknownOutcome)
	}
	items := decodeItems[InfractionReport]("listInfractionReport", reportSpec, a.InfractionReports, q.ModifiedAfter)
	return items, ReportPage{HasMoreElements: *a.HasMoreElements, ResponseTime: a.ResponseTime}, nil
}

// WalkInfractionReports calls fn once on each report of q, from
// q.ModifiedAfter on, page after page (an instant of more reports than a
// page holds walked one Status at a time: walk), and returns the LastModified of the
// last report fn took (q.ModifiedAfter, cut to milliseconds, when none): a lister's next
// ModifiedAfter, less the lists' lag. An error of fn stops the walk.
func (c *HTTPClient) WalkInfractionReports(ctx context.Context, q ReportQuery, fn func(InfractionReport) error) (time.Time, error) {
	if q.Limit == 0 {
		q.Limit = MaxLimit
	}
	statuses := q.Status
	if len(statuses) == 0 {
		statuses = []InfractionReportStatus{ReportOpen, ReportAcknowledged, ReportClosed, ReportCancelled}
	}
	return walk(q.ModifiedAfter, listing[InfractionReport]{
		page: func(after time.Time) ([]listed[InfractionReport], bool, error) {
			if err := paging(q.Paging); err != nil {
				return nil, false, err
			}
			q.ModifiedAfter = after
			items, p, err := c.listReports(ctx, q)
			return items, p.HasMoreElements, err
		},
		instant: func(at time.Time, status string) ([]listed[InfractionReport], bool, error) {
			if err := paging(q.Paging); err != nil {
				return nil, false, err
			}
			one := q
			one.ModifiedAfter, one.ModifiedBefore, one.Status, one.Limit = at, at, []InfractionReportStatus{InfractionReportStatus(status)}, MaxLimit
			items, p, err := c.listReports(ctx, one)
			return items, p.HasMoreElements, err
		},
		statuses:  names(statuses),
		before:    q.ModifiedBefore,
		key:       func(r InfractionReport) (string, time.Time) { return r.ID, r.LastModified },
		malformed: q.Malformed,
	}, fn)
}

func (c *HTTPClient) reportQuery(q ReportQuery) (url.Values, policy, error) {
	v := url.Values{"Participant": {c.participant}}
	pol := policyReportsListWithoutRole
	switch q.Role {
	case EitherParty:
	case Credited:
		v.Set("IsCredited", "true")
		pol = policyReportsListWithRole
	case Debited:
		v.Set("IsDebited", "true")
		pol = policyReportsListWithRole
	default:
		return nil, pol, fmt.Errorf("dict listInfractionReport: %w: role %d", ErrNotSent, q.Role)
	}
	for _, s := range q.Status {
		if !slices.Contains([]InfractionReportStatus{ReportOpen, ReportAcknowledged, ReportClosed, ReportCancelled}, s) {
			return nil, pol, fmt.Errorf("dict listInfractionReport: %w: status %q", ErrNotSent, s)
		}
		v.Add("Status", string(s))
	}
	if err := listCommon(v, q.ModifiedAfter, q.ModifiedBefore, q.Limit, q.IncludeDetails, q.IncludeIndirectParticipants); err != nil {
		return nil, pol, fmt.Errorf("dict listInfractionReport: %w", err)
	}
	return v, pol, nil
}

// listCommon adds the filters the two lists share.
func listCommon(v url.Values, after, before time.Time, limit int, details, indirect bool) error {
	if limit < 0 || limit > MaxLimit {
		return fmt.Errorf("%w: limit %d (1 to %d)", ErrNotSent, limit, MaxLimit)
	}
	if limit > 0 {
		v.Set("Limit", strconv.Itoa(limit))
	}
	if !after.IsZero() {
		v.Set("ModifiedAfter", dateTime(after))
	}
	if !before.IsZero() {
		v.Set("ModifiedBefore", dateTime(before))
	}
	if details {
		v.Set("IncludeDetails", "true")
	}
	if indirect {
		v.Set("IncludeIndirectParticipants", "true")
	}
	return nil
}

// dateTime writes t as the specification's date-times: UTC, in
// milliseconds, or finer when t is: a walk's cursor is a LastModified of
// the DICT's, sent back as precisely as the DICT wrote it, since the walk
// compares the page's items with the cursor as it is (a cursor cut to
// milliseconds would bring back items before it).
func dateTime(t time.Time) string {
	t = t.UTC()
	if t.Nanosecond()%int(time.Millisecond) != 0 {
		return t.Format(time.RFC3339Nano)
	}
	return t.Format("2006-01-02T15:04:05.000Z07:00")
}

// GetInfractionReport reads one infraction report (GET
// /infraction-reports/{InfractionReportId}, getInfractionReport): what a
// caller reads back after a lost answer. ErrNotFound when the DICT has
// none under id.
func (c *HTTPClient) GetInfractionReport(ctx context.Context, id string) (InfractionReport, error) {
	return c.reportCall(ctx, "getInfractionReport", policyReportsRead, id, http.MethodGet, "", nil, "GetInfractionReportResponse")
}

type acknowledgeRequest struct {
	XMLName            xml.Name `xml:"AcknowledgeInfractionReportRequest"`
	InfractionReportID string   `xml:"InfractionReportId"`
	Participant        string   `xml:"Participant"`
}

// AcknowledgeInfractionReport tells the DICT the bank received the report
// (POST /infraction-reports/{InfractionReportId}/acknowledge,
// acknowledgeInfractionReport), signed. The DICT answers a repeated
// acknowledge as the first while the report is ACKNOWLEDGED; once it is
// closed or cancelled, InfractionReportOperationInvalid: read it back.
func (c *HTTPClient) AcknowledgeInfractionReport(ctx context.Context, id string) (InfractionReport, error) {
	return c.reportCall(ctx, "acknowledgeInfractionReport", policyReportsWrite, id, http.MethodPost, "/acknowledge",
		acknowledgeRequest{InfractionReportID: id, Participant: c.participant}, "AcknowledgeInfractionReportResponse")
}

type closeReportRequest struct {
	XMLName            xml.Name       `xml:"CloseInfractionReportRequest"`
	InfractionReportID string         `xml:"InfractionReportId"`
	Participant        string         `xml:"Participant"`
	AnalysisResult     AnalysisResult `xml:"AnalysisResult"`
	AnalysisDetails    string         `xml:"AnalysisDetails,omitempty"`
}

// CloseInfractionReport closes the analysis of an acknowledged report
// (POST /infraction-reports/{InfractionReportId}/close,
// closeInfractionReport), signed: AGREED or DISAGREED, with details that
// may guide the payer (at most 2,000 characters, NormalizeDetails'). Sent again with the same
// result and details, the DICT answers as the first time; otherwise
// InfractionReportOperationInvalid: read the report back.
func (c *HTTPClient) CloseInfractionReport(ctx context.Context, id string, result AnalysisResult, details string) (InfractionReport, error) {
	details = NormalizeDetails(details)
	if !result.Valid() {
		return InfractionReport{}, fmt.Errorf("dict closeInfractionReport %s: %w: AnalysisResult %q", id, ErrNotSent, result)
	}
	if utf8.RuneCountInString(details) > maxDetails {
		return InfractionReport{}, fmt.Errorf("dict closeInfractionReport %s: %w: AnalysisDetails longer than %d characters", id, ErrNotSent, maxDetails)
	}
	return c.reportCall(ctx, "closeInfractionReport", policyReportsWrite, id, http.MethodPost, "/close",
		closeReportRequest{InfractionReportID: id, Participant: c.participant, AnalysisResult: result, AnalysisDetails: details},
		"CloseInfractionReportResponse")
}

// reportCall is a call about one report, whose answer must be about it.
func (c *HTTPClient) reportCall(ctx context.Context, op string, pol policy, id, method, suffix string, body any, answer string) (InfractionReport, error) {
	if err := checkID(id); err != nil {
		return InfractionReport{}, fmt.Errorf("dict %s: %w", op, err)
	}
	var a reportAnswer
	err := c.do(ctx, exchange{
		op: op, policy: pol, base: c.base, method: method,
		path: "/infraction-reports/" + id + suffix, requester: body == nil,
		body: body, answer: answer,
	}, &a)
	if err != nil {
		return InfractionReport{}, err
	}
	if a.InfractionReport == nil {
		return InfractionReport{}, fmt.Errorf("dict %s %s: %w: the answer has no report", op, id, ErrUnknownOutcome)
	}
	rep, err := decodeAnswer[InfractionReport](op, reportSpec, *a.InfractionReport)
	if err != nil {
		return InfractionReport{}, err
	}
	if !SameID(rep.ID, id) {
		return InfractionReport{}, fmt.Errorf("dict %s %s: %w: the answer is about another report", op, id, ErrUnknownOutcome)
	}
	return rep, nil
}

// checkID refuses an id that is not the specification's uuid.
// SameID says whether two of the DICT's ids name the same report or
// request: as UUIDs, whatever their letters' case (the DICT may answer an
// id in capitals); ids that are not UUIDs are never the same.
func SameID(a, b string) bool {
	x, errA := uuid.Parse(a)
	y, errB := uuid.Parse(b)
	return errA == nil && errB == nil && x == y
}

func checkID(id string) error {
	if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
		return fmt.Errorf("%w: id %q is not a uuid", ErrNotSent, id)
	}
	return nil
}

// listing is what walk reads of one list: its pages from an instant on
// (page: the caller's query from after), and the pages of one instant
// alone, of one status (instant: ModifiedAfter and ModifiedBefore at,
// Status status, Limit MaxLimit), for each of statuses (the caller's
// Status filter, or every status of the list). before is the caller's
// ModifiedBefore (zero: none); malformed the caller's taker of the items
// that are not the specification's (nil: none).
type listing[T any] struct {
	page      func(after time.Time) ([]listed[T], bool, error)
	instant   func(at time.Time, status string) ([]listed[T], bool, error)
	statuses  []string
	before    time.Time
	key       func(T) (string, time.Time)
	malformed func(MalformedItem) error
}

// walk hands fn each item of l's pages, from after on, once: the lists
// have no offset, so the next page is asked from the last item's
// LastModified, which the DICT includes (ModifiedAfter is >=); the items
// of that instant already handed are skipped. A full page whose items
// were all handed (more items of one instant than a page holds) would
// come back the same: that instant is walked alone, one status at a time
// (each status' items of the instant fit a page, or the walk stops:
// ErrInstantTooFull), and the walk goes on from just after it (a
// nanosecond later: nothing the DICT writes lies between). An item that
// is not the specification's is handed to l.malformed in its place (its
// LastModified, or where the walk is when that can't be read: never past
// it), or stops the walk when there is none. It returns the LastModified
// of the last item fn took.
//
// Length: the walk's cursor, its instant's seen items and the instant
// walked alone are one state; split, each part would carry all of it.
func walk[T any](after time.Time, l listing[T], fn func(T) error) (time.Time, error) {
	// The caller's start is sent in milliseconds (an earlier bound
	// includes more, never less); from then on the cursor is the DICT's
	// own LastModified, sent and compared as the DICT wrote it.
	cursor := after.Truncate(time.Millisecond)
	last := cursor
	seen := map[string]bool{} // items handed whose LastModified is cursor
	// unplacedSeen are the malformed items handed whose LastModified
	// can't be read, handed once in the walk wherever they come again.
	unplacedSeen := map[string]bool{}
	// placed is an item's key and LastModified; a malformed item whose
	// LastModified can't be read is placed where the walk is (unplaced).
	placed := func(it listed[T]) (key string, mod time.Time, unplaced bool) {
		if it.bad == nil {
			id, mod := l.key(it.item)
			return "id:" + id, mod, false
		}
		if it.bad.LastModified.IsZero() {
			it.bad.At = cursor
			return it.bad.key, cursor, true
		}
		return it.bad.key, it.bad.LastModified, false
	}
	handed := func(it listed[T]) bool {
		key, mod, unplaced := placed(it)
		return unplacedSeen[key] || (!unplaced && mod.Equal(cursor) && seen[key])
	}
	hand := func(it listed[T]) error {
		if handed(it) {
			return nil
		}
		key, mod, unplaced := placed(it)
		var err error
		switch {
		case it.bad == nil:
			err = fn(it.item)
		case l.malformed == nil:
			err = *it.bad
		default:
			err = l.malformed(*it.bad)
		}
		if err != nil {
			return err
		}
		if mod.After(cursor) {
			cursor = mod
			clear(seen)
		}
		if unplaced {
			unplacedSeen[key] = true
			return nil
		}
		seen[key] = true
		if it.bad == nil {
			last = mod
		}
		return nil
	}
	for {
		items, more, err := l.page(cursor)
		if err != nil {
			return last, err
		}
		progressed, placedAny := false, false
		for _, it := range items {
			key, mod, unplaced := placed(it)
			if mod.Before(cursor) {
				return last, fmt.Errorf("dict list: %w: %s modified %s, before the page's start %s", ErrUnknownOutcome, bounded(key), dateTime(mod), dateTime(cursor))
			}
			placedAny = placedAny || !unplaced
			progressed = progressed || !handed(it)
			if err := hand(it); err != nil {
				return last, err
			}
		}
		if !more {
			return last, nil
		}
		if progressed {
			continue
		}
		if !placedAny {
			// A full page of items handed already whose LastModified
			// can't be read: where they are is unknown, so no instant can
			// be walked past them. The walk stops (and its lister with it,
			// seen lagging) rather than guess.
			return last, fmt.Errorf("dict list: %w: a full page at %s handed already, none of it with a LastModified", ErrUnknownOutcome, dateTime(cursor))
		}
		// A whole page modified at the cursor's instant, all handed
		// already: the next page would be the same.
		at := cursor
		for _, status := range l.statuses {
			items, more, err := l.instant(at, status)
			if err != nil {
				return last, err
			}
			for _, it := range items {
				key, mod, _ := placed(it)
				if !mod.Equal(at) {
					return last, fmt.Errorf("dict list: %w: %s modified %s, outside the instant %s asked", ErrUnknownOutcome, bounded(key), dateTime(mod), dateTime(at))
				}
				if err := hand(it); err != nil {
					return last, err
				}
			}
			if more {
				return last, fmt.Errorf("%w: more than %d items %s modified at %s", ErrInstantTooFull, len(items), status, dateTime(at))
			}
		}
		cursor = at.Add(time.Nanosecond)
		clear(seen)
		if !l.before.IsZero() && cursor.After(l.before) {
			return last, nil
		}
	}
}

// paging asks a query's Paging before a walk's page (nil: nothing).
func paging(ask func() error) error {
	if ask == nil {
		return nil
	}
	return ask()
}

// names are statuses as the lists' Status parameter writes them.
func names[S ~string](statuses []S) []string {
	out := make([]string, len(statuses))
	for i, s := range statuses {
		out[i] = string(s)
	}
	return out
}
