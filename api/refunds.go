package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/notification"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/workflows"
)

// Limits of POST /pix/credits/{end_to_end_id}/refunds.
const MaxRefundBodyBytes = 4 << 10

// RefundStore is what the refund routes need of the database: POST
// /pix/credits/{id}/refunds behind the Idempotency-Key layer, the reads of
// a refund, and what the refund saga adds to a credit's view and to an API
// Pix webhook.
type RefundStore interface {
	KeyStore
	CreateRefund(ctx context.Context, r db.Reservation, nr db.NewRefund, mayRefund func(accountID string) bool,
		render func(pix.Refund) ([]byte, error)) (pix.Refund, error)
	GetRefund(ctx context.Context, id string) (pix.Refund, error)
	RefundsOf(ctx context.Context, endToEndID string) ([]pix.Refund, error)
	NoteRefundOutcomes(ctx context.Context, notices []db.RefundNotice) (db.NotedRefunds, error)
}

// RefundHTTP is the devolução's HTTP side (saga.Refund): its routes, the
// outcomes an API Pix webhook announces of our devoluções, and the
// devoluções of a credit in its view.
func RefundHTTP() SagaHTTP {
	return SagaHTTP{
		Routes: []Route{
			{http.MethodPost, "/pix/credits/:end_to_end_id/refunds", auth.ScopeWrite, handle((*handlers).createRefund)},
			{http.MethodGet, "/pix/refunds/:id", auth.ScopeRead, handle((*handlers).getRefund)},
		},
		Received: func(k Kit, ctx context.Context, ns []pix.Notification) error { return k.h.noteRefundOutcomes(ctx, ns) },
		CreditSection: CreditSection{Name: "refunds", Of: func(k Kit, c *gin.Context, credit pix.Credit) (any, bool, error) {
			return k.h.creditRefunds(c.Request.Context(), credit)
		}},
	}
}

// refundView is a refund as the API answers it.
type refundView struct {
	pix.Refund
	WorkflowID    string `json:"workflow_id"`
	TemporalUIURL string `json:"temporal_ui_url"`
}

func (h *handlers) refundView(r pix.Refund) refundView {
	id := workflows.RefundWorkflowID(r.ID)
	return refundView{Refund: r, WorkflowID: id, TemporalUIURL: h.workflowURL(id)}
}

// createRefund is POST /pix/credits/{end_to_end_id}/refunds behind the
// Idempotency-Key layer (serveKeyed): the caller returns a PIX credited to
// one of their accounts, whole or in part. Whose PIX it is is decided in
// the refund's transaction; another customer's PIX is refused exactly like
// one never credited (pix_not_credited).
func (h *handlers) createRefund(c *gin.Context) {
	endToEndID := c.Param("end_to_end_id")
	caller := callerOf(c)
	serveKeyed(h, c, KeyedOperation[pix.RefundRequest]{
		What:    "refund",
		Keys:    h.Stores.Refunds,
		MaxBody: MaxRefundBodyBytes,
		// The PIX is in the path: the same body for another PIX is
		// another request.
		Hash:       OperationHash("refund", endToEndID),
		Decode:     func(body []byte) (pix.RefundRequest, error) { return decodeRefundRequest(endToEndID, body) },
		LostAccess: pix.ErrPixNotCredited,
		Run: func(ctx context.Context, res db.Reservation, req pix.RefundRequest) ([]byte, string, []any, error) {
			var answer []byte
			created, err := h.Stores.Refunds.CreateRefund(ctx, res, db.NewRefund{ID: pix.NewRefundID(), RefundRequest: req}, caller.MayActFor,
				func(r pix.Refund) ([]byte, error) {
					b, err := json.Marshal(h.refundView(r))
					answer = b
					return b, err
				})
			return answer, req.EndToEndID, []any{"refund_id", created.ID, "end_to_end_id", created.EndToEndID, "account_id", created.AccountID,
				"amount_cents", created.AmountCents, "balance_after_cents", created.BalanceAfterCents}, err
		},
	})
}

// decodeRefundRequest validates a refund: the PIX in the path and the body
// {"amount_cents", "reason"}. Members we don't know are refused.
func decodeRefundRequest(endToEndID string, body []byte) (pix.RefundRequest, error) {
	r := pix.RefundRequest{EndToEndID: endToEndID}
	if !pix.ValidEndToEndID(endToEndID) {
		return r, pix.Invalid("end_to_end_id", "must be 32 letters or digits starting with E")
	}
	if err := notification.CheckJSON(body); err != nil {
		return r, err
	}
	m, err := notification.DecodeObject(body, "body")
	if err != nil {
		return r, err
	}
	for k := range m {
		switch k {
		case "amount_cents", "reason":
		default:
			return r, pix.Invalid(k, "is not a field of a refund (amount_cents, reason)")
		}
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

// getRefund is GET /pix/refunds/{id}: a refund of one of the caller's
// accounts; another's is "not found", exactly like a missing one.
func (h *handlers) getRefund(c *gin.Context) {
	id := c.Param("id")
	if !pix.ValidRefundID(id) {
		abortWithError(c, h.Logger, pix.Invalid("id", "must be a refund id (1 to 35 letters or digits)"))
		return
	}
	r, err := h.Stores.Refunds.GetRefund(c.Request.Context(), id)
	if err == nil && !callerOf(c).MayActFor(r.AccountID) {
		err = pix.ErrRefundNotFound
	}
	if err != nil {
		abortWithError(c, h.Logger, err)
		return
	}
	c.Set(ctxEndToEndID, r.EndToEndID)
	c.JSON(http.StatusOK, h.refundView(r))
}

// creditRefunds is the "refunds" section of a credit's view, left out when
// the PIX has none. The credit is the caller's (the view checked), and so
// are its refunds.
func (h *handlers) creditRefunds(ctx context.Context, credit pix.Credit) ([]refundView, bool, error) {
	refunds, err := h.Stores.Refunds.RefundsOf(ctx, credit.EndToEndID)
	if err != nil || len(refunds) == 0 {
		return nil, false, err
	}
	views := make([]refundView, len(refunds))
	for i, r := range refunds {
		views[i] = h.refundView(r)
	}
	return views, true, nil
}

// noteRefundOutcomes records, for the refund sagas, the outcomes the PSP's
// webhook announced in its devolucoes of PIX we refunded
// (db.NoteRefundNotices, which the PSP catch-up runs too).
func (h *handlers) noteRefundOutcomes(ctx context.Context, ns []pix.Notification) error {
	return db.NoteRefundNotices(ctx, h.Stores.Refunds, h.Logger, ns)
}
