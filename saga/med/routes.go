package med

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/notification"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/sagakit"
)

// The operator routes (api/openapi/pix-api/med.yaml), scope pix:admin
// (ADMIN_TOKEN, or a JWT with pix:admin); a customer's token is refused
// (403) before a handler runs:
//
//	GET  /pix/med/reports                 every report, oldest first, a page at a time
//	GET  /pix/med/reports/{id}            the report and its saga's state
//	POST /pix/med/reports/{id}/analysis   Idempotency-Key: the operator's analysis (AGREED|DISAGREED, details)
//	POST /pix/med/reports/{id}/release    Idempotency-Key: an operator's release of a report stopped at the DICT, its request closed there (details)
//	GET  /pix/med/refund-requests         the refund requests kept on their own (no report answers them), oldest first, paged
//	GET  /pix/med/refund-requests/{id}    one of them
//	GET  /pix/med/quarantine              the items of the DICT's lists the lister quarantined, not cleared, paged
//	DELETE /pix/med/quarantine/{kind}/{id}  an operator's clear of one, decided by hand (?through=: the LastModified decided, and earlier copies)
//
// and the med section of a credit's view (GET /pix/credits/{id}: its
// customer sees what is held and returned, not the reporter's words).

// MaxBodyBytes bounds the body of POST .../analysis.
const MaxBodyBytes = 8 << 10

// MaxDetailsLength is the longest analysis the DICT takes
// (AnalysisDetails).
const MaxDetailsLength = 2000

// validDetails refuses an operator's text s of field (pix.Invalid) of
// fewer than least or more than most characters, or holding a control
// character or an invalid byte (notification.HasControlOrInvalid): the
// database's text takes no NUL, and what is kept or sent to the DICT is
// what the operator wrote, never a sanitised stand-in.
func validDetails(field, s string, least, most int) error {
	if n := utf8.RuneCountInString(s); n < least || n > most {
		return pix.Invalid(field, "must be %d to %d characters", least, most)
	}
	if notification.HasControlOrInvalid(s) {
		return pix.Invalid(field, "must hold no control character or invalid byte")
	}
	return nil
}

// analysisFields are the members of POST .../analysis.
var analysisFields = []string{"result", "details"}

// RouteStore is what the routes need of the database.
type RouteStore interface {
	Get(ctx context.Context, id uuid.UUID) (Report, error)
	OfPIX(ctx context.Context, endToEndID string, limit int) ([]Report, error)
	List(ctx context.Context, after *ListKey, limit int) ([]Report, error)
	AnalyseKeyed(ctx context.Context, r *db.Reservation, id uuid.UUID, result dict.AnalysisResult, details, by string,
		render func(Report) ([]byte, error)) (Report, bool, error)
	ReleaseKeyed(ctx context.Context, r *db.Reservation, id uuid.UUID, details, by string,
		render func(Report) ([]byte, error)) (Report, bool, error)
	KeptRequests(ctx context.Context, after *KeptKey, limit int) ([]KeptRequest, error)
	KeptRequest(ctx context.Context, id uuid.UUID) (KeptRequest, error)
	QuarantinedItems(ctx context.Context, after *QuarantineKey, limit int) ([]QuarantinedItem, error)
	ResolveQuarantined(ctx context.Context, kind, id string, through time.Time) (QuarantineCleared, error)
}

// Handlers serve the saga's routes.
type Handlers struct {
	Store    RouteStore
	Keys     api.KeyStore
	Temporal sagakit.Signaller
	Log      *slog.Logger
}

// HTTP is the saga's HTTP side: its routes, each under its scope, and its
// section of a credit's view.
func (h *Handlers) HTTP() api.SagaHTTP {
	const report, requests = "/pix/med/reports/:id", "/pix/med/refund-requests"
	return api.SagaHTTP{
		Routes: []api.Route{
			{Method: http.MethodGet, Path: "/pix/med/reports", Scope: auth.ScopeAdmin, Handle: h.list},
			{Method: http.MethodGet, Path: report, Scope: auth.ScopeAdmin, Handle: h.get},
			{Method: http.MethodPost, Path: report + "/analysis", Scope: auth.ScopeAdmin, Handle: h.analyse},
			{Method: http.MethodPost, Path: report + "/release", Scope: auth.ScopeAdmin, Handle: h.release},
			{Method: http.MethodGet, Path: requests, Scope: auth.ScopeAdmin, Handle: h.listKept},
			{Method: http.MethodGet, Path: requests + "/:id", Scope: auth.ScopeAdmin, Handle: h.getKept},
			{Method: http.MethodGet, Path: "/pix/med/quarantine", Scope: auth.ScopeAdmin, Handle: h.listQuarantine},
			// *id: the rest of the path, so that an id with a '/' (as
			// listed, sent escaped %2F or not) is one id, not a 404.
			{Method: http.MethodDelete, Path: "/pix/med/quarantine/:kind/*id", Scope: auth.ScopeAdmin, Handle: h.resolveQuarantine},
		},
		CreditSection: api.CreditSection{Name: "med", Of: h.section},
	}
}

// view is a report as the operator routes answer it: neither the
// reporter's free text nor the DICT's problem text in clear (both are the
// DICT's or its participants' words, and may carry a payer's data): the
// first as its length, the second as its code (ProblemRefused, ...); the
// database and the saga's log keep them.
type view struct {
	Report
	// ReportDetails and DICTProblem, never set, hide the report's fields
	// of the same names (a field of the view's own depth wins);
	// RefundCloseSentAt and RefundRequestDICTResult too: the report
	// carries them to the workflow (JSON), the operators' schema
	// (MEDReport, additionalProperties: false) does not have them.
	ReportDetails           *string    `json:"report_details,omitempty"`
	DICTProblem             *string    `json:"dict_problem,omitempty"`
	RefundCloseSentAt       *time.Time `json:"refund_close_sent_at,omitempty"`
	RefundRequestDICTResult *string    `json:"refund_request_dict_result,omitempty"`
	ReportDetailsChars      int        `json:"report_details_chars"`
	DICTProblemCode         *string    `json:"dict_problem_code"`
	WorkflowID              string     `json:"workflow_id"`
	TemporalUIURL           string     `json:"temporal_ui_url"`
}

func viewOf(k api.Kit, r Report) view {
	id := WorkflowID(r.ID.String())
	v := view{Report: r, ReportDetailsChars: utf8.RuneCountInString(r.ReportDetails), WorkflowID: id, TemporalUIURL: k.WorkflowURL(id)}
	if r.DICTProblem != nil {
		code, _, _ := strings.Cut(*r.DICTProblem, ":")
		v.DICTProblemCode = &code
	}
	return v
}

// customerView is a report as its PIX's customer sees it, in the credit's
// view: what is held and returned, and how it ended; not the reporter's
// words, the analysis, nor the operators' names.
type customerView struct {
	ID            uuid.UUID `json:"id"`
	Status        string    `json:"status"`
	EndCause      *string   `json:"end_cause"`
	HeldCents     int64     `json:"held_cents"`
	ReturnedCents int64     `json:"returned_cents"`
	CreatedAt     string    `json:"created_at"`
}

func customerViewOf(r Report) customerView {
	return customerView{ID: r.ID, Status: r.Status, EndCause: r.EndCause, HeldCents: r.HeldCents, ReturnedCents: r.ReturnedCents,
		CreatedAt: r.CreatedAt.Format("2006-01-02T15:04:05.999999Z07:00")}
}

// analysis is a decoded POST .../analysis.
type analysis struct {
	Result  dict.AnalysisResult
	Details string
}

// decodeAnalysis validates a POST .../analysis body: AGREED or DISAGREED,
// and details of at most 2,000 characters ("" allowed).
func decodeAnalysis(body []byte) (analysis, error) {
	m, err := api.DecodeRequest(body, "analysis", analysisFields...)
	if err != nil {
		return analysis{}, err
	}
	result, err := notification.RequiredString(m["result"], "result")
	if err != nil {
		return analysis{}, err
	}
	a := analysis{Result: dict.AnalysisResult(result)}
	if !a.Result.Valid() {
		return analysis{}, pix.Invalid("result", "must be AGREED or DISAGREED")
	}
	if raw, ok := m["details"]; ok {
		if err := json.Unmarshal(raw, &a.Details); err != nil {
			return analysis{}, pix.Invalid("details", "must be a string")
		}
	}
	if err := validDetails("details", a.Details, 0, MaxDetailsLength); err != nil {
		return analysis{}, err
	}
	return a, nil
}

// reportID reads the route's report id.
func reportID(c *gin.Context) (uuid.UUID, error) {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return uuid.Nil, pix.Invalid("id", "must be an infraction report id (a UUID)")
	}
	return id, nil
}

// get is GET /pix/med/reports/{id}.
func (h *Handlers) get(k api.Kit, c *gin.Context) {
	id, err := reportID(c)
	if err != nil {
		k.Fail(c, err)
		return
	}
	r, err := h.Store.Get(c.Request.Context(), id)
	if err != nil {
		k.Fail(c, err)
		return
	}
	k.NamePIX(c, r.EndToEndID)
	c.JSON(http.StatusOK, viewOf(k, r))
}

// list is GET /pix/med/reports[?limit=…][&cursor=…]: every report,
// oldest first, a page at a time (api.PageOf).
func (h *Handlers) list(k api.Kit, c *gin.Context) {
	p, err := api.PageOf[ListKey](c)
	if err != nil {
		k.Fail(c, err)
		return
	}
	found, err := h.Store.List(c.Request.Context(), p.After, p.Fetch())
	if err != nil {
		k.Fail(c, err)
		return
	}
	views := make([]view, 0, len(found))
	for _, r := range found {
		views = append(views, viewOf(k, r))
	}
	api.AnswerPage(k, c, "reports", p, views, func(v view) ListKey { return ListKeyOf(v.Report) })
}

// listKept is GET /pix/med/refund-requests[?limit=…][&cursor=…]: the
// refund requests kept on their own (no report answers them: on-call's
// while OPEN at the DICT, PixMEDRefundRequestNotTaken), oldest first, a
// page at a time (api.PageOf). They carry no free text of the DICT's.
func (h *Handlers) listKept(k api.Kit, c *gin.Context) {
	p, err := api.PageOf[KeptKey](c)
	if err != nil {
		k.Fail(c, err)
		return
	}
	found, err := h.Store.KeptRequests(c.Request.Context(), p.After, p.Fetch())
	if err != nil {
		k.Fail(c, err)
		return
	}
	api.AnswerPage(k, c, "refund_requests", p, found, KeptKeyOf)
}

// getKept is GET /pix/med/refund-requests/{id}: one request kept on its
// own; 404 med_refund_request_not_found for any other id (a request its
// report answers is shown with the report).
func (h *Handlers) getKept(k api.Kit, c *gin.Context) {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		k.Fail(c, pix.Invalid("id", "must be a refund request id (a UUID)"))
		return
	}
	q, err := h.Store.KeptRequest(c.Request.Context(), id)
	if err != nil {
		k.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, q)
}

// analyse is POST /pix/med/reports/{id}/analysis behind the
// Idempotency-Key layer (the operator's keys): the analysis recorded (201;
// the same analysis again, the report as it is), then the report's run
// woken, which closes the report at the DICT. 422 med_report_analysed for
// another analysis, med_report_not_analysable past it.
func (h *Handlers) analyse(k api.Kit, c *gin.Context) {
	serveOnReport(h, k, c, reportOperation[analysis]{what: "med analysis", done: "infraction report analysed", hash: "pix-med-analysis",
		lost: "infraction report analysed, its run not woken: it reads the report within a day", decode: decodeAnalysis,
		decide: func(ctx context.Context, res *db.Reservation, id uuid.UUID, a analysis, by string, render func(Report) ([]byte, error)) (Report, bool, error) {
			return h.Store.AnalyseKeyed(ctx, res, id, a.Result, a.Details, by, render)
		},
		attrs: func(a analysis) []any { return []any{"result", a.Result} }})
}

// reportOperation is an operator's keyed POST on the report of the route's
// id (serveOnReport): decide records it and the key's answer (render's
// body of the report after) in one transaction; lost is the log's word
// when the run's wake-up after it is lost; attrs, the log's attributes of
// the request (nil: none).
type reportOperation[Req any] struct {
	what, done, hash, lost string
	decode                 func([]byte) (Req, error)
	decide                 func(ctx context.Context, res *db.Reservation, id uuid.UUID, req Req, by string, render func(Report) ([]byte, error)) (Report, bool, error)
	attrs                  func(Req) []any
}

// serveOnReport serves op behind the Idempotency-Key layer (the
// operator's keys; the key's hash names the report), then wakes the
// report's run when op changed it (after the commit).
func serveOnReport[Req any](h *Handlers, k api.Kit, c *gin.Context, op reportOperation[Req]) {
	id, err := reportID(c)
	if err != nil {
		k.Fail(c, err)
		return
	}
	caller := k.Caller(c)
	api.ServeKeyed(k, c, api.KeyedOperation[Req]{
		What:    op.what,
		Done:    op.done,
		Keys:    h.Keys,
		MaxBody: MaxBodyBytes,
		Hash:    api.OperationHash(op.hash, id.String()),
		Decode:  op.decode,
		Run: func(ctx context.Context, res db.Reservation, req Req) ([]byte, string, []any, error) {
			var answer []byte
			r, changed, err := op.decide(ctx, &res, id, req, caller.Subject, func(r Report) ([]byte, error) {
				v, err := json.Marshal(viewOf(k, r))
				answer = v
				return v, err
			})
			if err == nil && changed {
				sagakit.Wake(ctx, h.Temporal, h.Log, WorkflowID(id.String()), ChangedSignal, op.lost, "report_id", id)
			}
			attrs := attrsOf(r)
			if op.attrs != nil {
				attrs = append(attrs, op.attrs(req)...)
			}
			return answer, r.EndToEndID, attrs, err
		},
	})
}

// releaseFields are the members of POST .../release.
var releaseFields = []string{"details"}

// decodeRelease validates a POST .../release body: details, required, 1 to
// MaxReleaseDetailsLength characters (ReleaseKeyed checks them again).
func decodeRelease(body []byte) (string, error) {
	m, err := api.DecodeRequest(body, "release", releaseFields...)
	if err != nil {
		return "", err
	}
	details, err := notification.RequiredString(m["details"], "details")
	if err != nil {
		return "", err
	}
	if err := validDetails("details", strings.TrimSpace(details), 1, MaxReleaseDetailsLength); err != nil {
		return "", err
	}
	return details, nil
}

// release is POST /pix/med/reports/{id}/release behind the Idempotency-Key
// layer (the operator's keys): a report stopped at the DICT whose refund
// request is closed or cancelled there ended by the operator, what it
// holds released (Store.ReleaseKeyed; 201, the report after), then its run
// woken, which finds it ended and finishes. 422 med_report_not_releasable
// for a report not open (a second release with another key included), not
// stopped, or whose request is not closed at the DICT; 422
// med_report_not_found for an unknown id. The same key replays the first
// answer.
func (h *Handlers) release(k api.Kit, c *gin.Context) {
	serveOnReport(h, k, c, reportOperation[string]{what: "med release", done: "infraction report released by an operator",
		hash: "pix-med-release", decode: decodeRelease, decide: h.Store.ReleaseKeyed,
		lost: "infraction report released by an operator, its run not woken: it reads the report at its stop's retry"})
}

// sectionLimit bounds the reports a credit's view shows.
const sectionLimit = api.DefaultPageLimit

// section is the med member of a credit's view, left out when the PIX has
// no report: an operator sees them whole, the PIX's customer what is held
// and returned.
func (h *Handlers) section(k api.Kit, c *gin.Context, credit pix.Credit) (any, bool, error) {
	found, err := h.Store.OfPIX(c.Request.Context(), credit.EndToEndID, sectionLimit)
	if err != nil || len(found) == 0 {
		return nil, false, err
	}
	if k.Caller(c).HasScope(auth.ScopeAdmin) {
		views := make([]view, 0, len(found))
		for _, r := range found {
			views = append(views, viewOf(k, r))
		}
		return views, true, nil
	}
	views := make([]customerView, 0, len(found))
	for _, r := range found {
		views = append(views, customerViewOf(r))
	}
	return views, true, nil
}

// listQuarantine is GET /pix/med/quarantine[?limit=…][&cursor=…]: the
// items of the DICT's lists the lister quarantined and nothing cleared
// yet (PixMEDDICTItemQuarantined pages while one is), by kind, DICT id and
// LastModified, a page at a time (api.PageOf). The code of why, never the
// DICT's texts.
func (h *Handlers) listQuarantine(k api.Kit, c *gin.Context) {
	p, err := api.PageOf[QuarantineKey](c)
	if err != nil {
		k.Fail(c, err)
		return
	}
	found, err := h.Store.QuarantinedItems(c.Request.Context(), p.After, p.Fetch())
	if err != nil {
		k.Fail(c, err)
		return
	}
	api.AnswerPage(k, c, "items", p, found, QuarantineKeyOf)
}

// resolveQuarantine is DELETE /pix/med/quarantine/{kind}/{id}?through=…:
// an operator's clear of a quarantined item once decided by hand at the
// DICT, logged with who cleared it. through (RFC 3339, required) is the
// dict_modified_at of the copy decided, as listed: that copy and the
// earlier ones go (Store.ResolveQuarantined), never one quarantined after
// the operator looked, which would let the 72 h expiry release past a
// copy nobody decided (attack review r4 MED-1). The runs stopped at the
// DICT on a copy cleared are woken (QuarantineCleared), signalled after
// the commit. 404
// med_quarantine_not_found when no copy of that LastModified is there.
// The id is the rest of the path (a catch-all): an id the DICT wrote
// with a '/' in it (its dict_id as listed, sent percent-encoded as a path
// segment is, %2F) is one id.
func (h *Handlers) resolveQuarantine(k api.Kit, c *gin.Context) {
	kind, id := c.Param("kind"), strings.TrimPrefix(c.Param("id"), "/")
	if kind != QuarantinedReport && kind != QuarantinedRefund {
		k.Fail(c, pix.Invalid("kind", "must be report or refund"))
		return
	}
	if id == "" || len(id) > maxQuarantinedID {
		k.Fail(c, pix.Invalid("id", "must be the dict_id as listed (at most %d characters)", maxQuarantinedID))
		return
	}
	if u, err := uuid.Parse(id); err == nil {
		// The lister records a uuid in its canonical form
		// (quarantinedID): one given in capitals or braces is that one.
		// Any other id is matched as listed (quoted), never quoted again.
		id = u.String()
	}
	through, err := time.Parse(time.RFC3339Nano, c.Query("through"))
	if err != nil {
		k.Fail(c, pix.Invalid("through", "must be the dict_modified_at decided, as listed (RFC 3339)"))
		return
	}
	ctx := c.Request.Context()
	cleared, err := h.Store.ResolveQuarantined(ctx, kind, id, through)
	if err != nil {
		k.Fail(c, err)
		return
	}
	h.Log.WarnContext(ctx, "med quarantine cleared by an operator", "kind", kind, "dict_id", id, "cleared", len(cleared.Rows),
		"runs_woken", len(cleared.Woken), "by", k.Caller(c).Subject)
	wakeStopped(ctx, h.Temporal, h.Log, kind, id, cleared)
	c.JSON(http.StatusOK, gin.H{"kind": kind, "dict_id": id, "cleared": cleared.Rows})
}
