package pix

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Outgoing transfer statuses: debited -> submitted -> settled | refunded
// (refunded also straight from debited, when the PSP rejects the
// submission).
const (
	TransferDebited   = "debited"
	TransferSubmitted = "submitted"
	TransferSettled   = "settled"
	TransferRefunded  = "refunded"
)

// TransferRequest is a validated POST /pix body.
type TransferRequest struct {
	AccountID   string
	AmountCents int64
	PixKey      string
	Description string
}

// Transfer is an outgoing PIX as the API reports it.
type Transfer struct {
	ID                string     `json:"id"`
	EndToEndID        string     `json:"end_to_end_id"`
	AccountID         string     `json:"account_id"`
	AmountCents       int64      `json:"amount_cents"`
	PixKey            string     `json:"pix_key"`
	Description       *string    `json:"description"`
	Status            string     `json:"status"`
	BalanceAfterCents int64      `json:"balance_after_cents"`
	FailureReason     *string    `json:"failure_reason"`
	CreatedAt         time.Time  `json:"created_at"`
	SubmittedAt       *time.Time `json:"submitted_at"`
	SettledAt         *time.Time `json:"settled_at"`
	RefundedAt        *time.Time `json:"refunded_at"`
}

// Refusals of outgoing transfers and of the Idempotency-Key layer.
var (
	// ErrInsufficientFunds: the balance does not cover the transfer.
	ErrInsufficientFunds = errors.New("insufficient funds")
	// ErrTransferNotFound: no transfer with that id.
	ErrTransferNotFound = errors.New("transfer not found")
	// ErrTransferFinal: a transfer that is settled can't be refunded, and
	// one that is refunded can't be settled.
	ErrTransferFinal = errors.New("transfer is already final")
	// ErrIdempotencyKeyReused: the key was first used with another body.
	ErrIdempotencyKeyReused = errors.New("idempotency key reused with another request body")
	// ErrRequestInProgress: another request holds the key and has not
	// answered yet.
	ErrRequestInProgress = errors.New("a request with this idempotency key is in progress")
)

// TransferKinds are the outgoing transfers' business errors (registered in
// Kinds).
var TransferKinds = []*Kind{
	{Err: ErrTransferNotFound, Refusal: true,
		Status: http.StatusNotFound, Code: "transfer_not_found", Message: "no transfer with this id",
		TemporalType: "TransferNotFound"},
	// TransferFinal: the PSP's answer contradicts the transfer's final
	// status (settled vs refunded): a human must look.
	{Err: ErrTransferFinal, Refusal: true, TemporalType: "TransferFinal"},
}

const e2eAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// NewEndToEndID returns a fresh end_to_end_id in the Central Bank's format:
// "E", the sending institution's ISPB (8 digits), the date and time
// (yyyyMMddHHmm, UTC) and 11 random letters or digits.
func NewEndToEndID(ispb string, at time.Time) string {
	random := make([]byte, 11)
	_, _ = rand.Read(random) // crypto/rand.Read never fails
	for i, b := range random {
		random[i] = e2eAlphabet[int(b)%len(e2eAlphabet)]
	}
	return fmt.Sprintf("E%s%s%s", ispb, at.UTC().Format("200601021504"), random)
}
