package pix

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Inbox row statuses (the life of a row: docs/architecture.md, "The inbox row's life").
const (
	StatusPending = "pending"
	StatusDone    = "done"
	StatusFailed  = "failed"
)

// StatusSuperseded is not a row status: it is what closing a credit run's
// drive as failed answers when the row was re-driven since, and a newer run
// owns it.
const StatusSuperseded = "superseded"

// Limits of the webhook contract.
const (
	MaxAmountCents     int64 = 100_000_000_000
	MaxAccountIDLength int   = 64
)

// ValidEndToEndID reports whether id has the 32-character BCB format: an "E"
// followed by 31 letters or digits (^E[A-Za-z0-9]{31}$, checked byte by
// byte: every webhook asks, and a regular expression costs more than the
// rest of the check).
func ValidEndToEndID(id string) bool {
	if len(id) != 32 || id[0] != 'E' {
		return false
	}
	for i := 1; i < len(id); i++ {
		if c := id[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// ValidISPB reports whether s is an ISPB: the 8 digits that name a
// participant of the PIX system (^[0-9]{8}$).
func ValidISPB(s string) bool {
	if len(s) != 8 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Webhook formats a notification can arrive in.
const (
	// SourceNative is our own format: the PSP names the account.
	SourceNative = "native"
	// SourceAPIPix is the Central Bank's API Pix format: the account is found
	// through the Pix key (chave) or the charge's txid when the PIX is credited.
	SourceAPIPix = "api_pix"
)

// Notification is a validated PSP notification of a PIX credited to one of our
// accounts. Payload is what is kept verbatim in inbox_messages.payload.
type Notification struct {
	EndToEndID  string
	AmountCents int64
	// Source is SourceNative (AccountID set) or SourceAPIPix (PixKey or
	// TxID set, AccountID empty); "" means SourceNative.
	Source    string
	AccountID string
	PixKey    string
	TxID      string
	// PSP is the name of the PSP whose signature authenticated the request,
	// "" when it was not signed; CatchUpPSP for a PIX the PSP catch-up
	// stored first.
	PSP string
	// RefundNotice is the PSP's devolucoes of the PIX when the delivery
	// carried any: recorded, never credited.
	RefundNotice json.RawMessage
	Payload      json.RawMessage
	// Listed is true for a PIX the PSP catch-up found in the PSP's own
	// record (GET /pix) rather than a delivery: stored first, it is as a
	// webhook's; found stored, it is neither re-driven nor counted as a
	// delivery (each run lists the same PIX again for its overlap).
	Listed bool
}

// CatchUpPSP is the psp of an inbox row the PSP catch-up stored first: no
// webhook told us of the PIX; we found it in the PSP's own record (GET
// /pix of the PSP at PSP_URL). `psp = 'catchup'` finds every PIX whose
// webhook never came. A row a webhook stored first keeps its PSP's name.
// Its credit records the name of the PSP the catch-up lists (PSP_NAME)
// instead: the PSP whose MED notices may hold it (db.Store.SetCatchUpPSP).
const CatchUpPSP = "catchup"

// Receipt is what the inbox answers for a delivery.
type Receipt struct {
	EndToEndID string `json:"end_to_end_id"`
	Status     string `json:"status"`
	Duplicate  bool   `json:"duplicate"`
	// Redriven is true when the delivery found the row failed and put it back
	// to pending (a PSP redelivery is one of the ways to re-drive).
	Redriven bool `json:"-"`
	// Attempts is how many credit attempts the PIX has had (for the logs).
	Attempts int `json:"-"`
}

// MadeDue reports whether the delivery made a credit due: a first delivery,
// or a re-drive.
func (r Receipt) MadeDue() bool { return !r.Duplicate || r.Redriven }

// Credit is the state of one incoming PIX as the API reports it.
type Credit struct {
	EndToEndID string `json:"end_to_end_id"`
	Source     string `json:"source"`
	// AccountID is null for an API Pix notification whose key or charge has
	// not been resolved yet.
	AccountID   *string    `json:"account_id"`
	PixKey      *string    `json:"pix_key,omitempty"`
	TxID        *string    `json:"txid,omitempty"`
	AmountCents int64      `json:"amount_cents"`
	Status      string     `json:"status"`
	Attempts    int        `json:"attempts"`
	LastError   *string    `json:"last_error"`
	Deliveries  int        `json:"deliveries"`
	ReceivedAt  time.Time  `json:"received_at"`
	ProcessedAt *time.Time `json:"processed_at"`
	CreditedAt  *time.Time `json:"credited_at"`
	// Charge is what the credit did to the charge (cob) its PIX named by
	// txid; absent when it named none or is not credited yet.
	Charge *ChargeView `json:"charge,omitempty"`
}

// ChargeView is what a credit did to the charge its PIX named: Outcome is
// "concluded", or why the charge was left as it was ("other_account",
// "amount_mismatch", "not_open", "unknown_charge"). The PIX is credited
// either way.
type ChargeView struct {
	TxID    string `json:"txid"`
	Outcome string `json:"outcome"`
}

// Account is a customer account as the API reports it. Its balance is all
// its money; HeldCents is the part of it set aside by active holds
// (docs/design.md, I11), which nothing may spend; AvailableCents, the
// balance less what is held, is what a debit may take.
type Account struct {
	ID             string    `json:"id"`
	OwnerName      string    `json:"owner_name"`
	Status         string    `json:"status"`
	BalanceCents   int64     `json:"balance_cents"`
	HeldCents      int64     `json:"held_cents"`
	AvailableCents int64     `json:"available_cents"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// Account statuses.
const (
	AccountActive = "active"
	AccountClosed = "closed"
)

// ValidationError is a refused request body; Field names the offending field.
type ValidationError struct {
	Field   string
	Message string
}

func (e *ValidationError) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return fmt.Sprintf("%s: %s", e.Field, e.Message)
}

// Invalid builds a ValidationError for field.
func Invalid(field, format string, args ...any) error {
	return &ValidationError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// Business refusals. Each is declared as a Kind in Kinds (kinds.go), with
// its HTTP answer and Temporal error type.
var (
	// ErrPayloadMismatch: a delivery reuses an end_to_end_id with another
	// account or amount. Nothing changes.
	ErrPayloadMismatch = errors.New("payload differs from the one first received under this end_to_end_id")
	// ErrCreditNotFound: no inbox row and no credit for the end_to_end_id.
	ErrCreditNotFound = errors.New("pix credit not found")
	// ErrAccountNotFound: no account with that id.
	ErrAccountNotFound = errors.New("account not found")
	// ErrPixKeyNotFound: an API Pix notification's chave names no Pix key of
	// ours (yet).
	ErrPixKeyNotFound = errors.New("pix key not found")
	// ErrChargeNotFound: an API Pix notification's txid names no charge of
	// ours (yet).
	ErrChargeNotFound = errors.New("charge not found for txid")
	// ErrAccountClosed: the account exists but can receive no credit.
	ErrAccountClosed = errors.New("account is closed")
	// ErrNotFailed: a re-drive was asked for a PIX that is not failed.
	ErrNotFailed = errors.New("pix credit is not failed")
	// ErrNotPending: a credit was attempted on a row that is not pending
	// (failed rows are credited only after a re-drive puts them back).
	ErrNotPending = errors.New("inbox message is not pending")
	// ErrSuperseded: a run of an older drive of a PIX acted after the row
	// was re-driven; a newer run owns the row, and nothing was changed.
	ErrSuperseded = errors.New("a newer drive of this pix credit owns it")
	// ErrBalanceOverflow: the credit would overflow the balance column.
	ErrBalanceOverflow = errors.New("credit would overflow the account balance")
	// ErrUnavailable: a dependency (PostgreSQL) can't be reached; the caller
	// should retry later. Wrapped around the underlying cause.
	ErrUnavailable = errors.New("service unavailable")
)

// CreditKinds are the credits' business errors (registered in Kinds).
var CreditKinds = []*Kind{
	{Err: ErrPayloadMismatch, Refusal: true,
		Status: http.StatusUnprocessableEntity, Code: "payload_mismatch",
		Message:      "a PIX with this end_to_end_id was received with another account_id or amount_cents; nothing was changed",
		TemporalType: "PayloadMismatch"},
	{Err: ErrCreditNotFound, Refusal: true,
		Status: http.StatusNotFound, Code: "pix_credit_not_found", Message: "no PIX credit with this end_to_end_id",
		TemporalType: "InboxMessageNotFound"},
	{Err: ErrNotFailed, Refusal: true,
		Status: http.StatusConflict, Code: "pix_credit_not_failed",
		Message: "only a failed PIX credit can be re-driven: ", MessageWithCause: true},
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
}

// IsRefusal reports whether err is a business refusal (as opposed to a
// technical failure).
func IsRefusal(err error) bool {
	var ve *ValidationError
	if errors.As(err, &ve) {
		return true
	}
	for _, k := range Kinds {
		if k.Refusal && errors.Is(err, k.Err) {
			return true
		}
	}
	return false
}

// ItemError is the error of one item of a batch (the API Pix format carries
// several PIX per request); Index counts from 0.
type ItemError struct {
	Index int
	Err   error
}

func (e *ItemError) Error() string { return fmt.Sprintf("pix[%d]: %v", e.Index, e.Err) }

func (e *ItemError) Unwrap() error { return e.Err }
