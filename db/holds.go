package db

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/tracing"
)

// The money API (docs/design.md, I11; docs/extending.md, "The money
// API"): holds set part of an account's balance aside, so that no debit
// spends it (every debit checks the available balance, the balance less
// what is held, under the one debit lock: LockAccountForDebit), until the
// hold ends exactly once: released (Release), or captured by the
// devolução it was held for (RecordRefund with NewRefund.Hold: the held
// money leaves the account with that devolução's debit, in its
// transaction; there is no capture of its own, so that neither a capture
// without its debit nor a debit of held money without its capture can be
// written; a hold that fills may be captured in part and kept,
// NewRefund.KeepHold, and shrunk in place, Shrink, so that its holder never
// releases money it still needs to hold it anew). Each call takes the
// caller's transaction and writes its event in it; the caller wakes
// OutboxChannel after the commit.
//
// A hold may fill from later credits (NewHold.FillFromCredits: a MED):
// it holds what is available when it is made, possibly nothing, and each
// PIX credited to its account afterwards adds what it lacks, as far as
// the credit goes, in the credit's transaction (Store.Credit, FillHolds),
// until it holds what it fills to, or until its fill-until
// (NewHold.FillUntil) passes by the database's clock; the credit itself is
// unchanged.
//
// Lock order, as every money transaction's: a PIX's credit (a hold of a
// PIX, a devolução) or an inbox row (a credit), then the account, then a
// hold (a release, a capture; the holds a credit fills), then the holds it
// raises and fills (a release or a shrink: the holds of its PIX it raises,
// RaiseFillTo, then the account's holds that fill, FillHolds; all are the
// account's, so under its lock no two of these wait for each other). Every change of
// an account's holds (a hold made, released, captured or filled) is made
// under the account's lock, so a hold's row is only ever waited for by a
// transaction that holds its account's lock already: two of them never
// wait for each other in a cycle (a release that locked the hold first
// would, with a credit filling it). So a release and a capture read the
// hold first, unlocked (its account never changes, and a hold that ended
// stays ended), lock its account, then the hold, and decide on the hold
// as it is then (lockHoldAndAccount).
//
// A PIX's room (what its credit less its devoluções and active holds
// leaves: creditLeft) is read after both its credit's lock and its
// account's, never between them: the credit's lock orders the holds and
// devoluções of the PIX, but a release, a shrink or a devolução's reversal
// frees room under the account's lock alone (and gives it to the PIX's
// holds that fill there and then: RaiseFillTo), so only under the account's
// lock is the room read one that no such commit can make stale (Hold,
// RecordRefund).

// holdSQL holds the statements of queries/holds.sql.
var holdSQL struct {
	AccountLacking, ByRef, Get, GetMany, LockHold, Hold, Release, Capture, Fill, Shrink, MakeFilling, CapturePart, Restore, RaiseFillTo,
	SetFillUntil string
}

func init() { bindQueries("holds.sql", &holdSQL) }

// Event types of holds, and their aggregate (a hold's events are its own
// aggregate's).
const (
	AggregateHold     = "pix_hold"
	EventHoldCreated  = "pix.hold.created"
	EventHoldReleased = "pix.hold.released"
	EventHoldCaptured = "pix.hold.captured"
	EventHoldFilled   = "pix.hold.filled"
	// A hold shrunk in place (Shrink), captured in part and kept
	// (NewRefund.KeepHold), given back a part whose devolução was
	// reversed (RestoreHold).
	EventHoldShrunk       = "pix.hold.shrunk"
	EventHoldPartCaptured = "pix.hold.part_captured"
	EventHoldRestored     = "pix.hold.restored"
	// What a hold that fills fills to raised, its PIX's room back
	// (RaiseFillTo).
	EventHoldFillRaised = "pix.hold.fill_raised"
	// A hold that did not fill (made before holds filled) made one that
	// fills (MakeFilling).
	EventHoldMadeFilling = "pix.hold.made_filling"
)

// HoldEvents are the holds' event types, each with its aggregate type:
// the core's, declared with the credit's (CoreEvents).
var HoldEvents = map[string]string{
	EventHoldCreated:  AggregateHold,
	EventHoldReleased: AggregateHold,
	EventHoldCaptured: AggregateHold,
	EventHoldFilled:   AggregateHold,

	EventHoldShrunk:       AggregateHold,
	EventHoldPartCaptured: AggregateHold,
	EventHoldRestored:     AggregateHold,
	EventHoldFillRaised:   AggregateHold,
	EventHoldMadeFilling:  AggregateHold,
}

// NewHold is a hold asked for.
type NewHold struct {
	// Ref is the holder's key, 1 to 200 characters: the same ref again is
	// the same hold (the hold made the first time, whatever is available
	// now), and the same ref with any other field is
	// pix.ErrHoldRefReused. Derive it from what the hold is for (the
	// block's id, the infraction report's), so that a retry names it
	// again.
	Ref       string
	AccountID string
	// EndToEndID is the PIX received the hold is for ("": none): it must
	// have been credited to AccountID, and the PIX's active holds and
	// devoluções (all but the reversed) never add up to more than its
	// credit. A devolução of that PIX may capture it; no devolução of the
	// PIX spends it otherwise.
	EndToEndID string
	// AmountCents is what to hold (at least 1). With UpTo, what is
	// available (and, for a PIX, what the PIX has left to hold) if that is
	// less: the hold says how much it holds.
	AmountCents int64
	UpTo        bool
	// FillFromCredits (with UpTo only) makes a hold that fills from later
	// credits: it fills to AmountCents, or to what the PIX has left to
	// hold if less, possibly nothing (pix.Hold.FillToCents, reserved of the
	// PIX at once: no devolução or other hold of the PIX takes it); what
	// the PIX's room cut short is raised as the PIX gets room back (a hold
	// of it released or shrunk, a devolução of it reversed: RaiseFillTo),
	// so that a MED made while a block of its PIX holds part of it fills to
	// what it asked once the block ends; it holds what is
	// available now, possibly nothing (no pix.ErrInsufficientFunds), and
	// each PIX credited to the account afterwards adds what the hold lacks,
	// as far as the credit goes, in the credit's transaction, with its
	// event (pix.hold.filled), until it is full or ends. The holds of an
	// account that fill take a credit in the order they were made. A
	// release or a capture ends the filling with the hold.
	FillFromCredits bool
	// FillUntil (with FillFromCredits only; zero: none) is the instant
	// the hold stops filling (pix.Hold.FillUntil): an inflow whose fill
	// starts at or after it, by the database's clock, adds nothing to the
	// hold, in the inflow's own transaction (FillHolds), and the hold no
	// longer counts as an older one lacking (a newer hold takes what is
	// available). What it holds stays held until it ends. A MED's is its
	// report's return_until: nothing filled after it could be returned.
	// Stored to the microsecond (truncated), as PostgreSQL keeps it.
	FillUntil time.Time
	// Kind says what holds it ("cautionary_block", "med": lowercase
	// letters, digits and underscores, at most 40); Reason, at most 140
	// characters, why ("": not said).
	Kind   string
	Reason string
}

// validate refuses a hold that can't be asked for, before anything is
// read.
func (h NewHold) validate() error {
	switch {
	case h.Ref == "" || utf8.RuneCountInString(h.Ref) > pix.MaxHoldRefLength:
		return pix.Invalid("ref", "must be 1 to %d characters", pix.MaxHoldRefLength)
	case h.AccountID == "":
		return pix.Invalid("account_id", "is required")
	case h.EndToEndID != "" && !pix.ValidEndToEndID(h.EndToEndID):
		return pix.Invalid("end_to_end_id", "must be 32 letters or digits starting with E")
	case h.AmountCents < 1:
		return pix.Invalid("amount_cents", "must be at least 1")
	case h.FillFromCredits && !h.UpTo:
		return pix.Invalid("fill_from_credits", "needs up_to: a hold that fills holds less than asked until it is full")
	case !h.FillUntil.IsZero() && !h.FillFromCredits:
		return pix.Invalid("fill_until", "needs fill_from_credits: only a hold that fills stops filling")
	case !pix.ValidHoldKind(h.Kind):
		return pix.Invalid("kind", "must be lowercase letters, digits and underscores, starting with a letter, at most 40")
	}
	return validReason("reason", h.Reason)
}

// validReason refuses a reason the table can't hold.
func validReason(field, reason string) error {
	if utf8.RuneCountInString(reason) > pix.MaxRefundReasonLength {
		return pix.Invalid(field, "must be at most %d characters", pix.MaxRefundReasonLength)
	}
	return nil
}

// is reports whether the hold h is what n asks for: the same ref with the
// same fields.
func (n NewHold) is(h pix.Hold) bool {
	return h.AccountID == n.AccountID && deref(h.EndToEndID) == n.EndToEndID && h.Kind == n.Kind &&
		deref(h.Reason) == n.Reason && h.AskedCents == n.AmountCents && h.UpTo == n.UpTo &&
		(h.FillToCents != nil) == n.FillFromCredits && sameFillUntil(h.FillUntil, n.fillUntil())
}

// fillUntil is the hold's FillUntil as stored (nil: none).
func (n NewHold) fillUntil() *time.Time {
	if n.FillUntil.IsZero() {
		return nil
	}
	at := n.FillUntil.Truncate(time.Microsecond)
	return &at
}

// sameFillUntil says whether a hold made with stored as its fill_until is
// one asked with asked. A hold an older build made (none stored: before
// migration 0063, or during a rolling upgrade) is the same hold whatever
// is asked: its holder sets it (SetFillUntil).
func sameFillUntil(stored, asked *time.Time) bool {
	switch {
	case stored == nil:
		return true
	case asked == nil:
		return false
	}
	return stored.Equal(*asked)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Hold sets money of an account aside within tx, with its event, and
// returns the hold and whether this call made it. Idempotent on h.Ref: a
// hold with the ref is returned as it is (made by an earlier call whose
// answer may have been lost), nothing changed; with other fields, it is
// pix.ErrHoldRefReused.
//
// Refusals, with nothing changed: a pix.ValidationError; pix.ErrAccountNotFound,
// pix.ErrAccountClosed; pix.ErrInsufficientFunds (the available balance
// does not cover it; with UpTo, nothing is available; never with
// FillFromCredits, which may start with nothing); for a PIX,
// pix.ErrPixNotCredited (no credit of it to the account) and
// pix.ErrHoldExceedsCredit (its active holds and devoluções would exceed
// its credit; with UpTo, it has nothing left to hold; never with
// FillFromCredits, which then fills to nothing until the PIX gets room
// back).
//
// Locks: for a PIX, its credit first (as a devolução: the holds and
// devoluções of one PIX are decided one at a time), then the account (the
// one debit lock, under which every debit checks what is held), then the
// PIX's room is read (creditLeft).
func Hold(ctx context.Context, tx pgx.Tx, h NewHold) (hold pix.Hold, created bool, err error) {
	if err := h.validate(); err != nil {
		return pix.Hold{}, false, err
	}
	if hold, found, err := holdOfRef(ctx, tx, h); found || err != nil {
		return hold, false, err
	}
	var credited int64
	if h.EndToEndID != "" {
		if credited, err = creditOf(ctx, tx, h.EndToEndID, h.AccountID); err != nil {
			return pix.Hold{}, false, err
		}
	}
	a, err := lockAccount(ctx, tx, h.AccountID)
	if err != nil {
		return pix.Hold{}, false, err
	}
	room := int64(-1) // what the PIX has left to hold; -1: no PIX
	if h.EndToEndID != "" {
		// Read under the account's lock, not before it: a release of a hold
		// of the PIX (or a devolução's reversal) takes only the account's
		// lock and gives the room it frees to the PIX's holds that exist
		// (RaiseFillTo); read before, this hold would miss it for good.
		if room, err = creditLeft(ctx, tx, h.EndToEndID, credited, uuid.Nil); err != nil {
			return pix.Hold{}, false, err
		}
	}
	available := a.available()
	if available > 0 {
		// A new hold never takes what an older hold of the account that
		// fills lacks (a cautionary block never takes what a MED lacks).
		// Every change that makes a hold lack fills it from what is
		// available in its own transaction (an inflow, FillHolds; a raise
		// or a hold made filling, fillFromAvailable), so available is 0
		// while one lacks and this takes nothing off: it is the guard of an
		// account a build before that left otherwise, whose money beyond
		// what its holds lack stays available to a new hold.
		var lacking int64
		if err := tx.QueryRow(ctx, holdSQL.AccountLacking, h.AccountID).Scan(&lacking); err != nil {
			return pix.Hold{}, false, fmt.Errorf("holds lacking: %w", err)
		}
		available = max(0, available-lacking)
	}
	amount, fillTo, short, err := holdable(h, available, room)
	if err != nil {
		return pix.Hold{}, false, err
	}
	var end2end *string
	if h.EndToEndID != "" {
		end2end = &h.EndToEndID
	}
	hold, err = scanHold(tx.QueryRow(ctx, holdSQL.Hold, uuid.New(), h.Ref, h.AccountID, end2end, h.Kind, h.Reason,
		h.AmountCents, h.UpTo, amount, tracing.Traceparent(ctx), fillTo, short, h.fillUntil()))
	if errors.Is(err, pix.ErrHoldNotFound) {
		// Another call took the ref after ours looked, and committed: its
		// hold is the ref's.
		hold, found, err := holdOfRef(ctx, tx, h)
		if err == nil && !found {
			err = fmt.Errorf("hold %q: neither inserted nor found", h.Ref)
		}
		return hold, false, err
	}
	if err != nil {
		return pix.Hold{}, false, fmt.Errorf("hold: %w", err)
	}
	return hold, true, nil
}

// holdOfRef is the hold of h.Ref, if there is one: h's (found), or
// pix.ErrHoldRefReused.
func holdOfRef(ctx context.Context, tx pgx.Tx, h NewHold) (pix.Hold, bool, error) {
	hold, err := scanHold(tx.QueryRow(ctx, holdSQL.ByRef, h.Ref))
	switch {
	case errors.Is(err, pix.ErrHoldNotFound):
		return pix.Hold{}, false, nil
	case err != nil:
		return pix.Hold{}, false, fmt.Errorf("read hold: %w", err)
	case !h.is(hold):
		return pix.Hold{}, false, fmt.Errorf("%w: %q is hold %s", pix.ErrHoldRefReused, h.Ref, hold.ID)
	}
	return hold, true, nil
}

// holdable is how much h holds: all it asks, or with UpTo what the
// available balance and the PIX's room (-1: no PIX) leave, if less; and,
// with FillFromCredits, what it fills to (nil: it does not fill): what it
// asks, or the PIX's room if less (possibly 0: the PIX wholly taken, by a
// block of it, say), and what the room cut short of what it asks (short:
// raised as the PIX gets room back, RaiseFillTo).
func holdable(h NewHold, available, room int64) (amount int64, fillTo *int64, short int64, err error) {
	amount = h.AmountCents
	if h.UpTo && room >= 0 {
		amount = min(amount, room)
	}
	if h.FillFromCredits {
		target := amount
		fillTo, short = &target, h.AmountCents-target
	}
	if h.UpTo {
		amount = min(amount, available)
	}
	switch {
	case room >= 0 && amount > room, room == 0 && !h.FillFromCredits:
		return 0, nil, 0, fmt.Errorf("%w: the PIX has %d left to hold, asked %d", pix.ErrHoldExceedsCredit, room, h.AmountCents)
	case h.FillFromCredits: // it may start with nothing: later credits fill it
	case amount > available, amount < 1:
		return 0, nil, 0, fmt.Errorf("%w: available %d, hold %d", pix.ErrInsufficientFunds, available, h.AmountCents)
	}
	return amount, fillTo, short, nil
}

// pixCredit locks the PIX's credit (LockCredit: the holds and devoluções
// of one PIX are decided one at a time, in that order before the account)
// and returns whose it is, its amount and when its refund window closes
// (decided by the caller after its last lock: LockCredit). No credit is
// pix.ErrPixNotCredited.
func pixCredit(ctx context.Context, tx pgx.Tx, endToEndID string) (account string, credited int64, closes time.Time, err error) {
	err = tx.QueryRow(ctx, refundSQL.LockCredit, endToEndID, pix.RefundWindow).Scan(&account, &credited, &closes)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", 0, time.Time{}, pix.ErrPixNotCredited
	case err != nil:
		return "", 0, time.Time{}, fmt.Errorf("lock credit: %w", err)
	}
	return account, credited, closes, nil
}

// creditOf locks the PIX's credit (pixCredit) and returns its amount. A PIX
// not credited to account is pix.ErrPixNotCredited.
func creditOf(ctx context.Context, tx pgx.Tx, endToEndID, account string) (int64, error) {
	owner, credited, _, err := pixCredit(ctx, tx, endToEndID)
	if err != nil {
		return 0, err
	}
	if owner != account {
		return 0, fmt.Errorf("%w: %s was credited to another account", pix.ErrPixNotCredited, endToEndID)
	}
	return credited, nil
}

// creditLeft is what of a PIX credited credited, its credit locked
// already (pixCredit) and its account too (the room read, last in the lock
// order), its devoluções (all but the reversed) and its active holds but
// except (the hold a devolução captures; uuid.Nil: none) leave. Read in a
// statement of its own after both locks: its snapshot then sees every
// devolução and hold committed by whoever held the credit's lock before,
// and every release, shrink or reversal of the PIX's (which take the
// account's lock only, and give the room they free to the PIX's holds that
// fill then: RaiseFillTo) committed before; one that commits later waits
// for this transaction and then sees what it made. Read before the
// account's lock, a release committing between would free room that
// neither it (the hold not made yet) nor the caller (its stale read) gives
// to the new hold.
func creditLeft(ctx context.Context, tx pgx.Tx, endToEndID string, credited int64, except uuid.UUID) (int64, error) {
	var exceptID *uuid.UUID
	if except != uuid.Nil {
		exceptID = &except
	}
	var taken int64
	if err := tx.QueryRow(ctx, refundSQL.TakenCents, endToEndID, exceptID).Scan(&taken); err != nil {
		return 0, fmt.Errorf("sum refunds and holds: %w", err)
	}
	return credited - taken, nil
}

// Release ends the active hold id within tx as released, with its event,
// and returns the hold as it is after the call and whether this call
// released it. Its money first fills the account's other holds that still
// lack, with the rest of what is available (fillFromAvailable), and what
// they leave is spendable again. A hold
// that ended already is returned as it is, nothing changed and no event
// written: released (a retry whose first try committed), or captured (the
// devolução it was held for took it first: the fence, which the hold's
// Status says). reason says why ("": not said; at most 140 characters).
// pix.ErrHoldNotFound: no such hold. A hold that fills from later credits
// is released with what it holds (possibly nothing), and fills no more.
// What it took of its PIX first raises what the PIX's other holds that
// fill were cut short of (RaiseFillTo), so that its money then fills them.
// Locks: its account, then the hold (lockHoldAndAccount), then the
// account's holds that fill, of its PIX first (RaiseFillTo, FillHolds).
func Release(ctx context.Context, tx pgx.Tx, id uuid.UUID, reason string) (hold pix.Hold, released bool, err error) {
	if err := validReason("reason", reason); err != nil {
		return pix.Hold{}, false, err
	}
	if hold, err = lockHoldAndAccount(ctx, tx, id); err != nil || !hold.Active() {
		return hold, false, err
	}
	if hold, err = scanHold(tx.QueryRow(ctx, holdSQL.Release, id, reason, tracing.Traceparent(ctx))); err != nil {
		return pix.Hold{}, false, fmt.Errorf("release hold: %w", err)
	}
	if err := raiseFrom(ctx, tx, hold, reserved(hold), FillSource{Kind: FillByHoldRelease, ID: hold.ID}); err != nil {
		return pix.Hold{}, false, err
	}
	if _, err := fillFromAvailable(ctx, tx, hold.AccountID, FillSource{Kind: FillByHoldRelease, ID: hold.ID}); err != nil {
		return pix.Hold{}, false, err
	}
	return hold, true, nil
}

// fillFromAvailable fills the account's holds that lack, oldest first
// (FillHolds: each with its pix.hold.filled event and its pix_hold_fills
// row, once per source), with what the account has available, in tx,
// after a change of its holds that may have made one lack while money is
// available: a hold released or shrunk (the money it freed, and the room
// of its PIX, RaiseFillTo, which may raise a hold by more than that
// money: one past its fill-until released lacking), a hold made one that
// fills (MakeFilling). So the account's money goes to its holds that lack
// before any of it is spendable, as an inflow's does, and available is 0
// while a hold lacks after every transaction (a new hold then takes
// nothing a MED lacks, nor does a debit). Under the account's lock the
// caller took (lockHoldAndAccount, LockHold): the lock order stays the
// account, then the holds. It returns what was filled.
func fillFromAvailable(ctx context.Context, tx pgx.Tx, accountID string, source FillSource) (int64, error) {
	a, _, err := lockAccountOfAnyStatus(ctx, tx, accountID)
	if err != nil {
		return 0, err
	}
	if a.available() <= 0 {
		return 0, nil
	}
	// None lacking (the usual case): no fill, and no wake-up to note (a
	// caller outside Store.InTx that fills nothing stays allowed).
	var lacking int64
	if err := tx.QueryRow(ctx, holdSQL.AccountLacking, accountID).Scan(&lacking); err != nil {
		return 0, fmt.Errorf("holds lacking: %w", err)
	}
	if lacking == 0 {
		return 0, nil
	}
	return FillHolds(ctx, tx, accountID, a.available(), source)
}

// LockHold locks the hold id until tx ends, with what comes before it in
// the lock order (its PIX's credit, when it is of a PIX, then its account),
// and returns it as it is under the locks: until tx ends, nothing changes
// it but tx, and no credit fills it. A saga that returns what a hold that
// fills holds reads it so, then records the devolução of exactly that
// amount in the same tx (RecordRefund with NewRefund.Hold, which takes
// the same locks again): read without the locks, a credit may fill it
// between, and the capture is pix.ErrHoldNotCapturable. A hold that ended
// is returned as it is. pix.ErrHoldNotFound: no such hold.
func LockHold(ctx context.Context, tx pgx.Tx, id uuid.UUID) (pix.Hold, error) {
	hold, err := scanHold(tx.QueryRow(ctx, holdSQL.Get, id))
	switch {
	case errors.Is(err, pix.ErrHoldNotFound):
		return pix.Hold{}, fmt.Errorf("%w: %s", pix.ErrHoldNotFound, id)
	case err != nil:
		return pix.Hold{}, fmt.Errorf("read hold: %w", err)
	case !hold.Active():
		return hold, nil
	case hold.EndToEndID != nil:
		if _, _, _, err := pixCredit(ctx, tx, *hold.EndToEndID); err != nil {
			return pix.Hold{}, err
		}
	}
	return lockHoldAndAccount(ctx, tx, id)
}

// lockHoldAndAccount locks the hold id and its account until tx ends, in
// the lock order (the account, then the hold), and returns the hold as it
// is under both: it ends once, and changes only, under them. A hold that
// ended is returned as it is, nothing locked: it never becomes active
// again. pix.ErrHoldNotFound: no such hold.
func lockHoldAndAccount(ctx context.Context, tx pgx.Tx, id uuid.UUID) (pix.Hold, error) {
	// Read first, unlocked, for its account (which never changes): a hold
	// locked before its account would wait in a cycle with a credit that
	// fills it (the account locked, then the hold).
	hold, err := scanHold(tx.QueryRow(ctx, holdSQL.Get, id))
	switch {
	case errors.Is(err, pix.ErrHoldNotFound):
		return pix.Hold{}, fmt.Errorf("%w: %s", pix.ErrHoldNotFound, id)
	case err != nil:
		return pix.Hold{}, fmt.Errorf("read hold: %w", err)
	case !hold.Active():
		return hold, nil
	}
	if _, _, err := lockAccountOfAnyStatus(ctx, tx, hold.AccountID); err != nil {
		return pix.Hold{}, err
	}
	if hold, err = scanHold(tx.QueryRow(ctx, holdSQL.LockHold, id)); err != nil {
		return pix.Hold{}, fmt.Errorf("lock hold: %w", err)
	}
	return hold, nil
}

// capture ends the hold, locked active (lockHoldAndAccount), as captured by the
// devolução refundID, whose debit in tx (at) took the hold's money out of
// the account's held with the balance (debitAccount's capturedCents).
// Only RecordRefund calls it, right after that debit.
func capture(ctx context.Context, tx pgx.Tx, id uuid.UUID, refundID string, debit AccountDebit) error {
	if _, err := scanHold(tx.QueryRow(ctx, holdSQL.Capture, id, refundID, debit.At, tracing.Traceparent(ctx))); err != nil {
		return fmt.Errorf("capture hold %s: %w", id, err)
	}
	return nil
}

// capturePart captures part of the hold that fills, locked active
// (lockHoldAndAccount), by the devolução refundID, whose debit in tx took
// part out of the account's held with the balance, and keeps it active:
// it holds and fills to part less, and the part is recorded for the
// devolução's reversal (RestoreHold). Only RecordRefund calls it, right
// after that debit (NewRefund.KeepHold).
func capturePart(ctx context.Context, tx pgx.Tx, id uuid.UUID, refundID string, part int64, debit AccountDebit) error {
	if _, err := scanHold(tx.QueryRow(ctx, holdSQL.CapturePart, id, refundID, part, debit.At, tracing.Traceparent(ctx))); err != nil {
		return fmt.Errorf("capture %d of hold %s: %w", part, id, err)
	}
	return nil
}

// Shrink shrinks the active hold id in place, within tx, to hold and fill
// to at most toCents (a hold that does not fill stays one), with its event
// (pix.hold.shrunk): what it held beyond first fills the account's other
// holds that still lack, with the rest of what is available
// (fillFromAvailable), what they leave is spendable
// again; the rest never stops being held (a release and a hold anew would make it available
// between the two, or for good when the new hold takes less: a new hold
// takes only what older holds don't lack). It returns the hold as it
// is after the call and whether this call shrank it. Idempotent and fenced
// by the hold as it is under its locks: a hold within toCents already (a
// retry whose first try committed) or ended is returned as it is, nothing
// changed and no event written. reason says why ("": not said; at most
// 140 characters). pix.ErrHoldNotFound: no such hold; a
// pix.ValidationError: toCents below 0, or below 1 for a hold that does
// not fill, or a hold of a whole amount (not NewHold.UpTo): release it.
// What it stops taking of its PIX raises the PIX's other holds that fill
// first (RaiseFillTo), as a release. What it may be raised to itself is at
// most toCents too (a hold within toCents whose fill_to_cents could be
// raised past it is shrunk: no money moves, its event says so).
// Locks: its account, then the hold (lockHoldAndAccount), then the
// account's holds that fill, as Release.
func Shrink(ctx context.Context, tx pgx.Tx, id uuid.UUID, toCents int64, reason string) (hold pix.Hold, shrunk bool, err error) {
	if err := validReason("reason", reason); err != nil {
		return pix.Hold{}, false, err
	}
	if toCents < 0 {
		return pix.Hold{}, false, pix.Invalid("to_cents", "must be at least 0")
	}
	if hold, err = lockHoldAndAccount(ctx, tx, id); err != nil || !hold.Active() {
		return hold, false, err
	}
	switch {
	case !hold.UpTo:
		return pix.Hold{}, false, pix.Invalid("hold", "holds a whole amount (not up to): release it")
	case hold.FillToCents == nil && toCents < 1:
		return pix.Hold{}, false, pix.Invalid("to_cents", "must be at least 1 for a hold that does not fill: release it")
	}
	before := hold
	var freed int64
	var event string // the pix.hold.shrunk event's id: a hold may shrink more than once
	hold, err = scanHold(tx.QueryRow(ctx, holdSQL.Shrink, id, toCents, reason, tracing.Traceparent(ctx)), &freed, &event)
	switch {
	case errors.Is(err, pix.ErrHoldNotFound):
		return before, false, nil // within toCents already: nothing to shrink
	case err != nil:
		return pix.Hold{}, false, fmt.Errorf("shrink hold: %w", err)
	}
	if err := raiseFrom(ctx, tx, hold, reserved(before)-reserved(hold), FillSource{Kind: FillByHoldShrink, ID: event}); err != nil {
		return pix.Hold{}, false, err
	}
	if _, err := fillFromAvailable(ctx, tx, hold.AccountID, FillSource{Kind: FillByHoldShrink, ID: event}); err != nil {
		return pix.Hold{}, false, err
	}
	return hold, true, nil
}

// MakeFilling makes the active hold id, within tx, which does not fill (a
// MED's made before holds filled: pix_holds.fill_to_cents NULL, migration
// 0035), one that fills to needCents (its holder's need; at most what it
// asked, at least what it holds), as far as its PIX's room goes (what the
// room leaves out is its fill_short_cents, raised as the PIX gets room
// back: RaiseFillTo), with its event (pix.hold.made_filling). It holds
// what it held, and takes what is available up to what it fills to, with
// its fill (pix.hold.filled, source hold_made_filling): the money that came
// in since it was made, which a hold that filled would have taken; the
// account's older holds that lack take theirs first, oldest first
// (fillFromAvailable, as an inflow: holds that fill take money oldest
// first), so no hold lacks after while money is available. The
// account's later inflows fill it on. So its holder captures a part of it and
// keeps it (NewRefund.KeepHold), and a devolução of that part not made
// gives its money back into it (RestoreHold), held in the reversal's
// transaction: captured whole, a hold that does not fill ends, and the
// money of a devolução reversed would come back available (issue 37,
// attack review LOW5). It returns the hold as it is after the call and
// whether this call changed it: a hold that fills already, or ended, is
// returned as it is (a retry). reason says why ("": not said; at most 140
// characters). pix.ErrHoldNotFound: no such hold; a pix.ValidationError: a
// hold of a whole amount (not NewHold.UpTo).
// Locks: its PIX's credit, its account, then the hold (LockHold); then the
// PIX's room is read (creditLeft), as Hold.
func MakeFilling(ctx context.Context, tx pgx.Tx, id uuid.UUID, needCents int64, reason string) (hold pix.Hold, made bool, err error) {
	if err := validReason("reason", reason); err != nil {
		return pix.Hold{}, false, err
	}
	if hold, err = LockHold(ctx, tx, id); err != nil || !hold.Active() || hold.FillToCents != nil {
		return hold, false, err
	}
	if !hold.UpTo {
		return pix.Hold{}, false, pix.Invalid("hold", "holds a whole amount (not up to): it does not fill")
	}
	fillTo := min(max(needCents, hold.AmountCents), hold.AskedCents)
	var short int64
	if hold.EndToEndID != nil {
		_, credited, _, err := pixCredit(ctx, tx, *hold.EndToEndID) // locked already by LockHold: its amount
		if err != nil {
			return pix.Hold{}, false, err
		}
		room, err := creditLeft(ctx, tx, *hold.EndToEndID, credited, id)
		if err != nil {
			return pix.Hold{}, false, err
		}
		target := fillTo
		fillTo = max(hold.AmountCents, min(target, room))
		short = target - fillTo
	}
	hold, err = scanHold(tx.QueryRow(ctx, holdSQL.MakeFilling, id, fillTo, short, reason, tracing.Traceparent(ctx)))
	if err != nil {
		return pix.Hold{}, false, fmt.Errorf("make hold %s fill: %w", id, err)
	}
	filled, err := fillFromAvailable(ctx, tx, hold.AccountID, FillSource{Kind: FillByMadeFilling, ID: hold.ID})
	if err != nil || filled == 0 {
		return hold, err == nil, err
	}
	// What it took of the fill (the holds older than it that lack took
	// theirs first).
	if hold, err = ReadHold(ctx, tx, id); err != nil {
		return pix.Hold{}, false, err
	}
	return hold, true, nil
}

// SetFillUntil sets until as the fill-until (NewHold.FillUntil) of the
// active hold id, within tx, which fills but was made without one (before
// migration 0063, or by an older build while a release rolls out), and
// returns it as it is after the call and whether this call set it. From
// until on, by the database's clock, no inflow fills it (FillHolds). One
// that has a fill-until keeps it (never moved: a retry, or a hold made with
// it), and a hold that ended or does not fill is returned as it is. No
// money moves and no event is written. pix.ErrHoldNotFound: no such hold.
// Locks: none when the hold, read first, needs nothing (a fill-until is
// never moved, a hold that ended stays ended: one read, the usual case);
// else its PIX's credit, its account, then the hold (LockHold), as every
// change of a hold's row.
func SetFillUntil(ctx context.Context, tx pgx.Tx, id uuid.UUID, until time.Time) (hold pix.Hold, set bool, err error) {
	if until.IsZero() {
		return pix.Hold{}, false, pix.Invalid("fill_until", "is required")
	}
	lacks := func(h pix.Hold) bool { return h.Active() && h.FillToCents != nil && h.FillUntil == nil }
	if hold, err = ReadHold(ctx, tx, id); err != nil || !lacks(hold) {
		return hold, false, err
	}
	if hold, err = LockHold(ctx, tx, id); err != nil || !lacks(hold) {
		return hold, false, err
	}
	hold, err = scanHold(tx.QueryRow(ctx, holdSQL.SetFillUntil, id, until.Truncate(time.Microsecond)))
	if err != nil {
		return pix.Hold{}, false, fmt.Errorf("set the fill-until of hold %s: %w", id, err)
	}
	return hold, true, nil
}

// RestoreHold gives the money of the devolução refundID, reversed in tx,
// back to the hold it captured a part of and kept (NewRefund.KeepHold),
// when that hold is still active and before its fill-until (by the
// database's clock at the statement's start, as Fill: past it, the money
// would be held from the customer with no inflow filling that hold any
// more; the part stays unrestored and the caller gives it to the PIX's
// room and the account's holds that fill, else it is available): the hold
// holds and fills to the part more, the account's held grows by it, with
// its event (pix.hold.restored). So the money a MED must keep held, captured for a
// devolução that was not made, is held again in the reversal's own
// transaction, never available. It returns what it restored (0: the
// devolução captured no part of a kept hold, or that hold ended); once per
// devolução (the part's restored_at: a second call restores nothing). The
// reversal calls it after it credited the money back, under the account's
// lock it took (the lock order: the account, then the hold), and before
// FillHolds with what it did not restore.
func RestoreHold(ctx context.Context, tx pgx.Tx, refundID string) (int64, error) {
	var restored int64
	if err := tx.QueryRow(ctx, holdSQL.Restore, refundID, tracing.Traceparent(ctx)).Scan(&restored); err != nil {
		return 0, fmt.Errorf("restore the hold of devolução %s: %w", refundID, err)
	}
	return restored, nil
}

// scanHold reads a hold's columns in the order holds.sql's statements
// return them, then the columns a statement returns after them into more;
// no row is pix.ErrHoldNotFound.
func scanHold(row pgx.Row, more ...any) (pix.Hold, error) {
	var h pix.Hold
	err := row.Scan(append([]any{&h.ID, &h.Ref, &h.AccountID, &h.EndToEndID, &h.Kind, &h.Reason, &h.AskedCents, &h.UpTo, &h.FillToCents,
		&h.AmountCents, &h.Status, &h.RefundID, &h.EndReason, &h.CreatedAt, &h.EndedAt, &h.FillUntil}, more...)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return pix.Hold{}, pix.ErrHoldNotFound
	}
	return h, err
}

// GetHolds returns the holds of ids, by id (pix.Hold.ID), in one read: a
// list's holds without a read per row. A hold not there is not in the map.
func (s *Store) GetHolds(ctx context.Context, ids []uuid.UUID) (map[string]pix.Hold, error) {
	out := make(map[string]pix.Hold, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rs, err := s.pool.Query(ctx, holdSQL.GetMany, ids)
	if err != nil {
		return nil, Classify(fmt.Errorf("get holds: %w", err))
	}
	defer rs.Close()
	for rs.Next() {
		h, err := scanHold(rs)
		if err != nil {
			return nil, Classify(fmt.Errorf("get holds: %w", err))
		}
		out[h.ID] = h
	}
	if err := rs.Err(); err != nil {
		return nil, Classify(fmt.Errorf("get holds: %w", err))
	}
	return out, nil
}

// FillSource is money that came back to an account and fills its holds
// that fill (NewHold.FillFromCredits; docs/design.md, I11): every inflow
// fills, not only a PIX credited, or money a MED waits for would be
// spendable again once a transfer out of it is refunded; nor only money
// come in: money another hold stops holding fills them too, and so does
// what is available when a hold is raised or made filling
// (fillFromAvailable). Kind is one of FillByCredit, FillByTransferRefund,
// FillByRefundReversal, FillByHoldRelease, FillByHoldShrink,
// FillByMadeFilling; ID names the source (the PIX's end_to_end_id, the
// transfer's id, the refund's id, the released hold's id, the shrink's
// event id, the hold made filling's id). A hold fills once per source
// (pix_hold_fills' primary key).
type FillSource struct {
	Kind string
	ID   string
}

// The inflows that fill holds (pix_hold_fills.source_kind).
const (
	FillByCredit         = "credit"          // a PIX credited (Store.Credit)
	FillByTransferRefund = "transfer_refund" // a rejected transfer refunded (saga/transfer)
	FillByRefundReversal = "refund_reversal" // a devolução not made, reversed (saga/refund)
	// Money another hold of the account stopped holding, and what was
	// available, given to the holds that lack, the PIX's raised ones among
	// them (fillFromAvailable): released (ID the hold's), shrunk in place
	// (ID its pix.hold.shrunk event's).
	FillByHoldRelease = "hold_release"
	FillByHoldShrink  = "hold_shrink"
	// Money available when a hold that did not fill is made one that
	// fills (MakeFilling; ID the hold's): what came in since it was made,
	// which it would have taken had it filled (the account's older holds
	// that lack first).
	FillByMadeFilling = "hold_made_filling"
)

// reserved is what the hold, active, takes of its PIX's credit (TakenCents):
// what it fills to, for a hold that fills, else what it holds.
func reserved(h pix.Hold) int64 {
	if h.FillToCents != nil {
		return *h.FillToCents
	}
	return h.AmountCents
}

// RaiseFillTo gives roomCents of the PIX endToEndID just freed in tx (a
// hold of it released or shrunk, a devolução of it reversed) back to the
// PIX's active holds that fill but except (uuid.Nil: none), which the PIX's
// room cut short of what they fill to (fill_short_cents: a MED made while
// a block of its PIX, or a devolução of it, took part of it), in the
// order they were made, with a pix.hold.fill_raised event each: they fill
// to more, and what is available after the freeing (fillFromAvailable, or
// the reversal's FillHolds, after this call) and later inflows fill them:
// a raise beyond the money freed is filled from what the account has
// available, so no hold lacks while money is available. A hold at or past its fill-until
// (NewHold.FillUntil, by the database's clock as FillHolds) is not raised:
// nothing fills it any more, and the room it would reserve stays the
// PIX's (a block or a devolução of it may take it). It returns what was
// raised in all. The
// caller holds the account's lock (the lock order: the account, then the
// holds) and calls it before the freed money fills anything. No lock of
// the PIX's credit is needed: the room moves from what freed it to the
// holds raised, in one transaction, and no other can take it meanwhile
// (until the commit it is the freeing hold's or devolução's).
func RaiseFillTo(ctx context.Context, tx pgx.Tx, endToEndID string, except uuid.UUID, roomCents int64, source FillSource) (int64, error) {
	if endToEndID == "" || roomCents <= 0 {
		return 0, nil
	}
	var exceptID *uuid.UUID
	if except != uuid.Nil {
		exceptID = &except
	}
	var raised int64
	err := tx.QueryRow(ctx, holdSQL.RaiseFillTo, endToEndID, roomCents, exceptID, source.Kind, source.ID,
		tracing.Traceparent(ctx)).Scan(&raised)
	if err != nil {
		return 0, fmt.Errorf("raise the holds of %s from %s %s: %w", endToEndID, source.Kind, source.ID, err)
	}
	return raised, nil
}

// raiseFrom is RaiseFillTo of the room the hold h, of a PIX or not, just
// gave back to its PIX.
func raiseFrom(ctx context.Context, tx pgx.Tx, h pix.Hold, roomCents int64, source FillSource) error {
	id, err := uuid.Parse(h.ID)
	if err != nil {
		return fmt.Errorf("hold %q: %w", h.ID, err)
	}
	_, err = RaiseFillTo(ctx, tx, deref(h.EndToEndID), id, roomCents, source)
	return err
}

// FillHolds fills the holds of the account still filling
// (NewHold.FillFromCredits) with addedCents just come back to it from
// source, in tx, the inflow's own transaction, after it raised the
// balance and so under the account's row lock it holds (the lock order
// stays: the inflow's row, the account, the holds): each hold, in the
// order they were made, takes what it lacks of what the inflow and the
// holds before it left, with its pix.hold.filled event and its
// pix_hold_fills row; the account's held grows by what was filled, its
// balance is the inflow's. It returns what was filled in all. The inflow
// calls it once, in the transaction that makes it (an inflow run again
// finds itself made and fills nothing), and the fills' primary key (hold,
// source) refuses a second fill of a hold by one source. The holds it
// filled are noted for the wake-ups Store.InTx sends after the commit: tx
// must be one of its (errFillsNotNoted otherwise).
func FillHolds(ctx context.Context, tx pgx.Tx, accountID string, addedCents int64, source FillSource) (int64, error) {
	after := noted(tx)
	if after == nil {
		return 0, fmt.Errorf("fill holds from %s %s: %w", source.Kind, source.ID, errFillsNotNoted)
	}
	rows, err := tx.Query(ctx, holdSQL.Fill, source.Kind, source.ID, accountID, addedCents, tracing.Traceparent(ctx))
	if err != nil {
		return 0, fmt.Errorf("fill holds from %s %s: %w", source.Kind, source.ID, err)
	}
	filled, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (FilledHold, error) {
		h := FilledHold{AccountID: accountID, Source: source}
		return h, row.Scan(&h.ID, &h.Ref, &h.Kind, &h.FilledCents)
	})
	if err != nil {
		return 0, fmt.Errorf("fill holds from %s %s: %w", source.Kind, source.ID, err)
	}
	after.add(filled)
	var total int64
	for _, h := range filled {
		total += h.FilledCents
	}
	return total, nil
}

// GetHold returns one hold.
func (s *Store) GetHold(ctx context.Context, id uuid.UUID) (pix.Hold, error) {
	return ReadHold(ctx, s.pool, id)
}

// ReadHold reads one hold through q, not locking it: through a caller's
// transaction (a saga's, under its own row's lock), which must not ask the
// pool for a second connection while it holds one (as many such callers
// at once as the pool has connections would wait on each other), or
// through the pool (GetHold).
func ReadHold(ctx context.Context, q Querier, id uuid.UUID) (pix.Hold, error) {
	h, err := scanHold(q.QueryRow(ctx, holdSQL.Get, id))
	if err != nil && !errors.Is(err, pix.ErrHoldNotFound) {
		return pix.Hold{}, Classify(fmt.Errorf("get hold: %w", err))
	}
	return h, err
}
