package pix

import (
	"errors"
	"regexp"
	"time"
)

// The statuses of a hold (docs/design.md, I11): active, then ended exactly
// once.
//
//	active -> released  (its money spendable again)
//	active -> captured  (the devolução it was held for took it)
const (
	HoldActive   = "active"
	HoldReleased = "released"
	HoldCaptured = "captured"
)

// Hold is money of an account set aside: part of its balance that no debit
// may spend while the hold is active (the available balance is the balance
// less what is held), until it ends, released or captured by the devolução
// it was held for.
type Hold struct {
	ID string `json:"id"`
	// Ref is the holder's key: the same ref again is the same hold.
	Ref       string `json:"ref"`
	AccountID string `json:"account_id"`
	// EndToEndID is the PIX received the hold is for (nil: the account's
	// money, for no PIX): a devolução of that PIX may capture it.
	EndToEndID *string `json:"end_to_end_id"`
	Kind       string  `json:"kind"`
	Reason     *string `json:"reason"`
	// AskedCents is what was asked; AmountCents what is held: less when
	// UpTo was asked and less was available.
	AskedCents int64 `json:"asked_cents"`
	UpTo       bool  `json:"up_to"`
	// FillToCents is, for a hold that fills from later credits
	// (db.NewHold.FillFromCredits), what it fills to: what was asked, or
	// what its PIX had left to hold when it was made, if less. Until
	// AmountCents reaches it, each PIX credited to the account adds to the
	// hold. nil: a hold that does not fill.
	FillToCents *int64 `json:"fill_to_cents"`
	AmountCents int64  `json:"amount_cents"`
	Status      string `json:"status"`
	// RefundID is the devolução that captured it.
	RefundID *string `json:"refund_id"`
	// EndReason is why it was released, as its releaser said.
	EndReason *string    `json:"end_reason"`
	CreatedAt time.Time  `json:"created_at"`
	EndedAt   *time.Time `json:"ended_at"`
	// FillUntil is, for a hold that fills, the instant it stops filling
	// (db.NewHold.FillUntil): an inflow at or after it, by the database's
	// clock, adds nothing to it. nil: it fills for as long as it lacks.
	FillUntil *time.Time `json:"fill_until"`
}

// Active reports whether the hold still sets its money aside.
func (h Hold) Active() bool { return h.Status == HoldActive }

// Filling reports whether the hold is active, fills from credits and
// holds less than it fills to: the next PIX credited to its account adds
// to it, unless its FillUntil has passed (decided by the database's clock,
// in the inflow's own statement: not here).
func (h Hold) Filling() bool {
	return h.Active() && h.FillToCents != nil && h.AmountCents < *h.FillToCents
}

// MaxHoldRefLength is the most characters a hold's ref has.
const MaxHoldRefLength = 200

// holdKindPattern is what names a hold's kind: a word of lowercase letters,
// digits and underscores ("cautionary_block", "med").
var holdKindPattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`)

// ValidHoldKind reports whether kind can name a hold's kind.
func ValidHoldKind(kind string) bool { return holdKindPattern.MatchString(kind) }

// Refusals of holds. A hold that the account's available balance does not
// cover is ErrInsufficientFunds, as a debit; one of a PIX not credited to
// the account is ErrPixNotCredited, as a devolução.
var (
	// ErrHoldRefReused: a hold with this ref exists with other fields
	// (account, PIX, kind, reason, amount, up-to or fill): the same ref is
	// the same hold, never another.
	ErrHoldRefReused = errors.New("hold ref reused with other fields")
	// ErrHoldNotFound: no hold with that id.
	ErrHoldNotFound = errors.New("hold not found")
	// ErrHoldEnded: the hold was released, or captured by another
	// devolução: it can't be captured.
	ErrHoldEnded = errors.New("hold has ended")
	// ErrHoldExceedsCredit: with this hold, the PIX's active holds and
	// devoluções (all but the reversed) would exceed its credit.
	ErrHoldExceedsCredit = errors.New("holds and refunds would exceed the credit")
	// ErrHoldNotCapturable: the devolução can't capture the hold: the hold
	// is of another PIX (or of none), or of another amount, or holds
	// nothing yet (a hold filling from later credits).
	ErrHoldNotCapturable = errors.New("hold is not the devolução's to capture")
)

// HoldKinds are the holds' business errors (registered in Kinds). Holds
// are the core's (the money API every saga uses), owned by the credit's
// descriptor, the core pipeline's. Each is final (non-retryable) and has
// its Temporal type, for the activities of the sagas that hold. No route
// answers them yet: the first that does gives each its HTTP answer
// (Status, Code, Message) and documents it on its responses, as the
// contract test (tooling/contract) requires of every code.
var HoldKinds = []*Kind{
	{Err: ErrHoldRefReused, Refusal: true, TemporalType: "HoldRefReused"},
	{Err: ErrHoldNotFound, Refusal: true, TemporalType: "HoldNotFound"},
	{Err: ErrHoldEnded, Refusal: true, TemporalType: "HoldEnded"},
	{Err: ErrHoldExceedsCredit, Refusal: true, TemporalType: "HoldExceedsCredit"},
	{Err: ErrHoldNotCapturable, Refusal: true, TemporalType: "HoldNotCapturable"},
}
