package psp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
)

// Transfer is what the bank asks the PSP to send. EndToEndID is the
// idempotency reference the PSP deduplicates on.
type Transfer struct {
	EndToEndID  string `json:"end_to_end_id"`
	AccountID   string `json:"account_id"` // the paying customer account
	AmountCents int64  `json:"amount_cents"`
	PixKey      string `json:"pix_key"` // the receiver's key
}

// Status is where a transfer stands at the PSP.
type Status string

// The statuses of a transfer at the PSP.
const (
	StatusPending  Status = "pending" // accepted, not settled yet
	StatusSettled  Status = "settled"
	StatusRejected Status = "rejected" // definitive
)

// Valid reports whether s is one of the statuses above.
func (s Status) Valid() bool {
	switch s {
	case StatusPending, StatusSettled, StatusRejected:
		return true
	}
	return false
}

// Final reports whether s can no longer change.
func (s Status) Final() bool { return s == StatusSettled || s == StatusRejected }

// Result is the PSP's view of one transfer.
type Result struct {
	EndToEndID string `json:"end_to_end_id"`
	Status     Status `json:"status"`
	Reason     string `json:"reason,omitempty"` // why it was rejected
	// What the PSP holds under EndToEndID, when its answer says (a status
	// query does): an answer about another transfer under our id must never
	// be taken for ours (see Matches).
	AmountCents int64  `json:"amount_cents,omitempty"`
	PixKey      string `json:"pix_key,omitempty"`
	AccountID   string `json:"account_id,omitempty"`
}

// Matches reports whether what the PSP says it holds is t, as far as the
// answer says: every detail it names must be t's.
func (r Result) Matches(t Transfer) bool {
	return r.EndToEndID == t.EndToEndID &&
		(r.AmountCents == 0 || r.AmountCents == t.AmountCents) &&
		(r.PixKey == "" || r.PixKey == t.PixKey) &&
		(r.AccountID == "" || r.AccountID == t.AccountID)
}

var (
	// ErrTransient means the PSP could not answer now (5xx, 408, 425, 429,
	// timeout, connection refused or reset, or an answer that can't be
	// understood, whose outcome is therefore unknown): retry later with the
	// same EndToEndID. It is wrapped around the cause.
	ErrTransient = errors.New("psp transiently unavailable")
	// ErrNotFound means the PSP knows no transfer with that end_to_end_id.
	ErrNotFound = errors.New("psp has no such transfer")
	// ErrAlreadySubmitted means the PSP answered a submission 409: it
	// already holds a transfer under that end_to_end_id (an earlier
	// submission whose answer was lost). Ask its status. A *RequestError
	// with StatusCode 409 is this error (errors.Is).
	ErrAlreadySubmitted = errors.New("psp already has a transfer with this end_to_end_id")
)

// RequestError is the PSP's refusal of a request as such (an HTTP 4xx other
// than 408, 409, 425 and 429): a malformed request, expired or wrong
// credentials (401, 403), a wrong address (404), a body too large (413).
// It says that our request or our credentials are wrong, never that the
// transfer was rejected: the PSP may hold it from an earlier submission.
// It is never a reason to compensate (see Classify).
type RequestError struct {
	// StatusCode is the PSP's HTTP status; 0 when the client refused to
	// send a request it knows to be malformed (RequestRefund's checks), so
	// that a bug of ours is AnswerRequestRefused rather than retried as
	// transient for ever.
	StatusCode int
	// Code is the PSP's machine-readable error code when it sent one (the
	// simulator's "invalid_request", "unauthorized"), else "".
	Code    string
	Message string
}

func (e *RequestError) Error() string {
	if e.StatusCode == 0 {
		return fmt.Sprintf("request not sent to the psp (%s): %s", e.Code, e.Message)
	}
	if e.Code != "" {
		return fmt.Sprintf("psp refused the request (http %d, %s): %s", e.StatusCode, e.Code, e.Message)
	}
	return fmt.Sprintf("psp refused the request (http %d): %s", e.StatusCode, e.Message)
}

// CodeEndToEndIDReused is the error code of a 409 that says the
// end_to_end_id is another transfer's (other amount, key or account), not
// a duplicate of ours: a refused request, never "already submitted".
const CodeEndToEndIDReused = "end_to_end_id_reused"

// CodeRefundIDReused is the error code of a 409 that says a devolução id is
// already another devolução's (another valor) under that end_to_end_id:
// a refused request, never "already submitted".
const CodeRefundIDReused = "refund_id_reused"

// CodeRefundRefused is the BCB API Pix's error of a devolução the PSP
// refuses outright (past its window, over the PIX's value): the last
// segment of its RFC 7807 type, ".../DevolucaoOperacaoInvalida". Of every
// code a 400 or 422 may carry, only this one says that the PSP itself
// refused the devolução and keeps no record of it; a framework's or a
// gateway's generic problem ("about:blank", an RFC section) does not.
const CodeRefundRefused = "DevolucaoOperacaoInvalida"

// Is makes a 409 refusal ErrAlreadySubmitted, unless the PSP said the id is
// another transfer's or another devolução's.
func (e *RequestError) Is(target error) bool {
	return target == ErrAlreadySubmitted && e.StatusCode == http.StatusConflict &&
		e.Code != CodeEndToEndIDReused && e.Code != CodeRefundIDReused
}

// Answer is what an answer from the PSP means for a transfer, and so what
// the bank may do about it. Only AnswerResult with a rejected status, once
// the PSP's status query confirms it, ever leads to a refund.
type Answer int

// The classes of PSP answers (docs/outgoing.md, "PSP answers").
const (
	// AnswerResult: a Result about the transfer: pending, settled, or
	// rejected (definitive; a rejection at submission is confirmed by a
	// status query before the refund).
	AnswerResult Answer = iota
	// AnswerAlreadySubmitted: 409; the PSP holds the transfer already:
	// ask its status and go on from that, once the status shows it is ours
	// (Result.Matches).
	AnswerAlreadySubmitted
	// AnswerNotFound: a status query found no such transfer: submit again
	// under the same end_to_end_id (the PSP deduplicates); never refund.
	AnswerNotFound
	// AnswerRequestRefused: our request or credentials are wrong (401,
	// 403, 400, 404 on submit, 413, a 409 end_to_end_id_reused, any other
	// 4xx): never compensate; retry
	// with backoff, fail the run visibly, alert.
	AnswerRequestRefused
	// AnswerTransient: no answer, or none that can be understood (5xx, 408,
	// 425, 429, timeouts, cut connections, unexpected bodies): the outcome
	// is unknown; retry with the same end_to_end_id; never refund.
	AnswerTransient
)

func (a Answer) String() string {
	switch a {
	case AnswerResult:
		return "result"
	case AnswerAlreadySubmitted:
		return "already_submitted"
	case AnswerNotFound:
		return "not_found"
	case AnswerRequestRefused:
		return "request_refused"
	case AnswerTransient:
		return "transient"
	}
	return "unknown"
}

// Classify says what the outcome of a Submit or Status call means: nil is
// AnswerResult, and every error is one of the other classes. An error that
// is none of this package's (a cancelled context) is AnswerTransient: it
// says nothing about the transfer.
func Classify(err error) Answer {
	var refused *RequestError
	switch {
	case err == nil:
		return AnswerResult
	case errors.Is(err, ErrAlreadySubmitted):
		return AnswerAlreadySubmitted
	case errors.Is(err, ErrNotFound):
		return AnswerNotFound
	case errors.As(err, &refused):
		return AnswerRequestRefused
	default:
		return AnswerTransient
	}
}

// Client is what the worker needs of a PSP; a real PSP adapter implements
// it too.
type Client interface {
	// Submit asks the PSP to send t. Submitting the same EndToEndID again is
	// safe: the PSP answers with the transfer it already has (or 409,
	// ErrAlreadySubmitted). A rejection is a Result with StatusRejected, not
	// an error.
	Submit(ctx context.Context, t Transfer) (Result, error)
	// Status asks where a submitted transfer stands.
	Status(ctx context.Context, endToEndID string) (Result, error)
}
