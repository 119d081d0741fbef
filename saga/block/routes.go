package block

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/notification"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/saga/sagakit"
)

// The operator routes (api/openapi/pix-api/blocks.yaml), scope pix:admin
// (ADMIN_TOKEN, or a JWT with pix:admin); a customer's token is refused
// (403) before a handler runs:
//
//	POST /pix/credits/{end_to_end_id}/blocks               Idempotency-Key: hold part of the PIX
//	GET  /pix/credits/{end_to_end_id}/blocks               the PIX's blocks, oldest first
//	GET  /pix/credits/{end_to_end_id}/blocks/{id}
//	POST /pix/credits/{end_to_end_id}/blocks/{id}/release  release it now
//	POST /pix/credits/{end_to_end_id}/blocks/{id}/return   return it to the payer (a devolução)
//
// and the blocks section of a credit's view (GET /pix/credits/{id}: its
// customer sees its blocks without the operators' reason and names).

// MaxBodyBytes bounds the body of POST .../blocks.
const MaxBodyBytes = 4 << 10

// MaxReasonLength is the longest reason a block takes.
const MaxReasonLength = 140

// requestFields are the members of POST .../blocks.
var requestFields = []string{"amount_cents", "reason"}

// RouteStore is what the routes need of the database.
type RouteStore interface {
	Create(ctx context.Context, r *db.Reservation, n New, render func(Block) ([]byte, error)) (Block, error)
	Get(ctx context.Context, id uuid.UUID) (Block, error)
	OfPIX(ctx context.Context, endToEndID string, after *ListKey, limit int) ([]Block, error)
	Release(ctx context.Context, id uuid.UUID, by string) (Block, bool, error)
	Return(ctx context.Context, id uuid.UUID, by string) (Block, bool, error)
}

// Handlers serve the saga's routes.
type Handlers struct {
	Store    RouteStore
	Keys     api.KeyStore
	Temporal sagakit.Signaller
	Log      *slog.Logger
}

// httpOf builds the saga's HTTP side from env (saga.Descriptor.HTTP).
func httpOf(env saga.Env) (api.SagaHTTP, error) {
	h := &Handlers{Store: NewStore(env.Store), Keys: env.Store, Temporal: env.Temporal, Log: env.Log}
	return h.HTTP(), nil
}

// HTTP is the saga's HTTP side: its routes, each under its scope, and its
// section of a credit's view.
func (h *Handlers) HTTP() api.SagaHTTP {
	const blocks = "/pix/credits/:end_to_end_id/blocks"
	return api.SagaHTTP{
		Routes: []api.Route{
			{Method: http.MethodPost, Path: blocks, Scope: auth.ScopeAdmin, Handle: h.create},
			{Method: http.MethodGet, Path: blocks, Scope: auth.ScopeAdmin, Handle: h.list},
			{Method: http.MethodGet, Path: blocks + "/:id", Scope: auth.ScopeAdmin, Handle: h.get},
			{Method: http.MethodPost, Path: blocks + "/:id/release", Scope: auth.ScopeAdmin, Handle: h.release},
			{Method: http.MethodPost, Path: blocks + "/:id/return", Scope: auth.ScopeAdmin, Handle: h.ret},
		},
		CreditSection: api.CreditSection{Name: "blocks", Of: h.section},
	}
}

// view is a block as the operator routes answer it.
type view struct {
	Block
	WorkflowID    string `json:"workflow_id"`
	TemporalUIURL string `json:"temporal_ui_url"`
}

func viewOf(k api.Kit, b Block) view {
	id := WorkflowID(b.ID.String())
	return view{Block: b, WorkflowID: id, TemporalUIURL: k.WorkflowURL(id)}
}

// customerView is a block as its PIX's customer sees it, in the credit's
// view: what is held and until when, not why nor by whom.
type customerView struct {
	ID          uuid.UUID `json:"id"`
	AmountCents int64     `json:"amount_cents"`
	Status      string    `json:"status"`
	EndCause    *string   `json:"end_cause"`
	ExpiresAt   string    `json:"expires_at"`
	RefundID    *string   `json:"refund_id"`
	CreatedAt   string    `json:"created_at"`
	EndedAt     *string   `json:"ended_at"`
}

func customerViewOf(b Block) customerView {
	const layout = "2006-01-02T15:04:05.999999Z07:00"
	v := customerView{ID: b.ID, AmountCents: b.AmountCents, Status: b.Status, EndCause: b.EndCause,
		ExpiresAt: b.ExpiresAt.Format(layout), RefundID: b.RefundID, CreatedAt: b.CreatedAt.Format(layout)}
	if b.EndedAt != nil {
		s := b.EndedAt.Format(layout)
		v.EndedAt = &s
	}
	return v
}

// request is a decoded POST .../blocks.
type request struct {
	AmountCents int64
	Reason      string
}

// decode validates a POST .../blocks body: an amount in centavos and a
// reason (1 to 140 characters).
func decode(body []byte) (request, error) {
	m, err := api.DecodeRequest(body, "block", requestFields...)
	if err != nil {
		return request{}, err
	}
	var r request
	if r.AmountCents, err = notification.AmountCents(m["amount_cents"]); err != nil {
		return r, err
	}
	if r.Reason, err = notification.RequiredString(m["reason"], "reason"); err != nil {
		return r, err
	}
	if n := utf8.RuneCountInString(r.Reason); n < 1 || n > MaxReasonLength || notification.HasControlOrInvalid(r.Reason) {
		return r, pix.Invalid("reason", "must be 1 to %d characters, without control characters", MaxReasonLength)
	}
	return r, nil
}

// endToEndID reads the route's PIX.
func endToEndID(c *gin.Context) (string, error) {
	e2e := c.Param("end_to_end_id")
	if !pix.ValidEndToEndID(e2e) {
		return "", pix.Invalid("end_to_end_id", "must be 32 letters or digits starting with E")
	}
	return e2e, nil
}

// create is POST .../blocks behind the Idempotency-Key layer (the
// operator's keys): it holds the amount and records the block in one
// transaction (201), and its saga starts.
func (h *Handlers) create(k api.Kit, c *gin.Context) {
	e2e, err := endToEndID(c)
	if err != nil {
		k.Fail(c, err)
		return
	}
	caller := k.Caller(c)
	api.ServeKeyed(k, c, api.KeyedOperation[request]{
		What:    "block",
		Done:    "block created",
		Keys:    h.Keys,
		MaxBody: MaxBodyBytes,
		// The operation and its PIX are in the fingerprint: the key
		// replayed on another PIX, or another operation, is another
		// request, never this one's answer.
		Hash:   api.OperationHash("pix-block", e2e),
		Decode: decode,
		Run: func(ctx context.Context, res db.Reservation, req request) ([]byte, string, []any, error) {
			var answer []byte
			created, err := h.Store.Create(ctx, &res, New{ID: uuid.New(), EndToEndID: e2e, AmountCents: req.AmountCents,
				Reason: req.Reason, RequestedBy: caller.Subject}, func(b Block) ([]byte, error) {
				v, err := json.Marshal(viewOf(k, b))
				answer = v
				return v, err
			})
			return answer, e2e, []any{"block_id", created.ID, "workflow_id", WorkflowID(created.ID.String()),
				"account_id", created.AccountID, "amount_cents", created.AmountCents, "expires_at", created.ExpiresAt}, err
		},
	})
}

// own reads the block of the route's id on the route's PIX: a block of
// another PIX is ErrNotFound.
func (h *Handlers) own(k api.Kit, c *gin.Context) (Block, error) {
	e2e, err := endToEndID(c)
	if err != nil {
		return Block{}, err
	}
	k.NamePIX(c, e2e)
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return Block{}, pix.Invalid("id", "must be a block id (a UUID)")
	}
	b, err := h.Store.Get(c.Request.Context(), id)
	if err == nil && b.EndToEndID != e2e {
		return Block{}, ErrNotFound
	}
	return b, err
}

// get is GET .../blocks/{id}.
func (h *Handlers) get(k api.Kit, c *gin.Context) {
	b, err := h.own(k, c)
	if err != nil {
		k.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, viewOf(k, b))
}

// list is GET .../blocks[?limit=…][&cursor=…]: the PIX's blocks, oldest
// first, a page at a time (api.PageOf); none for a PIX without blocks.
func (h *Handlers) list(k api.Kit, c *gin.Context) {
	e2e, err := endToEndID(c)
	if err != nil {
		k.Fail(c, err)
		return
	}
	k.NamePIX(c, e2e)
	p, err := api.PageOf[ListKey](c)
	if err != nil {
		k.Fail(c, err)
		return
	}
	found, err := h.Store.OfPIX(c.Request.Context(), e2e, p.After, p.Fetch())
	if err != nil {
		k.Fail(c, err)
		return
	}
	views := make([]view, 0, len(found))
	for _, b := range found {
		views = append(views, viewOf(k, b))
	}
	api.AnswerPage(k, c, "blocks", p, views, func(v view) ListKey { return ListKeyOf(v.Block) })
}

// release is POST .../blocks/{id}/release: the block released now (200;
// again 200, as it is, when asked again), or 409 block_returned. The
// release is committed first; then its run is woken, which reads the block
// and ends.
func (h *Handlers) release(k api.Kit, c *gin.Context) {
	h.decide(k, c, "released", h.Store.Release)
}

// ret is POST .../blocks/{id}/return: the block handed to the devolução
// saga now (200, status returning; again 200 when asked again: one
// devolução), or 409 block_released, or the devolução's refusal (422).
func (h *Handlers) ret(k api.Kit, c *gin.Context) {
	h.decide(k, c, "return asked", h.Store.Return)
}

// decide runs an operator's decision on the route's block, then wakes its
// run. A wake that can't be sent loses nothing: the run reads the block at
// its 72 hours anyway (and a release is then found done).
func (h *Handlers) decide(k api.Kit, c *gin.Context, what string, act func(context.Context, uuid.UUID, string) (Block, bool, error)) {
	ctx := c.Request.Context()
	b, err := h.own(k, c)
	if err == nil {
		var changed bool
		b, changed, err = act(ctx, b.ID, k.Caller(c).Subject)
		if changed {
			if b.Status == StatusReleased {
				endedTotal.WithLabelValues(b.Status, deref(b.EndCause)).Inc()
			}
			h.Log.InfoContext(ctx, "block "+what, append(attrsOf(b), "sub", k.Caller(c).Subject)...)
		}
	}
	if err != nil {
		k.Fail(c, err)
		return
	}
	sagakit.Wake(ctx, h.Temporal, h.Log, WorkflowID(b.ID.String()), ChangedSignal,
		"block "+what+", its run not woken: it reads the block at its 72 hours", "block_id", b.ID)
	c.JSON(http.StatusOK, viewOf(k, b))
}

// sectionLimit bounds the blocks a credit's view shows (the oldest): the
// list route pages through all.
const sectionLimit = api.DefaultPageLimit

// section is the blocks member of a credit's view, left out when the PIX
// has none: an operator sees them whole, the PIX's customer without the
// reason and the operators' names.
func (h *Handlers) section(k api.Kit, c *gin.Context, credit pix.Credit) (any, bool, error) {
	found, err := h.Store.OfPIX(c.Request.Context(), credit.EndToEndID, nil, sectionLimit)
	if err != nil || len(found) == 0 {
		return nil, false, err
	}
	if k.Caller(c).HasScope(auth.ScopeAdmin) {
		views := make([]view, 0, len(found))
		for _, b := range found {
			views = append(views, viewOf(k, b))
		}
		return views, true, nil
	}
	views := make([]customerView, 0, len(found))
	for _, b := range found {
		views = append(views, customerViewOf(b))
	}
	return views, true, nil
}
