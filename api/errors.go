package api

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/notification"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/webhooksig"
)

// Error codes of the JSON error envelope. The codes of business errors are
// declared with their kind (pix.Kinds); the constants here name them for
// the HTTP layer and its tests.
const (
	CodeInvalidRequest       = "invalid_request"
	CodePayloadTooLarge      = "payload_too_large"
	CodeBatchTooLarge        = "batch_too_large"
	CodeSignatureMissing     = "signature_missing"
	CodeSignatureInvalid     = "signature_invalid"
	CodeSignatureExpired     = "signature_expired"
	CodeClientCertRequired   = "client_certificate_required"
	CodeAdminDisabled        = "admin_disabled"
	CodeUnauthorized         = "unauthorized"
	CodeInsufficientScope    = "insufficient_scope"
	CodeForbiddenAccount     = "forbidden_account"
	CodeIdempotencyKeyNeeded = "idempotency_key_required"
	CodeInvalidIdempotency   = "invalid_idempotency_key"
	CodeIdempotencyKeyReused = "idempotency_key_reused"
	CodeRequestInProgress    = "request_in_progress"
	CodeInsufficientFunds    = "insufficient_funds"
	CodeAccountClosed        = "account_closed"
	CodeTransferNotFound     = "transfer_not_found"
	CodeUnsupportedMediaType = "unsupported_media_type"
	CodePayloadMismatch      = "payload_mismatch"
	CodeCreditNotFound       = "pix_credit_not_found"
	CodeAccountNotFound      = "account_not_found"
	CodeNotFailed            = "pix_credit_not_failed"
	CodeNotFound             = "not_found"
	CodeMethodNotAllowed     = "method_not_allowed"
	CodeUnavailable          = "service_unavailable"
	CodeNotReady             = "not_ready"
	CodeInternal             = "internal_error"
)

// ErrorBody is the envelope of every error response.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says what went wrong.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// requestError is a refusal decided by the HTTP layer itself (body too
// large, wrong content type), carrying its status and code.
type requestError struct {
	status int
	code   string
	msg    string
}

func (e *requestError) Error() string { return e.msg }

// unprocessableError is a refusal of a request that was well-formed at the
// HTTP level (an idempotent POST /pix): 422, whatever the refusal's own
// status elsewhere, with the refusal's code.
type unprocessableError struct{ err error }

func (e *unprocessableError) Error() string { return e.err.Error() }
func (e *unprocessableError) Unwrap() error { return e.err }

// Refusals of the Idempotency-Key header.
var (
	errIdempotencyKeyRequired = &requestError{http.StatusBadRequest, CodeIdempotencyKeyNeeded,
		"the Idempotency-Key header is required: a UUID the client generates once per operation"}
	errInvalidIdempotencyKey = &requestError{http.StatusBadRequest, CodeInvalidIdempotency,
		"the Idempotency-Key header must be a UUID such as 4f0c2a7e-8d5b-4c1e-9a3f-2b6d8e0f1a2c"}
)

// errorResponse is the one mapping from errors to HTTP status and code:
// the HTTP layer's own refusals here, business errors by their pix.Kind.
func errorResponse(err error) (int, ErrorDetail) {
	var reqErr *requestError
	var bearerErr *bearerError
	var valErr *pix.ValidationError
	var unprocessable *unprocessableError
	var item *pix.ItemError
	var batch *notification.BatchTooLargeError
	if errors.As(err, &unprocessable) {
		_, detail := errorResponse(unprocessable.err)
		return http.StatusUnprocessableEntity, detail
	}
	kind := pix.KindOf(err)
	switch {
	case errors.As(err, &bearerErr):
		return bearerErr.status, ErrorDetail{bearerErr.code, bearerErr.msg}
	case errors.As(err, &reqErr):
		return reqErr.status, ErrorDetail{reqErr.code, reqErr.msg}
	case errors.As(err, &batch):
		return http.StatusRequestEntityTooLarge, ErrorDetail{CodeBatchTooLarge, batch.Error()}
	case errors.As(err, &valErr):
		return http.StatusBadRequest, ErrorDetail{CodeInvalidRequest, valErr.Error()}
	case errors.Is(err, webhooksig.ErrMissingSignature):
		return http.StatusUnauthorized, ErrorDetail{CodeSignatureMissing, "the webhook must be signed (webhook-id, webhook-timestamp, webhook-signature); nothing was stored"}
	case errors.Is(err, webhooksig.ErrStaleTimestamp):
		return http.StatusUnauthorized, ErrorDetail{CodeSignatureExpired, err.Error() + "; nothing was stored"}
	case errors.Is(err, webhooksig.ErrMalformedSignature), errors.Is(err, webhooksig.ErrBadSignature):
		return http.StatusUnauthorized, ErrorDetail{CodeSignatureInvalid, err.Error() + "; nothing was stored"}
	case errors.Is(err, pix.ErrPayloadMismatch) && errors.As(err, &item):
		return http.StatusUnprocessableEntity, ErrorDetail{CodePayloadMismatch, fmt.Sprintf(
			"pix[%d]: a PIX with this endToEndId was received with another valor, chave or txid; nothing in the batch was stored", item.Index)}
	case kind != nil && kind.Status != 0:
		return kind.Status, ErrorDetail{kind.Code, kind.APIMessage(err)}
	default:
		return http.StatusInternalServerError, ErrorDetail{CodeInternal, "internal error"}
	}
}

// abortWithError writes the error response for err and logs what the client
// is not told.
func abortWithError(c *gin.Context, log *slog.Logger, err error) {
	status, detail := errorResponse(err)
	if status >= 500 {
		log.ErrorContext(c.Request.Context(), "request failed", append(logAttrs(c), "status", status, "error", err)...)
		if status == http.StatusServiceUnavailable {
			c.Header("Retry-After", "1")
		}
	}
	if status == http.StatusConflict && errors.Is(err, pix.ErrRequestInProgress) {
		wait := time.Second
		var inProgress *db.KeyInProgressError
		if errors.As(err, &inProgress) {
			wait = inProgress.RetryAfter
		}
		c.Header("Retry-After", retryAfterSeconds(wait))
	}
	var bearerErr *bearerError
	if errors.As(err, &bearerErr) {
		c.Header("WWW-Authenticate", bearerErr.challenge)
	}
	c.Set(ctxErrorCode, detail.Code)
	c.AbortWithStatusJSON(status, ErrorBody{Error: detail})
}

// logAttrs are the attributes that tie a log line to the PIX it is about.
func logAttrs(c *gin.Context) []any {
	if id := c.GetString(ctxEndToEndID); id != "" {
		return []any{"end_to_end_id", id}
	}
	return nil
}
