package pix

import (
	"errors"
	"fmt"
	"maps"
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

// Kinds are every business error: each saga's, declared in its own file
// (CreditKinds, TransferKinds, RefundKinds; HoldKinds, the money API's,
// which the credit's descriptor owns with its own), and the kinds no one saga owns
// (SharedKinds). They are matched in this order (the first kind err is of
// wins), which matters only for an error wrapping the sentinels of two
// kinds; NonRetryableTypes lists their types in it. Each saga's descriptor
// (package saga) names its list, and a -short test there fails when Kinds
// is not exactly the descriptors' lists and SharedKinds.
var Kinds = slices.Concat(
	CreditKinds,
	TransferKinds,
	RefundKinds,
	HoldKinds,
	SharedKinds,
)

// DeclareKinds adds the kinds of a saga declared in a package of its own
// (saga/<name>) to Kinds, after every kind declared before, and returns
// them: the saga's list (its descriptor's Kinds). Call it only while the
// saga's package variables are initialised (a package-level variable), so
// that Kinds is complete before anything matches an error against it.
func DeclareKinds(kinds ...*Kind) []*Kind {
	Kinds = append(Kinds, kinds...)
	return kinds
}

// SharedKinds are the kinds no one saga owns: the Idempotency-Key layer's,
// the accounts' (every money saga debits or credits one), and
// ErrUnavailable.
var SharedKinds = []*Kind{
	// AccountNotFound is retried: the account may be in the middle of being
	// opened.
	{Err: ErrAccountNotFound, Refusal: true,
		Status: http.StatusNotFound, Code: "account_not_found", Message: "no account with this id",
		TemporalType: "AccountNotFound", Retryable: true},
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
	// ErrUnavailable is no refusal: a technical failure the API answers
	// with 503, and activities retry (TechnicalFailure).
	{Err: ErrUnavailable,
		Status: http.StatusServiceUnavailable, Code: "service_unavailable",
		Message: "the service can't complete the request right now (database unreachable or busy); nothing was stored, retry later"},
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

// CheckRetryPolicies holds retry policies (by name, their non-retryable
// error types) to kinds: every final kind (a TemporalType, not Retryable)
// is listed non-retryable in each, and no retried kind in any. The
// workflows' tests and each saga's hold their policies to it: a policy
// built before a saga's package declared its kinds (DeclareKinds) misses
// them.
func CheckRetryPolicies(kinds []*Kind, policies map[string][]string) error {
	var errs []error
	for _, k := range kinds {
		if k.TemporalType == "" {
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(policies)) {
			if got := slices.Contains(policies[name], k.TemporalType); got == k.Retryable {
				errs = append(errs, fmt.Errorf("%v (%s): listed non-retryable in the %s policy = %v, kind Retryable = %v",
					k.Err, k.TemporalType, name, got, k.Retryable))
			}
		}
	}
	return errors.Join(errs...)
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
