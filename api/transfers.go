package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/notification"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/workflows"
)

// Limits of POST /pix.
const (
	MaxTransferBodyBytes = 16 << 10
	maxDescriptionLength = 140
	// IdempotentReplayHeader marks an answer replayed from the key.
	IdempotentReplayHeader = "X-Idempotent-Replay"
)

// TransferStore is what the transfer routes need of the database: POST
// /pix behind the Idempotency-Key layer, and the reads of a transfer.
type TransferStore interface {
	KeyStore
	CreateTransfer(ctx context.Context, r db.Reservation, t db.NewTransfer, render func(pix.Transfer) ([]byte, error)) (pix.Transfer, error)
	GetTransfer(ctx context.Context, id uuid.UUID) (pix.Transfer, error)
}

// TransferHTTP is the outgoing transfer's HTTP side (saga.Transfer).
func TransferHTTP() SagaHTTP {
	return SagaHTTP{Routes: []Route{
		{http.MethodPost, "/pix", auth.ScopeWrite, handle((*handlers).createTransfer)},
		{http.MethodGet, "/pix/transfers/:id", auth.ScopeRead, handle((*handlers).getTransfer)},
	}}
}

// transferView is a transfer as the API answers it.
type transferView struct {
	pix.Transfer
	WorkflowID    string `json:"workflow_id"`
	TemporalUIURL string `json:"temporal_ui_url"`
}

func (h *handlers) transferView(t pix.Transfer) transferView {
	id := workflows.TransferWorkflowID(t.ID)
	return transferView{Transfer: t, WorkflowID: id, TemporalUIURL: h.workflowURL(id)}
}

// createTransfer is POST /pix behind the Idempotency-Key layer (serveKeyed).
func (h *handlers) createTransfer(c *gin.Context) {
	serveKeyed(h, c, KeyedOperation[pix.TransferRequest]{
		What:    "transfer",
		Keys:    h.Stores.Transfers,
		MaxBody: MaxTransferBodyBytes,
		Hash:    requestHash,
		Decode:  decodeTransferRequest,
		Forbidden: func(caller auth.Caller, req pix.TransferRequest) error {
			return ForbiddenUnlessFor(caller, req.AccountID)
		},
		Run: func(ctx context.Context, res db.Reservation, req pix.TransferRequest) ([]byte, string, []any, error) {
			t := db.NewTransfer{ID: uuid.New(), EndToEndID: pix.NewEndToEndID(h.BankISPB, time.Now()), TransferRequest: req}
			var answer []byte
			created, err := h.Stores.Transfers.CreateTransfer(ctx, res, t, func(t pix.Transfer) ([]byte, error) {
				b, err := json.Marshal(h.transferView(t))
				answer = b
				return b, err
			})
			return answer, created.EndToEndID, []any{"transfer_id", created.ID, "end_to_end_id", created.EndToEndID,
				"account_id", created.AccountID, "amount_cents", created.AmountCents, "balance_after_cents", created.BalanceAfterCents}, err
		},
	})
}

// releaseKey frees the key after a failure that committed nothing, on a
// context of its own (the request's may be what failed). If even that
// fails, the reservation lapses after IDEMPOTENCY_LOCK_TIMEOUT.
func (h *handlers) releaseKey(ctx context.Context, log *slog.Logger, keys KeyStore, res db.Reservation) {
	releaseCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := keys.ReleaseKey(releaseCtx, res); err != nil {
		log.ErrorContext(ctx, "could not release idempotency key; it lapses with its lock", "idempotency_key", res.Key.String(), "error", err)
	}
}

// idempotencyKey parses the Idempotency-Key header: a UUID.
func idempotencyKey(header string) (uuid.UUID, error) {
	if header == "" {
		return uuid.UUID{}, errIdempotencyKeyRequired
	}
	key, err := uuid.Parse(header)
	if err != nil || len(header) != 36 {
		return uuid.UUID{}, errInvalidIdempotencyKey
	}
	return key, nil
}

// requestHash is the hex SHA-256 of the body's canonical JSON (members
// sorted, no insignificant whitespace: key order and spacing don't make
// another request); a body that isn't JSON is hashed as it is.
func requestHash(body []byte) string {
	canonical := body
	if notification.CheckJSON(body) == nil {
		var v any
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber() // numbers keep their text: 15000 stays 15000
		if dec.Decode(&v) == nil {
			if b, err := json.Marshal(v); err == nil {
				canonical = b
			}
		}
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// transferFields are the members of a transfer's request (POST /pix).
var transferFields = []string{"account_id", "amount_cents", "pix_key", "description"}

// decodeTransferRequest validates a POST /pix body. Unlike the PSP's
// webhooks, members we don't know are refused: a customer app that sends
// "amount" in reais must hear about it.
func decodeTransferRequest(body []byte) (pix.TransferRequest, error) {
	m, err := DecodeRequest(body, "transfer", transferFields...)
	if err != nil {
		return pix.TransferRequest{}, err
	}
	return TransferRequestOf(m)
}

// DecodeRequest decodes a customer request's body: a JSON object of the
// members fields (what names the request in the refusal of another
// member), each still to be validated.
func DecodeRequest(body []byte, what string, fields ...string) (map[string]json.RawMessage, error) {
	if err := notification.CheckJSON(body); err != nil {
		return nil, err
	}
	m, err := notification.DecodeObject(body, "body")
	if err != nil {
		return nil, err
	}
	for k := range m {
		if !slices.Contains(fields, k) {
			return nil, pix.Invalid(k, "is not a field of a %s (%s)", what, strings.Join(fields, ", "))
		}
	}
	return m, nil
}

// TransferRequestOf validates the members of a transfer's request in m
// (transferFields): POST /pix's, and every request that makes an outgoing
// PIX (a scheduled PIX's).
func TransferRequestOf(m map[string]json.RawMessage) (pix.TransferRequest, error) {
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

// getTransfer is GET /pix/transfers/{id}: a transfer of one of the
// caller's accounts.
func (h *handlers) getTransfer(c *gin.Context) {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		abortWithError(c, h.Logger, pix.Invalid("id", "must be a transfer id (a UUID)"))
		return
	}
	t, err := h.Stores.Transfers.GetTransfer(c.Request.Context(), id)
	if err == nil && !callerOf(c).MayActFor(t.AccountID) {
		err = pix.ErrTransferNotFound // another account's: as if missing
	}
	if err != nil {
		abortWithError(c, h.Logger, err)
		return
	}
	c.Set(ctxEndToEndID, t.EndToEndID)
	c.JSON(http.StatusOK, h.transferView(t))
}

// retryAfterSeconds renders a wait for the Retry-After header: whole
// seconds, at least 1.
func retryAfterSeconds(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}
