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

// The devolução is a saga of its own package (saga/refund: its routes,
// store, workflow and activities). What stays here is what other sagas
// share of it: the hand-over every saga that returns a PIX makes in its own
// transaction (RecordRefund, which the cautionary block runs too), due for
// the devolução's dispatcher at commit (its queue, RefundQueue, and
// RefundDueChannel); the read of a refund (GetRefund: the block follows
// its devolução); the outcomes a PSP announced (NoteRefundOutcomes: the
// API Pix webhook's hook and the PSP catch-up note them). The core's,
// beside RecordTransfer. (The reconciliation's check of them is
// saga/reconcile's.)

// refundSQL holds the core's statements of queries/refunds.sql.
var refundSQL struct {
	LockCredit, TakenCents, RecordDebited, GetRefund, NoteOutcomes string
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
	// CaptureAll (with Hold) returns whatever the hold holds when it is
	// locked (AmountCents is set to it; what the caller put there is not
	// read): a hold that fills (a MED) may grow under the caller between
	// its read and the capture, which a devolução of a fixed amount would
	// then be refused (pix.ErrHoldNotCapturable). A hold of 0 is refused
	// all the same.
	CaptureAll bool
	// KeepHold (with Hold, a hold that fills) captures a part: the
	// devolução returns AmountCents (with CaptureAll, all it holds), at
	// most what the hold holds, and the hold stays active, holding and
	// filling to that much less (pix.hold.part_captured), possibly
	// nothing, until its holder releases it; if the devolução is reversed
	// while the hold is active and before its fill-until, its money goes
	// back into the hold in the reversal's transaction (RestoreHold), held,
	// never available; past the hold's fill-until it goes the way of any
	// money freed (RaiseFillTo, then Fill, else available). A MED
	// returned in parts keeps one hold from its first part to its end.
	KeepHold bool
}

// RecordRefund debits and records the devolução nr within tx, with its
// event: the hand-over to the devolução saga, whose dispatcher starts it
// once tx commits (wake RefundDueChannel and OutboxChannel then). It is
// RecordTransfer's twin for a devolução, but decides the debit itself,
// under the PIX's lock: a devolução returns at most what of the credit
// its other devoluções (all but the reversed) and the PIX's active holds
// (I11) leave, and never spends held money; with nr.Hold it captures that
// hold (its money leaves with the debit, the hold ends captured, with its
// event), or with nr.KeepHold a part of it, the hold kept active. key is the Idempotency-Key it was asked with (nil: none, a
// devolução another saga makes) and requestedBy who asked. The caller
// makes sure the caller may return the PIX (the devolução's store,
// saga/refund), and that it
// records the devolução once (its key, its own row): a second call is a
// second devolução, or a refusal.
//
// Refusals, with nothing changed: pix.ErrPixNotCredited,
// pix.ErrRefundWindowClosed, pix.ErrRefundExceedsCredit,
// pix.ErrAccountClosed, pix.ErrInsufficientFunds; with nr.Hold,
// pix.ErrHoldNotFound, pix.ErrHoldEnded (released, or captured already),
// pix.ErrHoldNotCapturable (of another PIX, or of none, or of another
// amount: with KeepHold, more than it holds, or a hold that does not
// fill; or holding nothing yet: a hold that fills from later credits is
// captured with what it holds, then, and fills no more; nr.CaptureAll
// returns what it holds under the locks, whatever the caller read).
//
// Locks, in the one order: the credit, the account, the hold; then the
// refund window is decided (by the database's clock after them: a window
// that closed while it waited is closed) and the PIX's room read
// (creditLeft: after the account's lock).
func RecordRefund(ctx context.Context, tx pgx.Tx, nr NewRefund, key *uuid.UUID, requestedBy string) (pix.Refund, error) {
	account, credited, closes, err := pixCredit(ctx, tx, nr.EndToEndID)
	if err != nil {
		return pix.Refund{}, err
	}
	var captured int64
	if nr.CaptureAll && nr.Hold == uuid.Nil {
		return pix.Refund{}, errors.New("record refund: CaptureAll without a Hold")
	}
	if nr.KeepHold && nr.Hold == uuid.Nil {
		return pix.Refund{}, errors.New("record refund: KeepHold without a Hold")
	}
	if nr.Hold != uuid.Nil {
		hold, err := lockHoldAndAccount(ctx, tx, nr.Hold)
		switch {
		case err != nil:
			return pix.Refund{}, err
		case !hold.Active():
			return pix.Refund{}, fmt.Errorf("%w: hold %s is %s", pix.ErrHoldEnded, hold.ID, hold.Status)
		case hold.AmountCents == 0:
			return pix.Refund{}, fmt.Errorf("%w: hold %s holds nothing yet (it fills from later credits)", pix.ErrHoldNotCapturable, hold.ID)
		case nr.CaptureAll:
			nr.AmountCents = hold.AmountCents // what it holds under its locks: nothing fills it before the commit
		}
		switch {
		case nr.KeepHold && hold.FillToCents == nil:
			return pix.Refund{}, fmt.Errorf("%w: hold %s does not fill: it is captured whole", pix.ErrHoldNotCapturable, hold.ID)
		case deref(hold.EndToEndID) != nr.EndToEndID || nr.AmountCents < 1 || hold.AmountCents < nr.AmountCents ||
			(!nr.KeepHold && hold.AmountCents != nr.AmountCents):
			return pix.Refund{}, fmt.Errorf("%w: hold %s holds %d of PIX %q; the devolução returns %d of %s", pix.ErrHoldNotCapturable,
				hold.ID, hold.AmountCents, deref(hold.EndToEndID), nr.AmountCents, nr.EndToEndID)
		}
		captured = nr.AmountCents
	} else if _, _, err := lockAccountOfAnyStatus(ctx, tx, account); err != nil {
		// The account's lock before the PIX's room is read (creditLeft): a
		// release of a hold of the PIX committing between would otherwise
		// leave this devolução refused for room that was free. Its status
		// is checked by the debit's lock (debitAccount), under this one.
		return pix.Refund{}, err
	}
	// The 90 days, by the database's clock read after the last lock (the
	// credit's, the account's, the hold's): a window that closed while
	// this transaction waited for one of them is closed (LockCredit).
	now, err := Now(ctx, tx)
	if err != nil {
		return pix.Refund{}, err
	}
	if !now.Before(closes) {
		return pix.Refund{}, fmt.Errorf("%w: it closed at %s", pix.ErrRefundWindowClosed, closes.Format(time.RFC3339))
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
	out, err := ScanRefund(tx.QueryRow(ctx, refundSQL.RecordDebited, nr.ID, nr.EndToEndID, account, nr.AmountCents, nr.Reason,
		key, requestedBy, tracing.Traceparent(ctx), debit.BalanceAfterCents, debit.At))
	if err != nil {
		return pix.Refund{}, fmt.Errorf("record refund: %w", err)
	}
	switch {
	case captured > 0 && nr.KeepHold:
		if err := capturePart(ctx, tx, nr.Hold, out.ID, captured, debit); err != nil {
			return pix.Refund{}, err
		}
	case captured > 0:
		if err := capture(ctx, tx, nr.Hold, out.ID, debit); err != nil {
			return pix.Refund{}, err
		}
	}
	return out, nil
}

// ScanRefund reads a refund's columns in the order the refunds' statements
// return them (this package's, the devolução saga's own: saga/refund): id,
// end_to_end_id, rtr_id, account_id, amount_cents, reason, status,
// balance_after_cents, failure_reason, created_at, requested_at,
// returned_at, reversed_at. No row is pix.ErrRefundNotFound.
func ScanRefund(row pgx.Row) (pix.Refund, error) {
	var r pix.Refund
	err := row.Scan(&r.ID, &r.EndToEndID, &r.RtrID, &r.AccountID, &r.AmountCents, &r.Reason, &r.Status, &r.BalanceAfterCents,
		&r.FailureReason, &r.CreatedAt, &r.RequestedAt, &r.ReturnedAt, &r.ReversedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return pix.Refund{}, pix.ErrRefundNotFound
	}
	return r, err
}

// GetRefund returns one refund: the devolução's saga reads it, and so does
// another saga that hands a devolução over (saga/block follows its own).
func (s *Store) GetRefund(ctx context.Context, id string) (pix.Refund, error) {
	r, err := ScanRefund(s.pool.QueryRow(ctx, refundSQL.GetRefund, id))
	if err != nil && !errors.Is(err, pix.ErrRefundNotFound) {
		return pix.Refund{}, Classify(fmt.Errorf("get refund: %w", err))
	}
	return r, err
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
