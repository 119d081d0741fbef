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
	// ErrNotFound means the PSP knows no such record: no transfer with
	// that end_to_end_id, no devolução under that id, no webhook for that
	// key.
	ErrNotFound = errors.New("psp has no such record")
	// ErrAlreadySubmitted means the PSP answered a submission 409: it
	// already holds a transfer under that end_to_end_id (an earlier
	// submission whose answer was lost). Ask its status. A *RequestError
	// with StatusCode 409 is this error (errors.Is).
	ErrAlreadySubmitted = errors.New("psp already has a transfer with this end_to_end_id")
)

// RequestError is the PSP's refusal of a request as such (an HTTP 4xx other
// than 408, 409, 425 and 429): a malformed request, expired or wrong
// credentials (401, 403 AcessoNegado), a wrong address (404), a body too
// large (413). It says that our request or our credentials are wrong, never
// that the transfer was rejected: the PSP may hold it from an earlier
// submission. It is never a reason to compensate (see Classify); the one
// exception Classify names is the refusal of a devolução itself (400
// PixDevolucaoInvalida), and even that only sends the saga to the PSP's
// record.
type RequestError struct {
	// StatusCode is the PSP's HTTP status; 0 when the client refused to
	// send a request it knows to be malformed (RequestRefund's checks), so
	// that a bug of ours is AnswerRequestRefused rather than retried as
	// transient for ever.
	StatusCode int
	// Type is the RFC 7807 problem's type as the PSP sent it, in full
	// ("https://pix.bcb.gov.br/api/v2/error/PixDevolucaoInvalida"), when
	// its answer was a problem; else "".
	Type string
	// Code is the simulator's machine-readable error code of its own
	// routes ("invalid_request", "end_to_end_id_reused") when it sent one,
	// or ours for a request not sent; else "".
	Code    string
	Message string
}

func (e *RequestError) Error() string {
	switch {
	case e.StatusCode == 0:
		return fmt.Sprintf("request not sent to the psp (%s): %s", e.Code, e.Message)
	case e.Type != "":
		return fmt.Sprintf("psp refused the request (http %d, %s): %s", e.StatusCode, e.Type, e.Message)
	case e.Code != "":
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

// The API Pix's problem types (RFC 7807 type, "Tratamento de erros" of the
// spec) that the client tells apart; every one is matched in full, never
// by its last segment, so that a gateway's or a framework's problem of a
// similar name is never taken for the PSP's.
const (
	// ProblemTypePrefix begins every problem type of the API Pix.
	ProblemTypePrefix = "https://pix.bcb.gov.br/api/v2/error/"
	// ProblemPixDevolucaoInvalida (400, PUT /pix/{e2eid}/devolucao/{id}):
	// the PSP refuses that devolução (its valor, over the PIX's value, past
	// its window, or an {id} already used by another devolução of that
	// PIX: what a retried PUT may get when the first one made it).
	ProblemPixDevolucaoInvalida = ProblemTypePrefix + "PixDevolucaoInvalida"
	// ProblemNaoEncontrado (404): no such entity.
	ProblemNaoEncontrado = ProblemTypePrefix + "NaoEncontrado"
	// ProblemPixDevolucaoNaoEncontrada (404, GET /pix/{e2eid}/devolucao/{id}):
	// no devolução under that id.
	ProblemPixDevolucaoNaoEncontrada = ProblemTypePrefix + "PixDevolucaoNaoEncontrada"
	// ProblemWebhookNaoEncontrado (404, GET and DELETE /webhook/{chave}): no
	// webhook registered for the key.
	ProblemWebhookNaoEncontrado = ProblemTypePrefix + "WebhookNaoEncontrado"
	// ProblemAcessoNegado (403): our credentials do not allow the call (a
	// scope missing).
	ProblemAcessoNegado = ProblemTypePrefix + "AcessoNegado"
	// ProblemServicoIndisponivel (503): the PSP is down or out of its window.
	ProblemServicoIndisponivel = ProblemTypePrefix + "ServicoIndisponivel"
)

// Is makes a 409 refusal ErrAlreadySubmitted, unless the PSP said the id is
// another transfer's or another devolução's.
func (e *RequestError) Is(target error) bool {
	return target == ErrAlreadySubmitted && e.StatusCode == http.StatusConflict &&
		e.Code != CodeEndToEndIDReused && e.Code != CodeRefundIDReused
}

// refusesRefund reports whether e is the PSP refusing a devolução itself:
// the spec's 400 with the problem type PixDevolucaoInvalida, in full.
func (e *RequestError) refusesRefund() bool {
	return e.StatusCode == http.StatusBadRequest && e.Type == ProblemPixDevolucaoInvalida
}

// Answer is what an answer from the PSP means for a transfer or a
// devolução, and so what the bank may do about it. Only AnswerResult with a
// rejected (not made) status, once the PSP's own record confirms it, ever
// leads to a compensation; AnswerRefundRefused leads to the PSP's record,
// which decides.
type Answer int

// The classes of PSP answers (docs/outgoing.md, "PSP answers";
// docs/refunds.md).
const (
	// AnswerResult: a Result about the transfer (or a RefundResult about
	// the devolução): pending, settled, or rejected (definitive; a
	// rejection at submission is confirmed by a status query before the
	// refund).
	AnswerResult Answer = iota
	// AnswerAlreadySubmitted: 409; the PSP holds the transfer already:
	// ask its status and go on from that, once the status shows it is ours
	// (Result.Matches).
	AnswerAlreadySubmitted
	// AnswerNotFound: a status query found no such transfer (or no such
	// devolução: a 404 with the spec's NaoEncontrado or
	// PixDevolucaoNaoEncontrada): submit again under the same id (the PSP
	// deduplicates); never compensate on it alone.
	AnswerNotFound
	// AnswerRequestRefused: our request or credentials are wrong (401,
	// 403 AcessoNegado, 400, 404 on submit, 413, a 409
	// end_to_end_id_reused, any other 4xx), or the OAuth 2.0 token
	// endpoint refused our client (*TokenError: invalid_client,
	// invalid_scope, ...): never compensate; retry with backoff, fail the
	// run visibly, alert.
	AnswerRequestRefused
	// AnswerTransient: no answer, or none that can be understood (5xx
	// ServicoIndisponivel included, 408, 425, 429, timeouts, cut
	// connections, unexpected bodies, the token endpoint down): the outcome
	// is unknown; retry with the same id; never compensate.
	AnswerTransient
	// AnswerRefundRefused: the PSP refused the devolução itself (400
	// PixDevolucaoInvalida). The same answer comes to a retried PUT whose
	// first one made the devolução and lost its answer (the id is already
	// used), so it never decides alone: the PSP's record of the devolução
	// does (docs/refunds.md).
	AnswerRefundRefused
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
	case AnswerRefundRefused:
		return "refund_refused"
	}
	return "unknown"
}

// Classify says what the outcome of a call of this package means: nil is
// AnswerResult, and every error is one of the other classes. It is the one
// answer table: a problem's type decides where the spec gives one that
// says more than its status (PixDevolucaoInvalida), the status otherwise
// (statusError made the error of it):
//
//	nil                                        AnswerResult
//	*TokenError refused (4xx, invalid_client)  AnswerRequestRefused
//	*TokenError down (no answer, 5xx, timeout) AnswerTransient
//	409 (ErrAlreadySubmitted)                  AnswerAlreadySubmitted
//	ErrNotFound                                AnswerNotFound
//	400 PixDevolucaoInvalida                   AnswerRefundRefused
//	any other *RequestError (AcessoNegado,
//	  NaoEncontrado to a PUT, undocumented)    AnswerRequestRefused
//	anything else (ErrTransient, 5xx and
//	  ServicoIndisponivel, a cancelled context) AnswerTransient
//
// An error that is none of this package's (a cancelled context) says
// nothing about the transfer: AnswerTransient.
func Classify(err error) Answer {
	var refused *RequestError
	var token *TokenError
	switch {
	case err == nil:
		return AnswerResult
	case errors.As(err, &token):
		if token.Transient {
			return AnswerTransient
		}
		return AnswerRequestRefused
	case errors.Is(err, ErrAlreadySubmitted):
		return AnswerAlreadySubmitted
	case errors.Is(err, ErrNotFound):
		return AnswerNotFound
	case errors.As(err, &refused):
		if refused.refusesRefund() {
			return AnswerRefundRefused
		}
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
