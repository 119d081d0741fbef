package transfer

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/notification"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga"
)

// The customer routes (api/openapi/pix-api: POST /pix and GET
// /pix/transfers/{id}):
//
//	POST /pix                  pix:write, Idempotency-Key: send a PIX
//	GET  /pix/transfers/{id}   pix:read
//
// Another customer's transfer answers as missing.

// Limits of POST /pix.
const (
	MaxBodyBytes         = 16 << 10
	maxDescriptionLength = 140
)

// RouteStore is what the routes need of the database: POST /pix behind the
// Idempotency-Key layer, and the reads of a transfer.
type RouteStore interface {
	api.KeyStore
	CreateTransfer(ctx context.Context, r db.Reservation, t db.NewTransfer, render func(pix.Transfer) ([]byte, error)) (pix.Transfer, error)
	GetTransfer(ctx context.Context, id uuid.UUID) (pix.Transfer, error)
}

// Handlers serve the saga's routes.
type Handlers struct {
	Store RouteStore
	// BankISPB starts the end_to_end_ids of our transfers (BANK_ISPB).
	BankISPB string
}

// httpOf builds the saga's HTTP side from env (saga.Descriptor.HTTP).
func httpOf(env saga.Env) (api.SagaHTTP, error) {
	h := &Handlers{Store: NewStore(env.Store), BankISPB: env.Cfg.BankISPB}
	return h.HTTP(), nil
}

// HTTP is the saga's HTTP side: its routes, each under its scope.
func (h *Handlers) HTTP() api.SagaHTTP {
	return api.SagaHTTP{Routes: []api.Route{
		{Method: http.MethodPost, Path: "/pix", Scope: auth.ScopeWrite, Handle: h.create},
		{Method: http.MethodGet, Path: "/pix/transfers/:id", Scope: auth.ScopeRead, Handle: h.get},
	}}
}

// view is a transfer as the API answers it.
type view struct {
	pix.Transfer
	WorkflowID    string `json:"workflow_id"`
	TemporalUIURL string `json:"temporal_ui_url"`
}

func viewOf(k api.Kit, t pix.Transfer) view {
	id := WorkflowID(t.ID)
	return view{Transfer: t, WorkflowID: id, TemporalUIURL: k.WorkflowURL(id)}
}

// create is POST /pix behind the Idempotency-Key layer (api.ServeKeyed).
// Its fingerprint is the body's canonical hash alone (no Hash), which its
// keys were recorded with.
func (h *Handlers) create(k api.Kit, c *gin.Context) {
	api.ServeKeyed(k, c, api.KeyedOperation[pix.TransferRequest]{
		What:    "transfer",
		Keys:    h.Store,
		MaxBody: MaxBodyBytes,
		Decode:  decodeRequest,
		Forbidden: func(caller auth.Caller, req pix.TransferRequest) error {
			return api.ForbiddenUnlessFor(caller, req.AccountID)
		},
		Run: func(ctx context.Context, res db.Reservation, req pix.TransferRequest) ([]byte, string, []any, error) {
			t := db.NewTransfer{ID: uuid.New(), EndToEndID: pix.NewEndToEndID(h.BankISPB, time.Now()), TransferRequest: req}
			var answer []byte
			created, err := h.Store.CreateTransfer(ctx, res, t, func(t pix.Transfer) ([]byte, error) {
				b, err := json.Marshal(viewOf(k, t))
				answer = b
				return b, err
			})
			return answer, created.EndToEndID, []any{"transfer_id", created.ID, "end_to_end_id", created.EndToEndID,
				"account_id", created.AccountID, "amount_cents", created.AmountCents, "balance_after_cents", created.BalanceAfterCents}, err
		},
	})
}

// requestFields are the members of a transfer's request (POST /pix).
var requestFields = []string{"account_id", "amount_cents", "pix_key", "description"}

// decodeRequest validates a POST /pix body. Unlike the PSP's webhooks,
// members we don't know are refused: a customer app that sends "amount" in
// reais must hear about it.
func decodeRequest(body []byte) (pix.TransferRequest, error) {
	m, err := api.DecodeRequest(body, "transfer", requestFields...)
	if err != nil {
		return pix.TransferRequest{}, err
	}
	return RequestOf(m)
}

// RequestOf validates the members of a transfer's request in m
// (requestFields): POST /pix's, and every request that makes an outgoing
// PIX (a scheduled PIX's).
func RequestOf(m map[string]json.RawMessage) (pix.TransferRequest, error) {
	var err error
	var r pix.TransferRequest
	if r.AccountID, err = notification.RequiredString(m["account_id"], "account_id"); err != nil {
		return r, err
	}
	if l := utf8.RuneCountInString(r.AccountID); l < 1 || l > pix.MaxAccountIDLength || notification.HasControlOrInvalid(r.AccountID) {
		return r, pix.Invalid("account_id", "must be 1 to %d characters, none of them a control character or an invalid byte", pix.MaxAccountIDLength)
	}
	if r.AmountCents, err = notification.AmountCents(m["amount_cents"]); err != nil {
		return r, err
	}
	if r.PixKey, err = notification.RequiredString(m["pix_key"], "pix_key"); err != nil {
		return r, err
	}
	if l := utf8.RuneCountInString(r.PixKey); l < 1 || l > notification.MaxPixKeyLength || notification.HasControlOrInvalid(r.PixKey) {
		return r, pix.Invalid("pix_key", "must be 1 to %d characters, none of them a control character", notification.MaxPixKeyLength)
	}
	if notification.Present(m["description"]) {
		if r.Description, err = notification.RequiredString(m["description"], "description"); err != nil {
			return r, err
		}
		if utf8.RuneCountInString(r.Description) > maxDescriptionLength || notification.HasControlOrInvalid(r.Description) {
			return r, pix.Invalid("description", "must be at most %d characters, none of them a control character", maxDescriptionLength)
		}
	}
	return r, nil
}

// get is GET /pix/transfers/{id}: a transfer of one of the caller's
// accounts.
func (h *Handlers) get(k api.Kit, c *gin.Context) {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		k.Fail(c, pix.Invalid("id", "must be a transfer id (a UUID)"))
		return
	}
	t, err := h.Store.GetTransfer(c.Request.Context(), id)
	if err == nil && !k.Caller(c).MayActFor(t.AccountID) {
		err = pix.ErrTransferNotFound // another account's: as if missing
	}
	if err != nil {
		k.Fail(c, err)
		return
	}
	k.NamePIX(c, t.EndToEndID)
	c.JSON(http.StatusOK, viewOf(k, t))
}
