package pix

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"regexp"
	"time"
)

// The statuses of a refund (devolução) of a received PIX:
//
//	debited -> requested -> returned
//	                     -> reversed (the PSP did not return it: debit reversed)
//	debited -> reversed  (the PSP refused it at once)
const (
	RefundDebited   = "debited"   // the account is debited; the PSP not yet asked
	RefundRequested = "requested" // the PSP holds the devolução (EM_PROCESSAMENTO)
	RefundReturned  = "returned"  // the PSP returned the money (DEVOLVIDO): final
	RefundReversed  = "reversed"  // the PSP did not (NAO_REALIZADO): the debit was reversed, final
)

// RefundWindow is how long after its credit a PIX may be returned.
const RefundWindow = 90 * 24 * time.Hour

// MaxRefundReasonLength is the most characters a refund's reason has (the
// BCB's descricao).
const MaxRefundReasonLength = 140

// RefundRequest is what a customer asks: return AmountCents of a PIX they
// received.
type RefundRequest struct {
	EndToEndID  string
	AmountCents int64
	Reason      string
}

// Refund is one devolução of a received PIX.
type Refund struct {
	// ID is ours: the devolução's id at the PSP (PUT
	// /pix/{e2eid}/devolucao/{id}) and in its workflow id.
	ID string `json:"id"`
	// EndToEndID is the PIX returned.
	EndToEndID string `json:"end_to_end_id"`
	// RtrID is the devolução's own end-to-end id, given by the PSP.
	RtrID             *string    `json:"rtr_id"`
	AccountID         string     `json:"account_id"`
	AmountCents       int64      `json:"amount_cents"`
	Reason            *string    `json:"reason"`
	Status            string     `json:"status"`
	BalanceAfterCents int64      `json:"balance_after_cents"`
	FailureReason     *string    `json:"failure_reason"` // the PSP's motivo when it was not returned
	CreatedAt         time.Time  `json:"created_at"`
	RequestedAt       *time.Time `json:"requested_at"`
	ReturnedAt        *time.Time `json:"returned_at"`
	ReversedAt        *time.Time `json:"reversed_at"`
}

// Final reports whether the refund can no longer change.
func (r Refund) Final() bool { return r.Status == RefundReturned || r.Status == RefundReversed }

// Refusals of refunds.
var (
	// ErrPixNotCredited: no credited PIX of the caller's has that
	// end_to_end_id (another customer's PIX looks the same).
	ErrPixNotCredited = errors.New("pix not credited")
	// ErrRefundExceedsCredit: with this refund, the PIX's refunds would
	// sum to more than its credit.
	ErrRefundExceedsCredit = errors.New("refunds would exceed the credit")
	// ErrRefundWindowClosed: the PIX was credited more than RefundWindow ago.
	ErrRefundWindowClosed = errors.New("refund window closed")
	// ErrRefundNotFound: no refund with that id.
	ErrRefundNotFound = errors.New("refund not found")
	// ErrRefundFinal: the PSP's answer contradicts the refund's final
	// status (returned vs reversed): a human must look.
	ErrRefundFinal = errors.New("refund is already final")
)

// RefundKinds are the refunds' business errors (registered in Kinds).
var RefundKinds = []*Kind{
	{Err: ErrPixNotCredited, Refusal: true,
		Status: http.StatusUnprocessableEntity, Code: "pix_not_credited",
		Message: "no PIX credited to your accounts has this end_to_end_id; nothing was debited"},
	{Err: ErrRefundExceedsCredit, Refusal: true,
		Status: http.StatusUnprocessableEntity, Code: "refund_exceeds_credit",
		Message: "the refunds of this PIX would exceed the amount credited; nothing was debited"},
	{Err: ErrRefundWindowClosed, Refusal: true,
		Status: http.StatusUnprocessableEntity, Code: "refund_window_closed",
		Message: "this PIX was credited more than 90 days ago and can no longer be returned; nothing was debited"},
	{Err: ErrRefundNotFound, Refusal: true,
		Status: http.StatusNotFound, Code: "refund_not_found", Message: "no refund with this id",
		TemporalType: "RefundNotFound"},
	{Err: ErrRefundFinal, Refusal: true, TemporalType: "RefundFinal"},
}

// refundIDPattern is the BCB's id of a devolução.
var refundIDPattern = regexp.MustCompile(`^[a-zA-Z0-9]{1,35}$`)

// ValidRefundID reports whether id can name a devolução.
func ValidRefundID(id string) bool { return refundIDPattern.MatchString(id) }

// NewRefundID returns a new refund id: 32 random hex digits (the BCB's id
// allows letters and digits only, so no UUID dashes).
func NewRefundID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}
