package db

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/tracing"
)

// refundSQL holds the statements of queries/refunds.sql.
var refundSQL struct {
	CreditAccount, LockCredit, TakenCents, RecordDebited, GetRefund, LockRefund, RefundsOf,
	MarkRequested, MarkReturned, Reverse, NoteOutcomes,
	Contradictions, OldestOpenAge, MarkAsked, RefusalStands, MarkRefused, StandingRefusal string
}

func init() { bindQueries("refunds.sql", &refundSQL) }

// Event types of refunds, and their aggregate.
const (
	AggregateRefund     = "pix_refund"
	EventRefundDebited  = "pix.refund.debited"
	EventRefundReturned = "pix.refund.returned"
	EventRefundReversed = "pix.refund.reversed"
)

// RefundDueChannel is the notification channel that says refunds are due.
const RefundDueChannel = "pix_refund_due"

// refundQueue is the open refunds. A refund's drive is 1 + its notices:
// its memo carries the outcome a PSP's webhook announced (psp_notice),
// which the dispatcher signals to the refund's open run (signalled_notices
// counts those signalled), and a notice that arrives after the claim makes
// the claim's records no-ops but for the run they record.
var refundQueue = DeclareQueue(QueueSpec{
	Name: "refunds", Table: "pix_refunds", Key: "id", KeyType: "text", Channel: RefundDueChannel,
	Open:      "m.dispatch_due_at IS NOT NULL",
	Attempts:  "0",
	Drive:     "1 + m.notices",
	Signalled: "signalled_notices",
	Listing: Listing{
		EndToEndID: "m.end_to_end_id", AccountID: "m.account_id", AmountCents: "m.amount_cents", Status: "m.status", PSP: "NULL::text",
		Memo: `jsonb_strip_nulls(jsonb_build_object('refund_id', m.id,
        'psp_notice', CASE WHEN m.notices > m.signalled_notices THEN m.psp_notice END))`,
		Since: "m.created_at", Traceparent: "m.traceparent",
	},
})

// RefundQueue is the open refunds (keys: refund ids).
func (s *Store) RefundQueue() DueQueue { return s.DueQueue(refundQueue) }

// NewRefund is a refund about to be debited: its id is chosen by the caller.
type NewRefund struct {
	ID string
	pix.RefundRequest
	// Hold is the active hold of the PIX the devolução captures (uuid.Nil:
	// none): a hold made for this return (db.Hold with the PIX's
	// EndToEndID), of exactly the devolução's amount. Its money, which no
	// other debit may spend, leaves the account with this devolução's
	// debit, and the hold ends captured, in the same transaction.
	Hold uuid.UUID
}

// CreateRefund debits the account that received the PIX, records the refund
// and its event and records the Idempotency-Key's answer, in one
// transaction, and wakes the refund dispatchers on commit. mayRefund says
// whether the caller may act for the account the PIX was credited to;
// render turns the refund into the answer (201) the key replays.
// Refusals, with nothing changed: pix.ErrPixNotCredited (no credit, or
// another customer's: the same answer), and those of RecordRefund;
// pix.ErrRequestInProgress when the reservation was taken over meanwhile.
//
// Whose the PIX is is read first, without a lock: a caller probing another
// customer's PIX never waits on, nor holds up, its owner's refunds. Then
// RecordRefund, which takes the locks.
func (s *Store) CreateRefund(ctx context.Context, r Reservation, nr NewRefund, mayRefund func(accountID string) bool,
	render func(pix.Refund) ([]byte, error)) (pix.Refund, error) {
	var out pix.Refund
	err := InTx(ctx, s.pool, func(tx pgx.Tx) error {
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
		if out, err = RecordRefund(ctx, tx, nr, &r.Key, r.Caller); err != nil {
			return err
		}
		return RecordCreated(ctx, tx, r, out, render)
	})
	if err != nil {
		return pix.Refund{}, err
	}
	s.Wake(RefundDueChannel, OutboxChannel)
	return out, nil
}

// RecordRefund debits and records the devolução nr within tx, with its
// event: the hand-over to the devolução saga, whose dispatcher starts it
// once tx commits (wake RefundDueChannel and OutboxChannel then). It is
// RecordTransfer's twin for a devolução, but decides the debit itself,
// under the PIX's lock: a devolução returns at most what of the credit
// its other devoluções (all but the reversed) and the PIX's active holds
// (I11) leave, and never spends held money; with nr.Hold it captures that
// hold (its money leaves with the debit, the hold ends captured, with its
// event). key is the Idempotency-Key it was asked with (nil: none, a
// devolução another saga makes) and requestedBy who asked. The caller
// makes sure the caller may return the PIX (CreateRefund), and that it
// records the devolução once (its key, its own row): a second call is a
// second devolução, or a refusal.
//
// Refusals, with nothing changed: pix.ErrPixNotCredited,
// pix.ErrRefundWindowClosed, pix.ErrRefundExceedsCredit,
// pix.ErrAccountClosed, pix.ErrInsufficientFunds; with nr.Hold,
// pix.ErrHoldNotFound, pix.ErrHoldEnded (released, or captured already),
// pix.ErrHoldNotCapturable (of another PIX, or of none, or of another
// amount).
//
// Locks, in the one order: the credit, the hold, the account.
func RecordRefund(ctx context.Context, tx pgx.Tx, nr NewRefund, key *uuid.UUID, requestedBy string) (pix.Refund, error) {
	account, credited, open, err := pixCredit(ctx, tx, nr.EndToEndID)
	if err != nil {
		return pix.Refund{}, err
	}
	if !open {
		return pix.Refund{}, pix.ErrRefundWindowClosed
	}
	var captured int64
	if nr.Hold != uuid.Nil {
		hold, err := lockHold(ctx, tx, nr.Hold)
		switch {
		case err != nil:
			return pix.Refund{}, err
		case !hold.Active():
			return pix.Refund{}, fmt.Errorf("%w: hold %s is %s", pix.ErrHoldEnded, hold.ID, hold.Status)
		case deref(hold.EndToEndID) != nr.EndToEndID || hold.AmountCents != nr.AmountCents:
			return pix.Refund{}, fmt.Errorf("%w: hold %s holds %d of PIX %q; the devolução returns %d of %s", pix.ErrHoldNotCapturable,
				hold.ID, hold.AmountCents, deref(hold.EndToEndID), nr.AmountCents, nr.EndToEndID)
		}
		captured = hold.AmountCents
	}
	left, err := creditLeft(ctx, tx, nr.EndToEndID, credited, nr.Hold)
	if err != nil {
		return pix.Refund{}, err
	}
	if nr.AmountCents > left {
		return pix.Refund{}, fmt.Errorf("%w: credited %d, refunded or held %d, asked %d", pix.ErrRefundExceedsCredit,
			credited, credited-left, nr.AmountCents)
	}
	debit, err := debitAccount(ctx, tx, account, nr.AmountCents, captured)
	if err != nil {
		return pix.Refund{}, err
	}
	out, err := scanRefund(tx.QueryRow(ctx, refundSQL.RecordDebited, nr.ID, nr.EndToEndID, account, nr.AmountCents, nr.Reason,
		key, requestedBy, tracing.Traceparent(ctx), debit.BalanceAfterCents, debit.At))
	if err != nil {
		return pix.Refund{}, fmt.Errorf("record refund: %w", err)
	}
	if captured > 0 {
		if err := capture(ctx, tx, nr.Hold, out.ID, debit); err != nil {
			return pix.Refund{}, err
		}
	}
	return out, nil
}

func scanRefund(row pgx.Row) (pix.Refund, error) {
	var r pix.Refund
	err := row.Scan(&r.ID, &r.EndToEndID, &r.RtrID, &r.AccountID, &r.AmountCents, &r.Reason, &r.Status, &r.BalanceAfterCents,
		&r.FailureReason, &r.CreatedAt, &r.RequestedAt, &r.ReturnedAt, &r.ReversedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return pix.Refund{}, pix.ErrRefundNotFound
	}
	return r, err
}

// GetRefund returns one refund.
func (s *Store) GetRefund(ctx context.Context, id string) (pix.Refund, error) {
	r, err := scanRefund(s.pool.QueryRow(ctx, refundSQL.GetRefund, id))
	if err != nil && !errors.Is(err, pix.ErrRefundNotFound) {
		return pix.Refund{}, Classify(fmt.Errorf("get refund: %w", err))
	}
	return r, err
}

// RefundsOf returns the refunds of one PIX, oldest first.
func (s *Store) RefundsOf(ctx context.Context, endToEndID string) ([]pix.Refund, error) {
	rows, err := s.pool.Query(ctx, refundSQL.RefundsOf, endToEndID)
	if err != nil {
		return nil, Classify(fmt.Errorf("list refunds: %w", err))
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (pix.Refund, error) { return scanRefund(row) })
	if err != nil {
		return nil, Classify(fmt.Errorf("list refunds: %w", err))
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
	if _, err := s.pool.Exec(ctx, refundSQL.MarkRequested, id, rtrID); err != nil {
		return pix.Refund{}, Classify(fmt.Errorf("mark refund requested: %w", err))
	}
	return s.GetRefund(ctx, id)
}

// MarkRefundReturned records that the PSP returned the money, with its
// event: final. A returned refund stays returned; a reversed one is
// pix.ErrRefundFinal (the PSP contradicts itself: a human must look).
func (s *Store) MarkRefundReturned(ctx context.Context, id, rtrID string) (pix.Refund, error) {
	if _, err := s.pool.Exec(ctx, refundSQL.MarkReturned, id, rtrID, tracing.Traceparent(ctx)); err != nil {
		return pix.Refund{}, Classify(fmt.Errorf("mark refund returned: %w", err))
	}
	s.Wake(OutboxChannel)
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
	err = s.pool.QueryRow(ctx, refundSQL.MarkAsked, id).Scan(&first)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, Classify(fmt.Errorf("mark refund asked: %w", err))
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
	tag, err := s.pool.Exec(ctx, refundSQL.MarkRefused, id, reason)
	if err != nil {
		return false, Classify(fmt.Errorf("mark refund refused: %w", err))
	}
	return tag.RowsAffected() == 1, nil
}

// StandingRefusal returns the PSP's refusal of the devolução that
// MarkRefundRefused recorded, and whether it still stands (nothing says
// the PSP took the devolução since, and no other PUT was sent since): then
// a new run looks at the PSP's record again rather than asking again.
// pix.ErrRefundNotFound when there is no such refund.
func (s *Store) StandingRefusal(ctx context.Context, id string) (reason string, stands bool, err error) {
	err = s.pool.QueryRow(ctx, refundSQL.StandingRefusal, id).Scan(&reason, &stands)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", false, pix.ErrRefundNotFound
	case err != nil:
		return "", false, Classify(fmt.Errorf("read refund refusal: %w", err))
	}
	return reason, stands, nil
}

// ReverseRefund compensates a devolução the PSP did not make: credits the
// amount back, records the reversal, marks the refund reversed and writes
// its event, in one transaction, exactly once (the reversal's primary key
// is the guard). A reversed refund is returned as it is; a returned one is
// pix.ErrRefundFinal: money the PSP returned is never credited back here.
// refused says the reversal stands on the PSP's refusal of the devolução
// rather than on its record of it: then nothing may say, under the lock,
// that the PSP ever took it (an rtr_id, a notice), nor that more than one
// PUT was sent (pix.ErrRefundFinal otherwise, with nothing changed).
func (s *Store) ReverseRefund(ctx context.Context, id, reason string, refused bool) (pix.Refund, error) {
	var out pix.Refund
	err := InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if out, err = scanRefund(tx.QueryRow(ctx, refundSQL.LockRefund, id)); err != nil {
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
		out.Status, out.FailureReason = pix.RefundReversed, &reason
		return nil
	})
	if err != nil {
		return pix.Refund{}, err
	}
	s.Wake(OutboxChannel)
	return out, nil
}

// RefundNotice is an outcome a PSP's webhook announced for a devolução.
type RefundNotice struct {
	ID         string
	EndToEndID string
	Status     string // DEVOLVIDO or NAO_REALIZADO
}

// NotedRefunds is what NoteRefundOutcomes did.
type NotedRefunds struct {
	// Open are the open refunds noted (due at once, for their runs).
	Open []string
	// Contradicted are the final refunds whose notice contradicts their
	// status: the PSP now says otherwise of money already decided on. The
	// reconciliation reports them too; a human must look.
	Contradicted []RefundNotice
}

// NoteRefundOutcomes records the outcomes a PSP's webhook announced on the
// refunds they name (id and PIX both match; others are ignored). An open
// refund is made due, so that the dispatcher signals its run; a final one
// keeps the notice, and one that contradicts its status is reported.
// Nothing is decided on a notice: the saga confirms it with the PSP's
// record. Noting the same outcome again is harmless.
func (s *Store) NoteRefundOutcomes(ctx context.Context, notices []RefundNotice) (NotedRefunds, error) {
	// One notice per refund and PIX (the last one given): an UPDATE ...
	// FROM with two matches for a row would pick either. Sorted by id
	// (byte order), as the statement locks.
	type ref struct{ id, e2e string }
	last := map[ref]string{}
	for _, n := range notices {
		last[ref{n.ID, n.EndToEndID}] = n.Status
	}
	refs := slices.SortedFunc(maps.Keys(last), func(a, b ref) int {
		return cmp.Or(strings.Compare(a.id, b.id), strings.Compare(a.e2e, b.e2e))
	})
	ids, e2es, statuses := make([]string, len(refs)), make([]string, len(refs)), make([]string, len(refs))
	for i, r := range refs {
		ids[i], e2es[i], statuses[i] = r.id, r.e2e, last[r]
	}
	var out NotedRefunds
	err := InTx(ctx, s.pool, func(tx pgx.Tx) error {
		out = NotedRefunds{}
		rows, err := tx.Query(ctx, refundSQL.NoteOutcomes, ids, e2es, statuses)
		if err != nil {
			return fmt.Errorf("note refund outcomes: %w", err)
		}
		type noted struct{ ID, EndToEndID, Status string }
		all, err := pgx.CollectRows(rows, pgx.RowToStructByPos[noted])
		if err != nil {
			return fmt.Errorf("note refund outcomes: %w", err)
		}
		for _, n := range all {
			// The notice that matched: the row's id and PIX.
			notice := RefundNotice{ID: n.ID, EndToEndID: n.EndToEndID, Status: last[ref{n.ID, n.EndToEndID}]}
			switch {
			case n.Status == pix.RefundDebited || n.Status == pix.RefundRequested:
				out.Open = append(out.Open, n.ID)
			case contradicts(n.Status, notice.Status):
				out.Contradicted = append(out.Contradicted, notice)
			}
		}
		return nil
	})
	if err != nil {
		return NotedRefunds{}, err
	}
	if len(out.Open) > 0 {
		s.Wake(RefundDueChannel)
	}
	return out, nil
}

// contradicts reports whether a PSP's notice says otherwise than a final
// refund's status.
func contradicts(status, notice string) bool {
	return (status == pix.RefundReturned && notice == "NAO_REALIZADO") || (status == pix.RefundReversed && notice == "DEVOLVIDO")
}

// OldestOpenRefundAge is how long the oldest open refund has waited for its
// outcome since its debit; 0 when none is open.
func (s *Store) OldestOpenRefundAge(ctx context.Context) (time.Duration, error) {
	return s.age(ctx, refundSQL.OldestOpenAge, "oldest open refund")
}
