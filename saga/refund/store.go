package refund

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/tracing"
)

//go:embed refunds.sql
var queryFiles embed.FS

// refundSQL holds the statements of refunds.sql (named refunds.* in
// traces, as they always were).
var refundSQL struct {
	CreditAccount, LockRefund, RefundsOf, MarkRequested, MarkReturned, Reverse,
	OldestOpenAge, MarkAsked, RefusalStands, MarkRefused, StandingRefusal string
}

func init() { db.BindQueries(queryFiles, "refunds.sql", &refundSQL) }

// Store is the devolução's store: the core's (the hand-over
// db.RecordRefund, the read of a refund db.Store.GetRefund, the outcomes a
// PSP announced db.Store.NoteRefundOutcomes, the Idempotency-Key layer,
// the open refunds' queue db.Store.RefundQueue), and the saga's own
// statements.
type Store struct{ *db.Store }

// NewStore returns the devolução's store over s.
func NewStore(s *db.Store) *Store { return &Store{s} }

// CreateRefund debits the account that received the PIX, records the refund
// and its event and records the Idempotency-Key's answer, in one
// transaction, and wakes the refund dispatchers on commit. mayRefund says
// whether the caller may act for the account the PIX was credited to;
// render turns the refund into the answer (201) the key replays.
// Refusals, with nothing changed: pix.ErrPixNotCredited (no credit, or
// another customer's: the same answer), and those of db.RecordRefund;
// pix.ErrRequestInProgress when the reservation was taken over meanwhile.
//
// Whose the PIX is is read first, without a lock: a caller probing another
// customer's PIX never waits on, nor holds up, its owner's refunds. Then
// db.RecordRefund, which takes the locks.
func (s *Store) CreateRefund(ctx context.Context, r db.Reservation, nr db.NewRefund, mayRefund func(accountID string) bool,
	render func(pix.Refund) ([]byte, error)) (pix.Refund, error) {
	var out pix.Refund
	err := db.InTx(ctx, s.Pool(), func(tx pgx.Tx) error {
		var account string
		err := tx.QueryRow(ctx, refundSQL.CreditAccount, nr.EndToEndID).Scan(&account)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return pix.ErrPixNotCredited
		case err != nil:
			return fmt.Errorf("read credit: %w", err)
		case !mayRefund(account):
			return pix.ErrPixNotCredited // another customer's PIX: as if missing
		}
		// A credit's account never changes: what was read is what is locked.
		if out, err = db.RecordRefund(ctx, tx, nr, &r.Key, r.Caller); err != nil {
			return err
		}
		return db.RecordCreated(ctx, tx, r, out, render)
	})
	if err != nil {
		return pix.Refund{}, err
	}
	s.Wake(db.RefundDueChannel, db.OutboxChannel)
	return out, nil
}

// RefundsOf returns the refunds of one PIX, oldest first.
func (s *Store) RefundsOf(ctx context.Context, endToEndID string) ([]pix.Refund, error) {
	rows, err := s.Pool().Query(ctx, refundSQL.RefundsOf, endToEndID)
	if err != nil {
		return nil, db.Classify(fmt.Errorf("list refunds: %w", err))
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (pix.Refund, error) { return db.ScanRefund(row) })
	if err != nil {
		return nil, db.Classify(fmt.Errorf("list refunds: %w", err))
	}
	if out == nil {
		out = []pix.Refund{}
	}
	return out, nil
}

// MarkRefundRequested records that the PSP holds the devolução (rtrID, its
// own end-to-end id, kept from the first answer that gave one). A final
// refund is left as it is. It returns the refund.
func (s *Store) MarkRefundRequested(ctx context.Context, id, rtrID string) (pix.Refund, error) {
	if _, err := s.Pool().Exec(ctx, refundSQL.MarkRequested, id, rtrID); err != nil {
		return pix.Refund{}, db.Classify(fmt.Errorf("mark refund requested: %w", err))
	}
	return s.GetRefund(ctx, id)
}

// MarkRefundReturned records that the PSP returned the money, with its
// event: final. A returned refund stays returned; a reversed one is
// pix.ErrRefundFinal (the PSP contradicts itself: a human must look).
func (s *Store) MarkRefundReturned(ctx context.Context, id, rtrID string) (pix.Refund, error) {
	if _, err := s.Pool().Exec(ctx, refundSQL.MarkReturned, id, rtrID, tracing.Traceparent(ctx)); err != nil {
		return pix.Refund{}, db.Classify(fmt.Errorf("mark refund returned: %w", err))
	}
	s.Wake(db.OutboxChannel)
	r, err := s.GetRefund(ctx, id)
	if err == nil && r.Status == pix.RefundReversed {
		return r, fmt.Errorf("%w: returned by the PSP after it was reversed", pix.ErrRefundFinal)
	}
	return r, err
}

// MarkRefundAsked records that the saga is about to send the devolução to
// the PSP, in a statement of its own, and reports whether this is the first
// time: only then can a refusal of this PUT prove that the PSP never took it.
// Every ask is counted: once a second one was sent, no refusal stands, even
// one of the first PUT recorded late (MarkRefundRefused). No such refund:
// false, nothing changed.
func (s *Store) MarkRefundAsked(ctx context.Context, id string) (first bool, err error) {
	err = s.Pool().QueryRow(ctx, refundSQL.MarkAsked, id).Scan(&first)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, db.Classify(fmt.Errorf("mark refund asked: %w", err))
	}
	return first, nil
}

// MarkRefundRefused records that the PSP refused the devolução and holds no
// record of it (its first refusal and reason kept), only while nothing
// says the PSP took it (no rtr_id, no notice) and no PUT but the refused
// one was sent (MarkRefundAsked counted one ask at most): as ReverseRefund
// checks the refusal under the lock. recorded is false, with nothing
// changed, otherwise: the refusal no longer proves that the PSP never took
// the devolução (another attempt's PUT may have made it, its answer lost).
func (s *Store) MarkRefundRefused(ctx context.Context, id, reason string) (recorded bool, err error) {
	tag, err := s.Pool().Exec(ctx, refundSQL.MarkRefused, id, reason)
	if err != nil {
		return false, db.Classify(fmt.Errorf("mark refund refused: %w", err))
	}
	return tag.RowsAffected() == 1, nil
}

// StandingRefusal returns the PSP's refusal of the devolução that
// MarkRefundRefused recorded, and whether it still stands (nothing says
// the PSP took the devolução since, and no other PUT was sent since): then
// a new run looks at the PSP's record again rather than asking again.
// pix.ErrRefundNotFound when there is no such refund.
func (s *Store) StandingRefusal(ctx context.Context, id string) (reason string, stands bool, err error) {
	err = s.Pool().QueryRow(ctx, refundSQL.StandingRefusal, id).Scan(&reason, &stands)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", false, pix.ErrRefundNotFound
	case err != nil:
		return "", false, db.Classify(fmt.Errorf("read refund refusal: %w", err))
	}
	return reason, stands, nil
}

// ReverseRefund compensates a devolução the PSP did not make: credits the
// amount back, records the reversal, marks the refund reversed and writes
// its event, gives the money back to the hold the devolução captured a part
// of and kept (db.RestoreHold) and fills the account's holds that fill with
// what is left (db.FillHolds), in one transaction, exactly once (the reversal's primary key
// is the guard). A reversed refund is returned as it is; a returned one is
// pix.ErrRefundFinal: money the PSP returned is never credited back here.
// refused says the reversal stands on the PSP's refusal of the devolução
// rather than on its record of it: then nothing may say, under the lock,
// that the PSP ever took it (an rtr_id, a notice), nor that more than one
// PUT was sent (pix.ErrRefundFinal otherwise, with nothing changed).
func (s *Store) ReverseRefund(ctx context.Context, id, reason string, refused bool) (pix.Refund, error) {
	var out pix.Refund
	// The holds the money back fills (a MED's) are told after the commit
	// (db.Store.InTx), after the outbox's wake.
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		db.WakeOnCommit(tx, db.OutboxChannel)
		var err error
		if out, err = db.ScanRefund(tx.QueryRow(ctx, refundSQL.LockRefund, id)); err != nil {
			return err
		}
		switch out.Status {
		case pix.RefundReversed:
			return nil
		case pix.RefundReturned:
			return fmt.Errorf("%w: the refund was returned", pix.ErrRefundFinal)
		}
		if refused {
			var stands bool
			if err := tx.QueryRow(ctx, refundSQL.RefusalStands, id).Scan(&stands); err != nil {
				return fmt.Errorf("check the refusal: %w", err)
			}
			if !stands {
				return fmt.Errorf("%w: the psp took the devolução after refusing it, or another PUT may have made it; not reversed", pix.ErrRefundFinal)
			}
		}
		if err := tx.QueryRow(ctx, refundSQL.Reverse, id, out.AccountID, out.AmountCents, reason, tracing.Traceparent(ctx)).Scan(&out.ReversedAt); err != nil {
			return fmt.Errorf("reverse: %w", err)
		}
		// The money back goes first to the hold the devolução captured a
		// part of and kept (a MED's: db.RestoreHold), held again; what is
		// left fills the account's holds that fill (a MED waiting for it:
		// docs/design.md, I11); both under the account lock the reversal
		// just took.
		restored, err := db.RestoreHold(ctx, tx, id)
		if err != nil {
			return err
		}
		if back := out.AmountCents - restored; back > 0 {
			// What its PIX got back first raises the PIX's holds that fill
			// whose room it took (a MED made while it was pending), so
			// that the money back fills them.
			if _, err := db.RaiseFillTo(ctx, tx, out.EndToEndID, uuid.Nil, back,
				db.FillSource{Kind: db.FillByRefundReversal, ID: id}); err != nil {
				return err
			}
			if _, err := db.FillHolds(ctx, tx, out.AccountID, back, db.FillSource{Kind: db.FillByRefundReversal, ID: id}); err != nil {
				return err
			}
		}
		out.Status, out.FailureReason = pix.RefundReversed, &reason
		return nil
	})
	if err != nil {
		return pix.Refund{}, err
	}
	return out, nil
}

// OldestOpenRefundAge is how long the oldest open refund has waited for its
// outcome since its debit; 0 when none is open.
func (s *Store) OldestOpenRefundAge(ctx context.Context) (time.Duration, error) {
	var seconds float64
	if err := s.Pool().QueryRow(ctx, refundSQL.OldestOpenAge).Scan(&seconds); err != nil {
		return 0, db.Classify(fmt.Errorf("oldest open refund: %w", err))
	}
	return time.Duration(seconds * float64(time.Second)), nil
}
