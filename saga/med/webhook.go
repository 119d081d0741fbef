package med

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/notification"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/rfc3339"
)

// The PSP's MED notices (api/openapi/webhooks/med.yaml; docs/med.md "A
// bank behind a PSP"): a bank that is not a DICT participant of its own
// hears of infraction reports and refund requests from its PSP, which
// posts them in the DICT's own vocabulary, as JSON:
//
//	POST /webhooks/med/infraction-reports   {"InfractionReport": {...}}  the DICT's InfractionReport
//	POST /webhooks/med/refunds              {"Refund": {...}}            the DICT's Refund
//
// authenticated exactly as the PSP's PIX webhooks (api.WebhookRoute: the
// client certificate, the Standard Webhooks signature), answered 202 once
// the notice is committed, and handed to the saga's one door (Doors:
// Intake, IntakeRefund), where the DICT's lister hands what it lists: a notice
// received from both is one report, a redelivery is absorbed.

// MaxNoticeBytes bounds a notice's body: a report's or a request's
// elements, their free texts of at most 2,000 characters each.
const MaxNoticeBytes = 32 << 10

// NoticeStore is what the notices need: the saga's doors (Doors, which
// wake the report's run after a change).
type NoticeStore interface {
	Intake(ctx context.Context, in dict.InfractionReport) (Report, bool, error)
	IntakeRefund(ctx context.Context, in dict.Refund) (Report, bool, error)
	CreditPSP(ctx context.Context, endToEndID string) (string, error)
}

// Notices serve the PSP's MED notices.
type Notices struct {
	Store NoticeStore
	Log   *slog.Logger
	// DICT, when MED reaches the DICT (nil behind a PSP), is the authority
	// on every notice: a notice only names what to read there
	// (getInfractionReport, getRefund), and the DICT's copy is what is
	// taken, never the notice's content. A hold, a release and a return
	// all follow from what the intake records, so a forged or mistaken
	// notice must move nothing the DICT does not say.
	DICT NoticeDICT
}

// NoticeDICT is what the notices read at the DICT to confirm them
// (dict.HTTPClient has it).
type NoticeDICT interface {
	GetInfractionReport(ctx context.Context, id string) (dict.InfractionReport, error)
	GetRefund(ctx context.Context, id string) (dict.Refund, error)
}

// Webhooks are the notices' routes, under /webhooks.
func (n *Notices) Webhooks() []api.WebhookRoute {
	return []api.WebhookRoute{
		{Path: "/med/infraction-reports", MaxBytes: MaxNoticeBytes, Handle: n.report},
		{Path: "/med/refunds", MaxBytes: MaxNoticeBytes, Handle: n.refund},
	}
}

// noticeReceipt is the answer to a notice: the report (or the request) it
// is about, the status of our saga of the report, and whether the notice
// changed nothing (received before as it is).
type noticeReceipt struct {
	ID                 string `json:"id"`
	InfractionReportID string `json:"infraction_report_id,omitempty"`
	Status             string `json:"status"`
	Duplicate          bool   `json:"duplicate"`
}

// report is POST /webhooks/med/infraction-reports.
func (n *Notices) report(k api.Kit, c *gin.Context) {
	in, err := decodeReportNotice(k.WebhookBody(c))
	if err != nil {
		k.Fail(c, err)
		return
	}
	ctx := c.Request.Context()
	k.NamePIX(c, in.TransactionID)
	attrs := []any{"report_id", in.ID, "end_to_end_id", in.TransactionID, "dict_status", in.Status, "psp", k.WebhookPSP(c)}
	r, changed, err := Report{}, false, n.samePSP(ctx, k.WebhookPSP(c), in.TransactionID)
	if err == nil {
		in, err = n.confirmReport(ctx, in)
	}
	if err == nil {
		r, changed, err = n.Store.Intake(ctx, in)
	}
	if err != nil {
		n.refused(ctx, "med infraction report notice refused", err, attrs)
		k.Fail(c, err)
		return
	}
	n.Log.InfoContext(ctx, "med infraction report notice received", append(attrs, "status", r.Status, "duplicate", !changed)...)
	c.JSON(http.StatusAccepted, noticeReceipt{ID: r.ID.String(), Status: r.Status, Duplicate: !changed})
}

// refund is POST /webhooks/med/refunds.
func (n *Notices) refund(k api.Kit, c *gin.Context) {
	in, err := decodeRefundNotice(k.WebhookBody(c))
	if err != nil {
		k.Fail(c, err)
		return
	}
	ctx := c.Request.Context()
	k.NamePIX(c, in.TransactionID)
	attrs := []any{"refund_request_id", in.ID, "report_id", in.InfractionReportID, "end_to_end_id", in.TransactionID,
		"refund_status", in.Status, "psp", k.WebhookPSP(c)}
	r, changed, err := Report{}, false, n.samePSP(ctx, k.WebhookPSP(c), in.TransactionID)
	if err == nil {
		in, err = n.confirmRefund(ctx, in)
	}
	if err == nil {
		r, changed, err = n.Store.IntakeRefund(ctx, in)
	}
	if err != nil {
		n.refused(ctx, "med refund request notice refused", err, attrs)
		k.Fail(c, err)
		return
	}
	n.Log.InfoContext(ctx, "med refund request notice received", append(attrs, "status", r.Status, "duplicate", !changed)...)
	c.JSON(http.StatusAccepted, noticeReceipt{ID: in.ID, InfractionReportID: r.ID.String(), Status: r.Status, Duplicate: !changed})
}

// confirmReport reads a noticed report back from the DICT, when MED
// reaches it, and returns the DICT's copy to be taken instead (as the
// lister would): the notice is a wake-up, the DICT says what happened. A
// report the DICT does not have (for us) is ErrNotAtDICT, nothing
// recorded; its copy about another PIX than the notice's,
// ErrReportMismatch (the PSP checked by samePSP is the notice's PIX's); a
// DICT that does not answer fails the notice (the PSP delivers it again).
func (n *Notices) confirmReport(ctx context.Context, in dict.InfractionReport) (dict.InfractionReport, error) {
	if n.DICT == nil {
		return in, nil
	}
	seen, err := n.DICT.GetInfractionReport(ctx, in.ID)
	if err != nil {
		return dict.InfractionReport{}, n.unconfirmed(fmt.Sprintf("infraction report %s", in.ID), err)
	}
	if seen.TransactionID != in.TransactionID {
		return dict.InfractionReport{}, fmt.Errorf("%w: the DICT has report %s of PIX %s, the notice says %s",
			ErrReportMismatch, in.ID, seen.TransactionID, in.TransactionID)
	}
	return seen, nil
}

// confirmRefund is confirmReport for a refund request (getRefund): its
// status and amount are the DICT's, and a request the DICT does not have
// returns nothing. Its report is the notice's only when the DICT's copy
// does not name one (the DICT's schema leaves InfractionReportId
// optional): the intake still refuses a report of another PIX.
func (n *Notices) confirmRefund(ctx context.Context, in dict.Refund) (dict.Refund, error) {
	if n.DICT == nil {
		return in, nil
	}
	seen, err := n.DICT.GetRefund(ctx, in.ID)
	if err != nil {
		return dict.Refund{}, n.unconfirmed(fmt.Sprintf("refund request %s", in.ID), err)
	}
	switch {
	case seen.TransactionID != in.TransactionID:
		return dict.Refund{}, fmt.Errorf("%w: the DICT has refund request %s of PIX %s, the notice says %s",
			ErrReportMismatch, in.ID, seen.TransactionID, in.TransactionID)
	case seen.InfractionReportID == "":
		seen.InfractionReportID = in.InfractionReportID
	case !dict.SameID(seen.InfractionReportID, in.InfractionReportID):
		return dict.Refund{}, fmt.Errorf("%w: the DICT has refund request %s of report %s, the notice says %s",
			ErrReportMismatch, in.ID, seen.InfractionReportID, in.InfractionReportID)
	}
	return seen, nil
}

// unconfirmed is the error of a notice the DICT did not confirm: what
// the DICT does not have (a signed NotFound) is ErrNotAtDICT, a refusal;
// anything else fails the notice, to be delivered again.
func (n *Notices) unconfirmed(what string, err error) error {
	if errors.Is(err, dict.ErrNotFound) { // signed only (dict.ProblemError.Unwrap)
		return fmt.Errorf("%w: %s: %v", ErrNotAtDICT, what, err)
	}
	return fmt.Errorf("confirm the notice of %s at the DICT: %w", what, err)
}

// samePSP refuses (ErrWrongPSP) a notice about a PIX another PSP delivered
// to us: a PSP may not hold the funds of a PIX received through another.
// Unknown either way (signatures not required, the PIX not ours) it is the
// intake's to decide. A PIX of ours whose PSP is not on record
// (ErrPSPUnknown: a credit from before the credit recorded it, its inbox
// row deleted by the retention; a PIX the catch-up stored, not credited
// yet) is not taken on any PSP's word: the notice
// is answered 503, which the PSP delivers again, and logged for an
// operator, who records the PSP (docs/med.md).
func (n *Notices) samePSP(ctx context.Context, psp, endToEndID string) error {
	if psp == "" {
		return nil
	}
	delivered, err := n.Store.CreditPSP(ctx, endToEndID)
	if errors.Is(err, ErrPSPUnknown) {
		n.Log.ErrorContext(ctx, "med notice not taken: the PSP that delivered its PIX is not on record; "+
			"the PSP delivers it again: record the PSP on the credit (docs/med.md, A bank behind a PSP)",
			"end_to_end_id", endToEndID, "psp", psp, "error", err)
	}
	if err != nil {
		return err
	}
	if delivered != "" && delivered != psp {
		return fmt.Errorf("%w: PIX %s came through %s, the notice through %s", ErrWrongPSP, endToEndID, delivered, psp)
	}
	return nil
}

// refused logs a notice the saga's door refused (a report that does not
// match the one received, a request of a report not received yet); a
// fault is logged where it is answered.
func (n *Notices) refused(ctx context.Context, msg string, err error, attrs []any) {
	if pix.IsRefusal(err) {
		n.Log.WarnContext(ctx, msg, append(attrs, "error", err)...)
	}
}

// ispbPattern is the DICT's ISPB: eight digits.
var ispbPattern = regexp.MustCompile(`^[0-9]{8}$`)

// notice reads a notice's body: one JSON object (notification.CheckJSON's
// rules) whose member element (InfractionReport, Refund) is the DICT's
// element, returned by its members' exact names. Other members (the
// DICT's ResponseTime, CorrelationId, a PSP's own) are accepted and not
// read, as the DICT's answers may grow.
func notice(body []byte, element string) (map[string]json.RawMessage, error) {
	if err := notification.CheckJSON(body); err != nil {
		return nil, err
	}
	top, err := notification.DecodeObject(body, "body")
	if err != nil {
		return nil, err
	}
	if !notification.Present(top[element]) {
		return nil, pix.Invalid(element, "is required: the notice carries the DICT's %s", element)
	}
	return notification.DecodeObject(top[element], element)
}

// fields reads a DICT element's members by their names, refusals naming
// them with the element's name ("InfractionReport.Id"); the first refusal
// is kept (err) and the members read after it are not used.
type fields struct {
	element string
	m       map[string]json.RawMessage
	err     error
}

func (f *fields) name(member string) string { return f.element + "." + member }

// refuse keeps err if it is the first.
func (f *fields) refuse(err error) {
	if f.err == nil {
		f.err = err
	}
}

// optional is a string member that may be absent or null ("").
func (f *fields) optional(member string) string {
	if !notification.Present(f.m[member]) {
		return ""
	}
	s, err := notification.RequiredString(f.m[member], f.name(member))
	f.refuse(err)
	return s
}

// required is a string member that must be present and not empty.
func (f *fields) required(member string) string {
	s, err := notification.RequiredString(f.m[member], f.name(member))
	if err == nil && s == "" {
		err = pix.Invalid(f.name(member), "must not be empty")
	}
	f.refuse(err)
	return s
}

// check refuses member's value unless ok.
func (f *fields) check(ok bool, member, format string, args ...any) {
	if !ok {
		f.refuse(pix.Invalid(f.name(member), format, args...))
	}
}

// id is a member that must be the DICT's id (a UUID).
func (f *fields) id(member string) string {
	s := f.required(member)
	_, err := uuid.Parse(s)
	f.check(err == nil && len(s) == 36, member, "must be the DICT's id, a UUID")
	return s
}

// ispb is a member that must be an ISPB.
func (f *fields) ispb(member string) string {
	s := f.required(member)
	f.check(ispbPattern.MatchString(s), member, "must be an ISPB, eight digits")
	return s
}

// endToEndID is a member that must be a PIX's end-to-end id.
func (f *fields) endToEndID(member string) string {
	s := f.required(member)
	f.check(pix.ValidEndToEndID(s), member, "must be the PIX's EndToEndId")
	return s
}

// text is an optional free text of at most 2,000 characters (the DICT's
// ReportDetails, AnalysisDetails, RefundDetails).
func (f *fields) text(member string) string {
	s := f.optional(member)
	f.check(utf8.RuneCountInString(s) <= MaxDetailsLength, member, "must be at most %d characters", MaxDetailsLength)
	return s
}

// oneOf is a required member that must be one of values (the DICT's
// enumeration the saga acts on).
func (f *fields) oneOf(member string, values ...string) string {
	s := f.required(member)
	f.check(slices.Contains(values, s), member, "must be one of the DICT's: %s", strings.Join(values, ", "))
	return s
}

// time is a required timestamp, strictly RFC 3339's date-time as the
// DICT's specification has it (rfc3339.Parse).
func (f *fields) time(member string) time.Time {
	s, err := notification.RequiredString(f.m[member], f.name(member))
	if err != nil {
		f.refuse(err)
		return time.Time{}
	}
	t, err := rfc3339.Parse(s)
	f.check(err == nil, member, "must be an RFC 3339 date-time such as 2026-11-29T12:00:00.000Z")
	return t
}

// MaxClockAhead is how far in the future a notice's LastModified may be
// (the PSP's clock and ours differ a little): a later one would stand
// above every true modification of the report (which an older copy must
// not overwrite), and is refused.
const MaxClockAhead = 5 * time.Minute

// modified is the LastModified member: a timestamp at most MaxClockAhead
// ahead of now.
func (f *fields) modified(member string, now time.Time) time.Time {
	t := f.time(member)
	f.check(!t.After(now.Add(MaxClockAhead)), member, "must not be in the future")
	return t
}

// optionalOneOf is an optional member that, present, must be one of
// values (the specification's enumeration).
func (f *fields) optionalOneOf(member string, values ...string) string {
	s := f.optional(member)
	f.check(s == "" || slices.Contains(values, s), member, "must be one of the DICT's: %s", strings.Join(values, ", "))
	return s
}

// rtrIDPattern is the DICT's RefundTransactionId: the devolução's
// EndToEndId, 32 word characters.
var rtrIDPattern = regexp.MustCompile(`^\w{32}$`)

// decodeReportNotice reads POST /webhooks/med/infraction-reports: the
// DICT's InfractionReport, its required elements as the DICT requires
// them. InfractionType is kept as sent (the intake analyses only the ones
// it knows: Store.toAnalyse); ReportedBy and Status must be the DICT's;
// LastModified at most MaxClockAhead in the future.
func decodeReportNotice(body []byte) (dict.InfractionReport, error) {
	m, err := notice(body, "InfractionReport")
	if err != nil {
		return dict.InfractionReport{}, err
	}
	f := &fields{element: "InfractionReport", m: m}
	r := dict.InfractionReport{
		ID:             f.id("Id"),
		TransactionID:  f.endToEndID("TransactionId"),
		InfractionType: dict.InfractionType(f.required("InfractionType")),
		ReportedBy:     dict.ReportedBy(f.oneOf("ReportedBy", string(dict.ReportedByDebited), string(dict.ReportedByCredited))),
		Status: dict.InfractionReportStatus(f.oneOf("Status", string(dict.ReportOpen), string(dict.ReportAcknowledged),
			string(dict.ReportClosed), string(dict.ReportCancelled))),
		DebitedParticipant:  f.ispb("DebitedParticipant"),
		CreditedParticipant: f.ispb("CreditedParticipant"),
		CreationTime:        f.time("CreationTime"),
		LastModified:        f.modified("LastModified", time.Now()),
		ReportDetails:       f.text("ReportDetails"),
		TransactionType:     f.optional("TransactionType"),
		TransactionResult:   f.optional("TransactionResult"),
		AnalysisResult:      dict.AnalysisResult(f.optional("AnalysisResult")),
		AnalysisDetails:     f.text("AnalysisDetails"),
	}
	f.check(r.AnalysisResult == "" || r.AnalysisResult.Valid(), "AnalysisResult", "must be AGREED or DISAGREED")
	if f.err != nil {
		return dict.InfractionReport{}, f.err
	}
	return r, nil
}

// decodeRefundNotice reads POST /webhooks/med/refunds: the DICT's Refund,
// its required elements as the DICT requires them, and its
// InfractionReportId, which the DICT's schema leaves optional but MED's
// requests carry, as the saga finds the report by it. RefundAmount is the
// DICT's number of reais, read exactly (dict.Amount), never through a
// float.
func decodeRefundNotice(body []byte) (dict.Refund, error) {
	m, err := notice(body, "Refund")
	if err != nil {
		return dict.Refund{}, err
	}
	f := &fields{element: "Refund", m: m}
	r := dict.Refund{
		ID:                 f.id("Id"),
		InfractionReportID: f.id("InfractionReportId"),
		TransactionID:      f.endToEndID("TransactionId"),
		RefundReason: dict.RefundReason(f.oneOf("RefundReason", string(dict.RefundFraud), string(dict.RefundOperationalFlaw),
			string(dict.RefundReasonCancelled))),
		RefundAmount: f.amount("RefundAmount"),
		Status: dict.RefundStatus(f.oneOf("Status", string(dict.RefundOpen), string(dict.RefundClosed),
			string(dict.RefundCancelled))),
		RequestingParticipant: f.ispb("RequestingParticipant"),
		ContestedParticipant:  f.ispb("ContestedParticipant"),
		CreationTime:          f.time("CreationTime"),
		LastModified:          f.modified("LastModified", time.Now()),
		RefundDetails:         f.text("RefundDetails"),
		AnalysisResult: dict.RefundAnalysisResult(f.optionalOneOf("AnalysisResult", string(dict.TotallyAccepted),
			string(dict.PartiallyAccepted), string(dict.Rejected))),
		AnalysisDetails: f.text("AnalysisDetails"),
		RefundRejectionReason: dict.RefundRejectionReason(f.optionalOneOf("RefundRejectionReason", string(dict.RejectionNoBalance),
			string(dict.RejectionAccountClosure), string(dict.RejectionCannotRefund), string(dict.RejectionOther))),
		RefundTransactionID: f.optional("RefundTransactionId"),
	}
	f.check(r.RefundTransactionID == "" || rtrIDPattern.MatchString(r.RefundTransactionID), "RefundTransactionId",
		"must be the devolução's EndToEndId, 32 letters or digits")
	if f.err != nil {
		return dict.Refund{}, f.err
	}
	return r, nil
}

// amount reads the DICT's RefundAmount, a JSON number of reais with at
// most two decimals, into centavos: from 1 centavo to the largest PIX.
func (f *fields) amount(member string) dict.Amount {
	raw := f.m[member]
	if !notification.Present(raw) {
		f.refuse(pix.Invalid(f.name(member), "is required"))
		return 0
	}
	var number json.Number
	var a dict.Amount
	if raw[0] == '"' || json.Unmarshal(raw, &number) != nil || a.UnmarshalText([]byte(number)) != nil {
		f.refuse(pix.Invalid(f.name(member), "must be a number of reais with at most two decimals, such as 150.00"))
		return 0
	}
	f.check(a >= 1 && int64(a) <= pix.MaxAmountCents, member, "must be from 0.01 to the largest PIX")
	return a
}
