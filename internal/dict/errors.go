package dict

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// ProblemTypePrefix begins every problem type of the DICT (RFC 7807, in
// XML: "Tratamento de erros" of the specification). A type is matched in
// full, never by its last segment, so that a gateway's problem of a
// similar name is never taken for the DICT's.
const ProblemTypePrefix = "https://dict.pi.rsfn.net.br/api/v1/error/"

// Problem is one problem type the specification declares. A *ProblemError
// of that type is it (errors.Is).
type Problem struct{ name string }

// Name is the type's last segment: "NotFound".
func (p *Problem) Name() string { return p.name }

// Type is the type in full.
func (p *Problem) Type() string { return ProblemTypePrefix + p.name }

func (p *Problem) Error() string { return "dict problem " + p.name }

// problems are the declared problems by type in full.
var problems = map[string]*Problem{}

func declare(name string) *Problem {
	p := &Problem{name: name}
	if problems[p.Type()] != nil {
		panic("dict: problem " + name + " declared twice")
	}
	problems[p.Type()] = p
	return p
}

// The problem types of the specification that the operations of this
// client may answer: the general ones, the infraction reports' and the
// refunds' (those of entries and claims are not the bank's calls here).
// What a caller does about each is in doc.go ("Errors").
var (
	// ErrForbidden (403): an authenticated participant that breaks an
	// authorization rule (the report is not ours to close, ...).
	ErrForbidden = declare("Forbidden")
	// ErrBadRequest (400): a request of an invalid format.
	ErrBadRequest = declare("BadRequest")
	// ErrNotFound (404): no such report or refund request.
	ErrNotFound = declare("NotFound")
	// ErrRateLimited (429): the operation's token bucket is empty: the
	// request was not processed; send it again after RetryAfter.
	ErrRateLimited = declare("RateLimited")
	// ErrInternalServerError (500): outcome unknown.
	ErrInternalServerError = declare("InternalServerError")
	// ErrServiceUnavailable (503): the DICT is down or out of its window;
	// outcome unknown; Retry-After says when to try again.
	ErrServiceUnavailable = declare("ServiceUnavailable")
	// ErrRequestSignatureInvalid: the DICT refuses our request's signature
	// (our signing certificate, or a bug of ours): nothing was done; an
	// alert, not a retry.
	ErrRequestSignatureInvalid = declare("RequestSignatureInvalid")
	// ErrRequestIDAlreadyUsed: a RequestId reused with other parameters
	// (no operation of this client sends one).
	ErrRequestIDAlreadyUsed = declare("RequestIdAlreadyUsed")
	// ErrInvalidReason: a reason invalid for the operation.
	ErrInvalidReason = declare("InvalidReason")

	// ErrInfractionReportInvalid: invalid fields.
	ErrInfractionReportInvalid = declare("InfractionReportInvalid")
	// ErrInfractionReportOperationInvalid: the report's status does not
	// allow the operation (an acknowledge of a closed report, a close with
	// other parameters than the first, a cancelled report): read the report
	// back; its status decides.
	ErrInfractionReportOperationInvalid = declare("InfractionReportOperationInvalid")
	// ErrInfractionReportTransactionNotFound: no such transaction.
	ErrInfractionReportTransactionNotFound = declare("InfractionReportTransactionNotFound")
	// ErrInfractionReportTransactionNotSettled: the transaction was not
	// settled.
	ErrInfractionReportTransactionNotSettled = declare("InfractionReportTransactionNotSettled")
	// ErrInfractionReportAlreadyBeingProcessedForTransaction: a report is
	// already open for the transaction.
	ErrInfractionReportAlreadyBeingProcessedForTransaction = declare("InfractionReportAlreadyBeingProcessedForTransaction")
	// ErrInfractionReportAlreadyProcessedForTransaction: a report of the
	// transaction is already closed.
	ErrInfractionReportAlreadyProcessedForTransaction = declare("InfractionReportAlreadyProcessedForTransaction")
	// ErrInfractionReportPeriodExpired: too late to report.
	ErrInfractionReportPeriodExpired = declare("InfractionReportPeriodExpired")

	// ErrRefundOperationInvalid: the refund request's status does not
	// allow the operation (a close of a request closed with other
	// parameters, or cancelled): read it back; its status decides.
	ErrRefundOperationInvalid = declare("RefundOperationInvalid")
	// ErrRefundTransactionNotFound: no such transaction.
	ErrRefundTransactionNotFound = declare("RefundTransactionNotFound")
	// ErrRefundTransactionNotSettled: the transaction was not settled.
	ErrRefundTransactionNotSettled = declare("RefundTransactionNotSettled")
	// ErrRefundAlreadyProcessedForTransaction: a refund request of the
	// transaction is already processed.
	ErrRefundAlreadyProcessedForTransaction = declare("RefundAlreadyProcessedForTransaction")
	// ErrRefundAlreadyBeingProcessedForTransaction: a refund request of the
	// transaction is already being processed.
	ErrRefundAlreadyBeingProcessedForTransaction = declare("RefundAlreadyBeingProcessedForTransaction")
	// ErrRefundPeriodExpired: too late to request a refund.
	ErrRefundPeriodExpired = declare("RefundPeriodExpired")
	// ErrTransactionNotRefundable: the transaction allows no refund.
	ErrTransactionNotRefundable = declare("TransactionNotRefundable")
	// ErrRefundInfractionReportNotFound: no infraction report matches the
	// transaction of the refund request.
	ErrRefundInfractionReportNotFound = declare("RefundInfractionReportNotFound")
)

var (
	// ErrUnknownOutcome means the DICT did not answer, or not in a way that
	// says what it did: a 5xx (InternalServerError, ServiceUnavailable), a
	// timeout, a cut connection, an answer that is not what the operation
	// answers. A write may have been done: read it back before sending it
	// again (doc.go, "Lost answers"). Retryable.
	ErrUnknownOutcome = errors.New("dict: outcome unknown")
	// ErrUnverifiedAnswer means an answer whose signature is missing, is
	// not by the DICT's certificate, or does not match the answer, or a
	// signed answer whose ResponseTime is not the call's (a replay): it is
	// never accepted, whatever it says. A write's outcome is then unknown
	// as well; the cause (a DICT certificate not configured, a tampering
	// peer) is for an operator.
	ErrUnverifiedAnswer = errors.New("dict: answer's signature missing or invalid")
	// ErrNotSent means the client refused to send a request it knows to be
	// invalid (an id that is not a uuid, an unknown enumeration value):
	// a bug of the caller's, never retried.
	ErrNotSent = errors.New("dict: request not sent")
	// ErrInstantTooFull is a walk that cannot get past one instant: more
	// items of one Status modified at that instant than a page holds
	// (MaxLimit). The lists have no offset, so nothing the specification
	// offers reaches the rest; the walk stops there (the same walk stops at
	// the same place until the DICT's items change): an operator's matter.
	ErrInstantTooFull = errors.New("dict list: more items of one status modified at one instant than a page holds")
)

// ProblemError is an answer of the DICT that is an error: its HTTP
// status and, when it sent an RFC 7807 problem, the problem.
type ProblemError struct {
	// Operation is the specification's operationId of the call.
	Operation string
	// StatusCode is the HTTP status.
	StatusCode int
	// Type is the problem's type as sent, in full; "" without a problem.
	Type string
	// Problem is the declared problem of Type; nil when Type is none of
	// them, or the answer is not signed (the status then classifies the
	// error).
	Problem       *Problem
	Title, Detail string
	CorrelationID string
	// RetryAfter is how long to wait before sending again (429, 503): the
	// answer's Retry-After header, or, for a 429 without one, the time the
	// operation's token bucket takes to refill one token (the
	// specification's policy table). 0 otherwise.
	RetryAfter time.Duration
	// Signed: the problem's signature was verified. A refusal (4xx other
	// than 408, 425, 429) is never accepted unsigned; an answer that only
	// says "later" (429, 5xx) may come unsigned from a gateway.
	Signed bool
}

func (e *ProblemError) Error() string {
	what := e.Type
	switch {
	case what == "":
		what = http.StatusText(e.StatusCode)
	case !e.Signed:
		what += " (unsigned)"
	}
	msg := fmt.Sprintf("dict %s: http %d %s", e.Operation, e.StatusCode, what)
	if e.Detail != "" {
		msg += ": " + e.Detail
	} else if e.Title != "" {
		msg += ": " + e.Title
	}
	if e.CorrelationID != "" {
		msg += " (correlation id " + e.CorrelationID + ")"
	}
	return msg
}

// Unwrap makes the error its declared problem (signed only),
// ErrRateLimited for any 429, and ErrUnknownOutcome for a 5xx.
func (e *ProblemError) Unwrap() []error {
	var errs []error
	if e.Problem != nil && e.Signed {
		errs = append(errs, e.Problem)
	}
	if e.StatusCode == http.StatusTooManyRequests && e.Problem != ErrRateLimited {
		errs = append(errs, ErrRateLimited)
	}
	if later(e.StatusCode) && e.StatusCode != http.StatusTooManyRequests {
		errs = append(errs, ErrUnknownOutcome)
	}
	return errs
}

// later reports whether an HTTP status says only that the DICT (or a
// gateway before it) could not answer now: 5xx, 408, 425, 429. Such an
// answer is taken without a signature: nothing is accepted from it.
func later(code int) bool {
	return code >= 500 || code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code == http.StatusTooEarly
}

// SignatureError is an answer not accepted for its signature: it is
// ErrUnverifiedAnswer (errors.Is).
type SignatureError struct {
	Operation  string
	StatusCode int
	Reason     string
	cause      error
}

func (e *SignatureError) Error() string {
	msg := fmt.Sprintf("dict %s: http %d answer not accepted: %s", e.Operation, e.StatusCode, e.Reason)
	if e.cause != nil {
		msg += ": " + e.cause.Error()
	}
	return msg
}

func (e *SignatureError) Unwrap() []error { return []error{ErrUnverifiedAnswer, e.cause} }

// Class is what the outcome of a call means for the caller.
type Class int

// The classes of outcomes (doc.go, "Errors").
const (
	// Done: no error; the answer is the DICT's, verified.
	Done Class = iota
	// Refused: the DICT refused the request, in a signed problem (a 4xx
	// other than 429: NotFound, ...OperationInvalid, Forbidden,
	// RequestSignatureInvalid, ...), or the client did not send it
	// (ErrNotSent). Definitive: the same request gets the same answer.
	// The problem says what to do (doc.go).
	Refused
	// RateLimited: 429; the request was not processed. Send it again after
	// RetryAfter.
	RateLimited
	// Unknown: no answer, a 5xx, an answer that can't be understood. A
	// write may have been done: read back, then send again.
	Unknown
	// Unverified: an answer whose signature is missing or wrong: never
	// accepted. Outcome unknown, as Unknown; and an operator's matter.
	Unverified
	// Malformed: an answer verified whose report or refund request is not
	// the specification's (ErrMalformedItem: a required element missing, a
	// value its enumeration does not have, ...), or a walk stopped at such
	// an item: never decided on. Outcome unknown, as Unknown; and an
	// operator's matter, as Unverified.
	Malformed
)

func (c Class) String() string {
	switch c {
	case Done:
		return "done"
	case Refused:
		return "refused"
	case RateLimited:
		return "rate_limited"
	case Unknown:
		return "unknown"
	case Unverified:
		return "unverified"
	case Malformed:
		return "malformed"
	}
	return "class(" + fmt.Sprint(int(c)) + ")"
}

// Retryable reports whether sending the same request again is the answer
// to c (after a read-back, for a write whose outcome is unknown).
func (c Class) Retryable() bool {
	return c == RateLimited || c == Unknown || c == Unverified || c == Malformed
}

// Classify says what an error of this package means. An error that is none
// of its own (a cancelled context) says nothing about the DICT: Unknown.
func Classify(err error) Class {
	var pe *ProblemError
	switch {
	case err == nil:
		return Done
	case errors.Is(err, ErrUnverifiedAnswer):
		return Unverified
	case errors.Is(err, ErrMalformedItem):
		return Malformed
	case errors.Is(err, ErrNotSent):
		return Refused
	case errors.As(err, &pe):
		switch {
		case pe.StatusCode == http.StatusTooManyRequests:
			return RateLimited
		case pe.StatusCode >= 400 && pe.StatusCode < 500 && pe.Signed && !later(pe.StatusCode):
			// A signed 408 or 425 still says only "later".
			return Refused
		}
	}
	return Unknown
}

// RetryAfter is how long err says to wait before sending again: a 429's or
// a 503's (see ProblemError.RetryAfter); false when it says nothing.
func RetryAfter(err error) (time.Duration, bool) {
	var pe *ProblemError
	if errors.As(err, &pe) && pe.RetryAfter > 0 {
		return pe.RetryAfter, true
	}
	return 0, false
}
