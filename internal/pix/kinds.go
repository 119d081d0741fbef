package pix

import (
	"errors"
	"net/http"
	"slices"
)

// Kind is one business error, declared once: its sentinel, how the API
// answers it and how the Temporal activities raise it. api.errorResponse,
// the activities' ApplicationError types and the workflows' lists of
// non-retryable types are all derived from Kinds, so adding a refusal is one
// entry in Kinds (and returning its Err where it happens).
type Kind struct {
	// Err is the sentinel; an error is of the kind when errors.Is(err, Err).
	Err error
	// Refusal: a business refusal (IsRefusal), as opposed to a technical
	// failure such as ErrUnavailable.
	Refusal bool

	// Status, Code and Message are the API's answer (status and the error
	// envelope); Status 0: the API never answers the kind as such (it is an
	// internal error there).
	Status  int
	Code    string
	Message string
	// MessageWithCause: the message is followed by the error's own text.
	MessageWithCause bool

	// TemporalType is the ApplicationError type activities raise the kind
	// as; "": activities treat it as a technical failure. The type strings
	// are recorded in workflow histories: never change one.
	TemporalType string
	// Retryable: Temporal retries the kind (the condition may clear, e.g. an
	// account being opened); otherwise it is final and listed as
	// non-retryable in the workflows' retry policies.
	Retryable bool
}

// APIMessage is the message the API answers err (of kind k) with.
func (k *Kind) APIMessage(err error) string {
	if k.MessageWithCause {
		return k.Message + err.Error()
	}
	return k.Message
}

// Kinds are every business error, in the order they are matched (the first
// kind err is of wins): the list a saga's kinds are registered in, each
// saga's declared in its own file.
var Kinds = slices.Concat(
	coreKinds,
	refundKinds,
)

// coreKinds are the credits', the transfers' and the shared kinds.
var coreKinds = []*Kind{
	{Err: ErrPayloadMismatch, Refusal: true,
		Status: http.StatusUnprocessableEntity, Code: "payload_mismatch",
		Message:      "a PIX with this end_to_end_id was received with another account_id or amount_cents; nothing was changed",
		TemporalType: "PayloadMismatch"},
	{Err: ErrCreditNotFound, Refusal: true,
		Status: http.StatusNotFound, Code: "pix_credit_not_found", Message: "no PIX credit with this end_to_end_id",
		TemporalType: "InboxMessageNotFound"},
	// AccountNotFound is retried: the account may be in the middle of being
	// opened.
	{Err: ErrAccountNotFound, Refusal: true,
		Status: http.StatusNotFound, Code: "account_not_found", Message: "no account with this id",
		TemporalType: "AccountNotFound", Retryable: true},
	{Err: ErrNotFailed, Refusal: true,
		Status: http.StatusConflict, Code: "pix_credit_not_failed",
		Message: "only a failed PIX credit can be re-driven: ", MessageWithCause: true},
	{Err: ErrInsufficientFunds, Refusal: true,
		Status: http.StatusUnprocessableEntity, Code: "insufficient_funds",
		Message: "the account's balance does not cover the transfer; nothing was debited"},
	{Err: ErrAccountClosed, Refusal: true,
		Status: http.StatusUnprocessableEntity, Code: "account_closed", Message: "the account is closed",
		TemporalType: "AccountClosed"},
	{Err: ErrIdempotencyKeyReused, Refusal: true,
		Status: http.StatusUnprocessableEntity, Code: "idempotency_key_reused",
		Message: "this Idempotency-Key was used with another request body; use a new key for a new operation"},
	{Err: ErrRequestInProgress, Refusal: true,
		Status: http.StatusConflict, Code: "request_in_progress",
		Message: "a request with this Idempotency-Key is in progress; retry after Retry-After seconds to get its answer"},
	{Err: ErrTransferNotFound, Refusal: true,
		Status: http.StatusNotFound, Code: "transfer_not_found", Message: "no transfer with this id",
		TemporalType: "TransferNotFound"},
	// ErrUnavailable is no refusal: a technical failure the API answers
	// with 503, and activities retry (TechnicalFailure).
	{Err: ErrUnavailable,
		Status: http.StatusServiceUnavailable, Code: "service_unavailable",
		Message: "the service can't complete the request right now (database unreachable or busy); nothing was stored, retry later"},
	// PixKeyNotFound and ChargeNotFound: an API Pix notification's chave or
	// txid resolves to no account (yet); retried like AccountNotFound, and a
	// re-drive after the key or charge is registered credits it.
	{Err: ErrPixKeyNotFound, Refusal: true, TemporalType: "PixKeyNotFound", Retryable: true},
	{Err: ErrChargeNotFound, Refusal: true, TemporalType: "ChargeNotFound", Retryable: true},
	// InboxMessageNotPending: the row is failed; only a re-drive (which puts
	// it back to pending) may credit it.
	{Err: ErrNotPending, Refusal: true, TemporalType: "InboxMessageNotPending"},
	// CreditSuperseded: the row was re-driven since the run's drive; a newer
	// run owns it.
	{Err: ErrSuperseded, Refusal: true, TemporalType: "CreditSuperseded"},
	{Err: ErrBalanceOverflow, Refusal: true, TemporalType: "BalanceOverflow"},
	// TransferFinal: the PSP's answer contradicts the transfer's final
	// status (settled vs refunded): a human must look.
	{Err: ErrTransferFinal, Refusal: true, TemporalType: "TransferFinal"},
}

// KindOf returns the kind of err, nil when err is of none.
func KindOf(err error) *Kind {
	if err == nil {
		return nil
	}
	for _, k := range Kinds {
		if errors.Is(err, k.Err) {
			return k
		}
	}
	return nil
}

// TemporalType is the ApplicationError type of the kind of sentinel, ""
// when it has none.
func TemporalType(sentinel error) string {
	if k := KindOf(sentinel); k != nil {
		return k.TemporalType
	}
	return ""
}

// NonRetryableTypes are the ApplicationError types of the final kinds (a
// TemporalType, not Retryable), in the order of Kinds: what the workflows'
// retry policies list as non-retryable.
func NonRetryableTypes() []string {
	var types []string
	for _, k := range Kinds {
		if k.TemporalType != "" && !k.Retryable {
			types = append(types, k.TemporalType)
		}
	}
	return types
}
