package psp

import (
	"context"
	"errors"
	"fmt"
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
}

var (
	// ErrTransient means the PSP could not answer now (5xx, 408, 429,
	// timeout, connection refused or reset, or an answer that can't be
	// understood, whose outcome is therefore unknown): retry later with the
	// same EndToEndID. It is wrapped around the cause.
	ErrTransient = errors.New("psp transiently unavailable")
	// ErrNotFound means the PSP knows no transfer with that end_to_end_id.
	ErrNotFound = errors.New("psp has no such transfer")
)

// RequestError is the PSP's refusal of a request as such (an HTTP 4xx other
// than 408 and 429): a malformed transfer, an end_to_end_id reused for
// another transfer. It is permanent: retrying the same request can't fix it.
type RequestError struct {
	StatusCode int
	// Code is the PSP's machine-readable error code when it sent one (the
	// simulator's "invalid_request", "end_to_end_id_reused"), else "".
	Code    string
	Message string
}

func (e *RequestError) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("psp refused the request (http %d, %s): %s", e.StatusCode, e.Code, e.Message)
	}
	return fmt.Sprintf("psp refused the request (http %d): %s", e.StatusCode, e.Message)
}

// Client is what the worker needs of a PSP; a real PSP adapter implements
// it too.
type Client interface {
	// Submit asks the PSP to send t. Submitting the same EndToEndID again is
	// safe: the PSP answers with the transfer it already has. A definitive
	// rejection is a Result with StatusRejected, not an error.
	Submit(ctx context.Context, t Transfer) (Result, error)
	// Status asks where a submitted transfer stands.
	Status(ctx context.Context, endToEndID string) (Result, error)
}
