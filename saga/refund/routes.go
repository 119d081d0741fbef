package refund

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/notification"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/saga"
)

// The customer routes (api/openapi/pix-api: POST
// /pix/credits/{end_to_end_id}/refunds and GET /pix/refunds/{id}):
//
//	POST /pix/credits/{end_to_end_id}/refunds   pix:write, Idempotency-Key: return a PIX
//	GET  /pix/refunds/{id}                       pix:read
//
// Another customer's PIX or refund answers as missing. The saga adds to
// every API Pix webhook the outcomes it announces of our devoluções, and
// to a credit's view its devoluções (the "refunds" section).

// MaxBodyBytes limits POST /pix/credits/{end_to_end_id}/refunds.
const MaxBodyBytes = 4 << 10

// RouteStore is what the routes need of the database: POST
// /pix/credits/{id}/refunds behind the Idempotency-Key layer, the reads of
// a refund, and what the saga adds to a credit's view and to an API Pix
// webhook.
type RouteStore interface {
	api.KeyStore
	CreateRefund(ctx context.Context, r db.Reservation, nr db.NewRefund, mayRefund func(accountID string) bool,
		render func(pix.Refund) ([]byte, error)) (pix.Refund, error)
	GetRefund(ctx context.Context, id string) (pix.Refund, error)
	RefundsOf(ctx context.Context, endToEndID string) ([]pix.Refund, error)
	NoteRefundOutcomes(ctx context.Context, notices []db.RefundNotice) (db.NotedRefunds, error)
}

// Handlers serve the saga's routes.
type Handlers struct {
	Store RouteStore
	// Log gets the outcomes a webhook announced that were noted or that
	// contradict a final refund.
	Log *slog.Logger
}

// httpOf builds the saga's HTTP side from env (saga.Descriptor.HTTP).
func httpOf(env saga.Env) (api.SagaHTTP, error) {
	h := &Handlers{Store: NewStore(env.Store), Log: env.Log}
	return h.HTTP(), nil
}

// HTTP is the saga's HTTP side: its routes, each under its scope, the
// outcomes an API Pix webhook announces of our devoluções, and the
// devoluções of a credit in its view.
func (h *Handlers) HTTP() api.SagaHTTP {
	return api.SagaHTTP{
		Routes: []api.Route{
			{Method: http.MethodPost, Path: "/pix/credits/:end_to_end_id/refunds", Scope: auth.ScopeWrite, Handle: h.create},
			{Method: http.MethodGet, Path: "/pix/refunds/:id", Scope: auth.ScopeRead, Handle: h.get},
		},
		Received: func(_ api.Kit, ctx context.Context, ns []pix.Notification) error { return h.noteOutcomes(ctx, ns) },
		CreditSection: api.CreditSection{Name: "refunds", Of: func(k api.Kit, c *gin.Context, credit pix.Credit) (any, bool, error) {
			return h.creditRefunds(k, c.Request.Context(), credit)
		}},
	}
}

// view is a refund as the API answers it.
type view struct {
	pix.Refund
	WorkflowID    string `json:"workflow_id"`
	TemporalUIURL string `json:"temporal_ui_url"`
}

func viewOf(k api.Kit, r pix.Refund) view {
	id := WorkflowID(r.ID)
	return view{Refund: r, WorkflowID: id, TemporalUIURL: k.WorkflowURL(id)}
}

// create is POST /pix/credits/{end_to_end_id}/refunds behind the
// Idempotency-Key layer (api.ServeKeyed): the caller returns a PIX
// credited to one of their accounts, whole or in part. Whose PIX it is is
// decided in the refund's transaction; another customer's PIX is refused
// exactly like one never credited (pix_not_credited).
func (h *Handlers) create(k api.Kit, c *gin.Context) {
	endToEndID := c.Param("end_to_end_id")
	caller := k.Caller(c)
	api.ServeKeyed(k, c, api.KeyedOperation[pix.RefundRequest]{
		What:    "refund",
		Keys:    h.Store,
		MaxBody: MaxBodyBytes,
		// The PIX is in the path: the same body for another PIX is
		// another request.
		Hash:       api.OperationHash("refund", endToEndID),
		Decode:     func(body []byte) (pix.RefundRequest, error) { return decodeRequest(endToEndID, body) },
		LostAccess: pix.ErrPixNotCredited,
		Run: func(ctx context.Context, res db.Reservation, req pix.RefundRequest) ([]byte, string, []any, error) {
			var answer []byte
			created, err := h.Store.CreateRefund(ctx, res, db.NewRefund{ID: pix.NewRefundID(), RefundRequest: req}, caller.MayActFor,
				func(r pix.Refund) ([]byte, error) {
					b, err := json.Marshal(viewOf(k, r))
					answer = b
					return b, err
				})
			return answer, req.EndToEndID, []any{"refund_id", created.ID, "end_to_end_id", created.EndToEndID, "account_id", created.AccountID,
				"amount_cents", created.AmountCents, "balance_after_cents", created.BalanceAfterCents}, err
		},
	})
}

// decodeRequest validates a refund: the PIX in the path and the body
// {"amount_cents", "reason"}. Members we don't know are refused.
func decodeRequest(endToEndID string, body []byte) (pix.RefundRequest, error) {
	r := pix.RefundRequest{EndToEndID: endToEndID}
	if !pix.ValidEndToEndID(endToEndID) {
		return r, pix.Invalid("end_to_end_id", "must be 32 letters or digits starting with E")
	}
	m, err := api.DecodeRequest(body, "refund", "amount_cents", "reason")
	if err != nil {
		return r, err
	}
	if r.AmountCents, err = notification.AmountCents(m["amount_cents"]); err != nil {
		return r, err
	}
	if r.AmountCents > psp.MaxValorCents {
		return r, pix.Invalid("amount_cents", "must be at most %d", psp.MaxValorCents)
	}
	if notification.Present(m["reason"]) {
		if r.Reason, err = notification.RequiredString(m["reason"], "reason"); err != nil {
			return r, err
		}
		// The reason goes to the PSP and to the payer's statement: no
		// control or invisible formatting characters (bidi overrides,
		// zero-width joiners) that would make it read otherwise.
		if utf8.RuneCountInString(r.Reason) > pix.MaxRefundReasonLength || notification.HasControlOrInvalid(r.Reason) ||
			strings.ContainsFunc(r.Reason, func(c rune) bool { return unicode.Is(unicode.Cf, c) }) {
			return r, pix.Invalid("reason", "must be at most %d characters, none of them a control or formatting character", pix.MaxRefundReasonLength)
		}
	}
	return r, nil
}

// get is GET /pix/refunds/{id}: a refund of one of the caller's accounts;
// another's is "not found", exactly like a missing one.
func (h *Handlers) get(k api.Kit, c *gin.Context) {
	id := c.Param("id")
	if !pix.ValidRefundID(id) {
		k.Fail(c, pix.Invalid("id", "must be a refund id (1 to 35 letters or digits)"))
		return
	}
	r, err := h.Store.GetRefund(c.Request.Context(), id)
	if err == nil && !k.Caller(c).MayActFor(r.AccountID) {
		err = pix.ErrRefundNotFound
	}
	if err != nil {
		k.Fail(c, err)
		return
	}
	k.NamePIX(c, r.EndToEndID)
	c.JSON(http.StatusOK, viewOf(k, r))
}

// creditRefunds is the "refunds" section of a credit's view, left out when
// the PIX has none. The credit is the caller's (the view checked), and so
// are its refunds.
func (h *Handlers) creditRefunds(k api.Kit, ctx context.Context, credit pix.Credit) ([]view, bool, error) {
	refunds, err := h.Store.RefundsOf(ctx, credit.EndToEndID)
	if err != nil || len(refunds) == 0 {
		return nil, false, err
	}
	views := make([]view, len(refunds))
	for i, r := range refunds {
		views[i] = viewOf(k, r)
	}
	return views, true, nil
}

// noteOutcomes records, for the refund sagas, the outcomes the PSP's
// webhook announced in its devolucoes of PIX we refunded
// (db.NoteRefundNotices, which the PSP catch-up runs too).
func (h *Handlers) noteOutcomes(ctx context.Context, ns []pix.Notification) error {
	return db.NoteRefundNotices(ctx, h.Store, h.Log, ns)
}
