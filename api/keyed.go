package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/pix"
)

// KeyedOperation is a request that moves money behind the Idempotency-Key
// layer (POST /pix, POST /pix/credits/{id}/refunds): what serveKeyed needs
// to know of it.
type KeyedOperation[Req any] struct {
	// What names the operation in logs ("transfer", "refund").
	What string
	// Keys is the saga's store of the Idempotency-Key layer.
	Keys KeyStore
	// MaxBody bounds the body.
	MaxBody int64
	// Hash is the request's fingerprint: the key's later uses must match
	// it. nil: the SHA-256 of the body's canonical JSON (requestHash).
	Hash func(body []byte) string
	// Done is the log message of a success; "": What + " debited".
	Done string
	// Decode validates the body into the request; its error is a refusal,
	// recorded on the key like any other.
	Decode func(body []byte) (Req, error)
	// Forbidden says why the caller may not ask for req, settled before
	// anything is written (the key included); nil: it may. Optional.
	Forbidden func(caller auth.Caller, req Req) error
	// LostAccess is answered, as a replay, in place of a recorded 201 about
	// an account the caller no longer holds (its token's grant changed
	// since): the answer a request about another's account gets. nil:
	// Forbidden already settled it before the key was looked at.
	LostAccess error
	// Run moves the money and records the key's answer (201, the body it
	// returns) in one transaction; endToEndID names the PIX in the
	// request's log line, attrs are logged with the success.
	Run func(ctx context.Context, res db.Reservation, req Req) (answer []byte, endToEndID string, attrs []any, err error)
}

// OperationHash is the fingerprint of a keyed request of operation (and
// of what its path adds, parts): the body's canonical hash (requestHash)
// bound to them, so that a key used for one operation is another request
// on any other (422 idempotency_key_reused), never its answer. Every keyed
// operation but POST /pix uses it; POST /pix keeps the body's hash alone,
// which its keys were recorded with.
func OperationHash(operation string, parts ...string) func(body []byte) string {
	return func(body []byte) string {
		fields := append(append([]string{operation}, parts...), requestHash(body))
		sum := sha256.Sum256([]byte(strings.Join(fields, "\n")))
		return hex.EncodeToString(sum[:])
	}
}

// serveKeyed runs op behind the Idempotency-Key layer: the request that
// reserves the caller's key runs the operation and records its answer;
// every later request with the key (and the same request) gets that answer
// again (X-Idempotent-Replay), a refusal included. Only a technical
// failure, which commits nothing, frees the key for a retry.
func serveKeyed[Req any](h *handlers, c *gin.Context, op KeyedOperation[Req]) {
	ctx := c.Request.Context()
	key, err := idempotencyKey(c.GetHeader("Idempotency-Key"))
	if err != nil {
		abortWithError(c, h.Logger, err)
		return
	}
	body, err := readBody(c.Writer, c.Request, op.MaxBody)
	if err == nil {
		err = requireJSON(c.Request)
	}
	if err != nil {
		abortWithError(c, h.Logger, err)
		return
	}
	// Who may move money is settled before anything is written: a request
	// the token does not grant leaves no trace, not even on its key. A body
	// that can't be read names nothing to check; its refusal is recorded on
	// the key like any other (it moves nothing).
	caller := callerOf(c)
	req, invalid := op.Decode(body)
	if invalid == nil && op.Forbidden != nil {
		if err := op.Forbidden(caller, req); err != nil {
			h.refused(c, caller, err)
			return
		}
	}
	hash := op.Hash
	if hash == nil {
		hash = requestHash
	}
	res, replay, err := op.Keys.ReserveKey(ctx, caller.Subject, key, hash(body), h.Keys)
	if err != nil {
		abortWithError(c, h.Logger, err)
		return
	}
	if replay != nil {
		c.Header(IdempotentReplayHeader, "true")
		if op.LostAccess != nil && replay.StatusCode == http.StatusCreated && !caller.MayActFor(accountOf(replay.Body)) {
			status, detail := errorResponse(&unprocessableError{op.LostAccess})
			c.JSON(status, ErrorBody{Error: detail})
			return
		}
		c.Data(replay.StatusCode, "application/json; charset=utf-8", replay.Body)
		return
	}
	log := h.Logger.With("idempotency_key", key.String(), "sub", caller.Subject)
	if invalid != nil {
		h.recordRefusal(c, log, op.What, op.Keys, *res, &unprocessableError{invalid})
		return
	}
	answer, endToEndID, attrs, err := op.Run(ctx, *res, req)
	switch {
	case err == nil:
		c.Set(ctxEndToEndID, endToEndID)
		done := op.Done
		if done == "" {
			done = op.What + " debited"
		}
		log.InfoContext(ctx, done, attrs...)
		c.Data(http.StatusCreated, "application/json; charset=utf-8", answer)
	case errors.Is(err, pix.ErrRequestInProgress):
		// Our reservation was taken over: the taker answers for the key.
		abortWithError(c, h.Logger, err)
	case pix.IsRefusal(err):
		h.recordRefusal(c, log, op.What, op.Keys, *res, &unprocessableError{err})
	default:
		h.releaseKey(ctx, log, op.Keys, *res)
		abortWithError(c, h.Logger, err)
	}
}

// recordRefusal records a refusal as the key's answer, and answers it.
func (h *handlers) recordRefusal(c *gin.Context, log *slog.Logger, what string, keys KeyStore, res db.Reservation, refusal error) {
	status, detail := errorResponse(refusal)
	body, err := json.Marshal(ErrorBody{Error: detail})
	if err == nil {
		err = keys.RecordResponse(c.Request.Context(), res, status, body)
	}
	if err != nil {
		if !errors.Is(err, pix.ErrRequestInProgress) {
			h.releaseKey(c.Request.Context(), h.Logger, keys, res)
		}
		abortWithError(c, h.Logger, err)
		return
	}
	log.InfoContext(c.Request.Context(), what+" refused", "status", status, "code", detail.Code, "reason", refusal.Error())
	c.Data(status, "application/json; charset=utf-8", body)
}

// accountOf is the account_id of a recorded answer ("" when it names none).
func accountOf(body []byte) string {
	var v struct {
		AccountID string `json:"account_id"`
	}
	_ = json.Unmarshal(body, &v) // a recorded answer is ours: JSON
	return v.AccountID
}
