package pspsim

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/pixbank/pix/internal/psp"
)

// MED through the PSP (docs/med.md, "A bank behind a PSP"): the PSP, the
// DICT participant of a bank behind it, notices the bank of the DICT's
// infraction reports and refund requests about the PIX it credited, in
// the DICT's vocabulary as JSON, at Options.MEDWebhookURL
// (/infraction-reports, /refunds), signed and over TLS as the PIX
// webhooks. The control routes stand for the DICT's side and for the
// PSP's own channel, which has no standard call:
//
//	POST /sim/med/reports                    open a report about a PIX, {"end_to_end_id","details"?,"status"?}: noticed
//	GET  /sim/med/reports/{id}               the report and its refund request, as the PSP holds them
//	POST /sim/med/reports/{id}/close         the bank's close through the PSP, {"result","details"?}: noticed
//	POST /sim/med/reports/{id}/cancel        the reporter cancels it: noticed
//	POST /sim/med/reports/{id}/refund        the payer's participant's refund request, {"amount_cents"?,"reason"?}: noticed
//	POST /sim/med/reports/{id}/refund/close  the bank's close of the request through the PSP, {"result","refund_transaction_id"?}: noticed
//	POST /sim/med/reports/{id}/notify        the report's notices again, as they are (a redelivery)
//
// Each answers the report as the PSP holds it and how its notice went
// ("delivered", the failure, or "" without a URL): one attempt, in the
// request, so that a test sees the bank's answer. While a refund request
// is open, a devolução of its PIX is answered with the natureza of a
// return within MED (the API Pix's Devolucao.natureza: MED_FRAUDE for a
// request for fraud, MED_OPERACIONAL for an operational flaw), though the
// bank asks ORIGINAL, the only natureza of a common PIX a request takes.

// The participants the simulator's reports name: the payer's (the reporter)
// and itself (the credited participant, the bank's PSP).
const (
	medPayerISPB = "11111111"
	medPSPISPB   = simISPB
)

// The natures of a devolução within MED (the API Pix's Devolucao.natureza,
// answers only).
const (
	natureMEDFraud       = "MED_FRAUDE"
	natureMEDOperational = "MED_OPERACIONAL"
)

// medReport is an infraction report as the PSP holds it.
type medReport struct {
	id, endToEndID, infractionType, details, status string
	result, analysisDetails                         string
	created, modified                               time.Time
	refund                                          *medRefund
}

// medRefund is a refund request of a report.
type medRefund struct {
	id, reason, status, details, result, rtrID string
	amountCents                                int64
	created, modified                          time.Time
}

// element is r as the DICT's InfractionReport, JSON.
func (r *medReport) element() map[string]any {
	e := map[string]any{"Id": r.id, "TransactionId": r.endToEndID, "TransactionType": "SPI", "TransactionResult": "SETTLED",
		"InfractionType": r.infractionType, "ReportedBy": "DEBITED_PARTICIPANT", "ReportDetails": r.details, "Status": r.status,
		"DebitedParticipant": medPayerISPB, "CreditedParticipant": medPSPISPB,
		"CreationTime": r.created.UTC().Format(time.RFC3339Nano), "LastModified": r.modified.UTC().Format(time.RFC3339Nano)}
	if r.result != "" {
		e["AnalysisResult"], e["AnalysisDetails"] = r.result, r.analysisDetails
	}
	return e
}

// element is q, of report r, as the DICT's Refund, JSON; its amount the
// DICT's number of reais.
func (q *medRefund) element(r *medReport) map[string]any {
	e := map[string]any{"Id": q.id, "TransactionId": r.endToEndID, "RefundReason": q.reason,
		"RefundAmount": json.Number(psp.FormatValor(q.amountCents)), "RefundDetails": q.details, "Status": q.status,
		"RequestingParticipant": medPayerISPB, "ContestedParticipant": medPSPISPB, "InfractionReportId": r.id,
		"CreationTime": q.created.UTC().Format(time.RFC3339Nano), "LastModified": q.modified.UTC().Format(time.RFC3339Nano)}
	if q.result != "" {
		e["AnalysisResult"], e["RefundTransactionId"] = q.result, q.rtrID
	}
	return e
}

// medView is a report as the control routes answer it.
type medView struct {
	InfractionReport map[string]any `json:"InfractionReport"`
	Refund           map[string]any `json:"Refund,omitempty"`
	// Delivery is how the notice of this change went: "delivered", the
	// failure, or "" (no MEDWebhookURL, or nothing noticed).
	Delivery string `json:"delivery"`
}

// view is r as medView. The caller holds s.mu.
func (r *medReport) view() medView {
	v := medView{InfractionReport: r.element()}
	if r.refund != nil {
		v.Refund = r.refund.element(r)
	}
	return v
}

// medNature is the natureza the answers give a devolução of the PIX
// endToEndID asked as nature: within MED (a refund request open on a
// report of it), the SPI's nature of the MED return. The caller holds
// s.mu.
func (s *Simulator) medNature(endToEndID, nature string) string {
	if nature != natureOriginal {
		return nature
	}
	for _, r := range s.medReports {
		if r.endToEndID != endToEndID || r.refund == nil || r.refund.status != "OPEN" {
			continue
		}
		if r.refund.reason == "OPERATIONAL_FLAW" {
			return natureMEDOperational
		}
		return natureMEDFraud
	}
	return nature
}

// later is the LastModified of a change at now: after prev, whatever the
// clock (a test's may stand still), as the DICT's only grow.
func later(now, prev time.Time) time.Time {
	if now.After(prev) {
		return now
	}
	return prev.Add(time.Millisecond)
}

func (s *Simulator) medRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /sim/med/reports", s.handleOpenReport)
	mux.HandleFunc("GET /sim/med/reports/{id}", s.handleGetReport)
	mux.HandleFunc("POST /sim/med/reports/{id}/close", s.handleCloseReport)
	mux.HandleFunc("POST /sim/med/reports/{id}/cancel", s.handleCancelReport)
	mux.HandleFunc("POST /sim/med/reports/{id}/refund", s.handleOpenRefund)
	mux.HandleFunc("POST /sim/med/reports/{id}/refund/close", s.handleCloseRefund)
	mux.HandleFunc("POST /sim/med/reports/{id}/notify", s.handleNotifyReport)
}

// handleOpenReport is POST /sim/med/reports: the DICT's report about a PIX
// the PSP credited for the bank, OPEN, or ACKNOWLEDGED (the default: the
// PSP, the participant, acknowledges on receipt), noticed to the bank.
func (s *Simulator) handleOpenReport(w http.ResponseWriter, r *http.Request) {
	var body struct {
		EndToEndID     string `json:"end_to_end_id"`
		Details        string `json:"details"`
		InfractionType string `json:"infraction_type"`
		Status         string `json:"status"`
	}
	if err := decodeBody(w, r, &body); err != nil {
		writeDecodeError(w, err)
		return
	}
	status := cmp.Or(body.Status, "ACKNOWLEDGED")
	switch {
	case checkEndToEndID(body.EndToEndID) != nil:
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, checkEndToEndID(body.EndToEndID).Error())
		return
	case status != "OPEN" && status != "ACKNOWLEDGED":
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "status must be OPEN or ACKNOWLEDGED")
		return
	}
	s.mu.Lock()
	now := s.now()
	rep := &medReport{id: uuid.NewString(), endToEndID: body.EndToEndID, infractionType: cmp.Or(body.InfractionType, "FRAUD"),
		details: body.Details, status: status, created: now, modified: now}
	s.medReports[rep.id] = rep
	s.mu.Unlock()
	note(r, slog.String("report_id", rep.id))
	s.noticeAnswer(w, r, http.StatusCreated, rep.id, false)
}

// handleGetReport is GET /sim/med/reports/{id}.
func (s *Simulator) handleGetReport(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	rep, ok := s.medReports[r.PathValue("id")]
	var v medView
	if ok {
		v = rep.view()
	}
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, CodeNotFound, "no infraction report with this id")
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// handleCloseReport is POST /sim/med/reports/{id}/close: the bank closes
// the report through the PSP's own channel.
func (s *Simulator) handleCloseReport(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Result  string `json:"result"`
		Details string `json:"details"`
	}
	if err := decodeBody(w, r, &body); err != nil {
		writeDecodeError(w, err)
		return
	}
	if body.Result != "AGREED" && body.Result != "DISAGREED" {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "result must be AGREED or DISAGREED")
		return
	}
	s.changeReport(w, r, false, func(rep *medReport, now time.Time) string {
		if rep.status != "OPEN" && rep.status != "ACKNOWLEDGED" {
			return "the report is " + rep.status
		}
		rep.status, rep.result, rep.analysisDetails, rep.modified = "CLOSED", body.Result, body.Details, later(now, rep.modified)
		return ""
	})
}

// handleCancelReport is POST /sim/med/reports/{id}/cancel: its reporter
// cancels the report (and an open refund request with it).
func (s *Simulator) handleCancelReport(w http.ResponseWriter, r *http.Request) {
	s.changeReport(w, r, false, func(rep *medReport, now time.Time) string {
		if rep.status == "CANCELLED" {
			return "the report is CANCELLED"
		}
		rep.status, rep.modified = "CANCELLED", later(now, rep.modified)
		if rep.refund != nil && rep.refund.status == "OPEN" {
			rep.refund.status, rep.refund.modified = "CANCELLED", later(now, rep.refund.modified)
		}
		return ""
	})
}

// handleOpenRefund is POST /sim/med/reports/{id}/refund: the payer's
// participant requests the refund of a report closed AGREED, of
// amount_cents (default: the PIX's amount, when the PSP received it).
func (s *Simulator) handleOpenRefund(w http.ResponseWriter, r *http.Request) {
	var body struct {
		AmountCents int64  `json:"amount_cents"`
		Reason      string `json:"reason"`
		Details     string `json:"details"`
	}
	if err := decodeBody(w, r, &body); err != nil {
		writeDecodeError(w, err)
		return
	}
	reason := cmp.Or(body.Reason, "FRAUD")
	if reason != "FRAUD" && reason != "OPERATIONAL_FLAW" {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "reason must be FRAUD or OPERATIONAL_FLAW")
		return
	}
	s.changeReport(w, r, true, func(rep *medReport, now time.Time) string {
		amount := body.AmountCents
		if p, ok := s.pixes[rep.endToEndID]; ok && amount == 0 {
			amount = p.amountCents
		}
		switch {
		case rep.status != "CLOSED" || rep.result != "AGREED":
			return "a refund is requested of a report closed AGREED; this one is " + rep.status + " " + rep.result
		case rep.refund != nil && rep.refund.status == "OPEN":
			return "the report has an open refund request"
		case amount <= 0 || amount > psp.MaxValorCents:
			return "amount_cents is required (the PSP did not receive the PIX) and at most the largest PIX"
		}
		rep.refund = &medRefund{id: uuid.NewString(), reason: reason, status: "OPEN", details: body.Details, amountCents: amount,
			created: now, modified: now}
		return ""
	})
}

// handleCloseRefund is POST /sim/med/reports/{id}/refund/close: the bank
// closes the refund request through the PSP's own channel.
func (s *Simulator) handleCloseRefund(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Result              string `json:"result"`
		RefundTransactionID string `json:"refund_transaction_id"`
	}
	if err := decodeBody(w, r, &body); err != nil {
		writeDecodeError(w, err)
		return
	}
	if body.Result != "TOTALLY_ACCEPTED" && body.Result != "PARTIALLY_ACCEPTED" && body.Result != "REJECTED" {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "result must be TOTALLY_ACCEPTED, PARTIALLY_ACCEPTED or REJECTED")
		return
	}
	s.changeReport(w, r, true, func(rep *medReport, now time.Time) string {
		if rep.refund == nil || rep.refund.status != "OPEN" {
			return "the report has no open refund request"
		}
		q := rep.refund
		q.status, q.result, q.rtrID, q.modified = "CLOSED", body.Result, body.RefundTransactionID, later(now, q.modified)
		return ""
	})
}

// handleNotifyReport is POST /sim/med/reports/{id}/notify: the report's
// notices again, unchanged, as a PSP redelivers.
func (s *Simulator) handleNotifyReport(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	rep, ok := s.medReports[r.PathValue("id")]
	refund := ok && rep.refund != nil
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, CodeNotFound, "no infraction report with this id")
		return
	}
	s.noticeAnswer(w, r, http.StatusOK, rep.id, refund)
}

// changeReport runs change on the report of the request's path under the
// lock, then notices the bank of it (its refund request with refund) and
// answers it; a change that says why not is 409 conflict, nothing
// noticed.
func (s *Simulator) changeReport(w http.ResponseWriter, r *http.Request, refund bool, change func(*medReport, time.Time) string) {
	id := r.PathValue("id")
	note(r, slog.String("report_id", id))
	s.mu.Lock()
	rep, ok := s.medReports[id]
	why := ""
	if ok {
		why = change(rep, s.now())
	}
	s.mu.Unlock()
	switch {
	case !ok:
		writeError(w, http.StatusNotFound, CodeNotFound, "no infraction report with this id")
	case why != "":
		writeError(w, http.StatusConflict, "conflict", why)
	default:
		s.noticeAnswer(w, r, http.StatusOK, id, refund)
	}
}

// noticeAnswer notices the bank of report id (its infraction report; with
// refund, its refund request) as it is now, and answers the report with
// how the notice went.
func (s *Simulator) noticeAnswer(w http.ResponseWriter, r *http.Request, status int, id string, refund bool) {
	s.mu.Lock()
	rep := s.medReports[id]
	v := rep.view()
	s.mu.Unlock()
	path, body := "/infraction-reports", map[string]any{"InfractionReport": v.InfractionReport}
	if refund {
		path, body = "/refunds", map[string]any{"Refund": v.Refund}
	}
	v.Delivery = s.notifyMED(r.Context(), path, body)
	note(r, slog.String("delivery", v.Delivery))
	writeJSON(w, status, v)
}

// notifyMED posts one MED notice to the bank, at once, once: "delivered",
// the failure, or "" without Options.MEDWebhookURL.
func (s *Simulator) notifyMED(ctx context.Context, path string, body map[string]any) string {
	if s.medWebhookURL == "" {
		return ""
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return fmt.Sprintf("encode notice: %v", err)
	}
	hc := s.webhookClient()
	defer hc.CloseIdleConnections()
	m := webhookMessage{id: newWebhookID(), url: strings.TrimRight(s.medWebhookURL, "/") + path, body: raw}
	if err := s.sendWebhook(ctx, hc, m); err != nil {
		s.log.Warn("psp simulator med notice failed", "url", m.url, "webhook_id", m.id, "error", err)
		return err.Error()
	}
	s.log.Info("psp simulator med notice delivered", "url", m.url, "webhook_id", m.id)
	return "delivered"
}
