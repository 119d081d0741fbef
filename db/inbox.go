package db

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/internal/notification"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/tracing"
)

// receiveArgs are creditSQL.Receive's arguments for n, received in the
// request whose span's traceparent is traceparent (nil: none). It is the
// one way every delivery goes into the inbox (Receive, ReceiveBatch, the
// group commit; the webhooks and the PSP catch-up): the payload and the
// refund notice go in as notification.Storable makes them, so that what a
// PSP sends beyond the money fields never fails the insert. The money
// fields are n's own, exact; a redelivery is compared on them alone
// (creditSQL.Receive), never on the payload.
func receiveArgs(n pix.Notification, traceparent *string) []any {
	source := n.Source
	if source == "" {
		source = pix.SourceNative
	}
	var refund any
	if len(n.RefundNotice) > 0 {
		refund = json.RawMessage(notification.Storable(n.RefundNotice))
	}
	payload := json.RawMessage(notification.Storable(n.Payload))
	return []any{n.EndToEndID, n.AmountCents, source, n.AccountID, n.PixKey, n.TxID, n.PSP, refund, payload, traceparent, n.Listed}
}

// scanReceipt reads creditSQL.Receive's answer for n. stored is false when the
// statement stored nothing and returned no row: a payload mismatch, or a PIX
// credited before its inbox row was cleaned up, or the same PIX told in
// the other format (creditedBefore says which).
func scanReceipt(row pgx.Row, n pix.Notification) (r pix.Receipt, stored bool, err error) {
	r = pix.Receipt{EndToEndID: n.EndToEndID}
	var first bool
	err = row.Scan(&r.Status, &first, &r.Redriven, &r.Attempts)
	if errors.Is(err, pgx.ErrNoRows) {
		return pix.Receipt{}, false, nil
	}
	if err != nil {
		return pix.Receipt{}, false, Classify(fmt.Errorf("store inbox message: %w", err))
	}
	r.Duplicate = !first
	return r, true, nil
}

// DueChannel is the notification channel that says inbox rows are due for
// dispatch.
const DueChannel = "pix_inbox_due"

// creditSQL holds the statements of queries/credits.sql.
var creditSQL struct {
	Receive, SetLockTimeout, ResetLockTimeout, RedriveFailed, LockForCredit, CreditDone, LockAccountForCredit, MarkCreditedBefore,
	Credit, RecordAttemptFailure, LockForFail, IsCredited, MarkFailed, GetCredit, FailedCredits, FailedCreditsOfAccount, OldestPendingAge string
}

func init() { bindQueries("credits.sql", &creditSQL) }

// inboxQueue is the pending inbox rows: a credit's drive is the row's
// (a failed PIX is re-driven), its attempts the row's.
var inboxQueue = DeclareQueue(QueueSpec{
	Name: "credits", Table: "inbox_messages", Key: "end_to_end_id", KeyType: "text", Channel: DueChannel,
	Open:     "m.status = 'pending'",
	Attempts: "m.attempts",
	Drive:    "m.drive",
	Listing: Listing{
		EndToEndID: "m.end_to_end_id", AccountID: "m.account_id", AmountCents: "m.amount_cents", Status: "m.status", PSP: "m.psp",
		// Bounded, and text only: the memo travels in every start of the
		// credit (Temporal refuses one over its memo limit, for ever), and a
		// PSP's informational members may hold anything PostgreSQL stores.
		Memo: `jsonb_strip_nulls(jsonb_build_object(
        'payer', (SELECT jsonb_object_agg(left(p.key, 64), left(p.value, 140))
                  FROM (SELECT e.key, e.value FROM jsonb_each_text(
                            CASE WHEN jsonb_typeof(COALESCE(m.payload->'payer', m.payload->'pagador')) = 'object'
                                 THEN COALESCE(m.payload->'payer', m.payload->'pagador') END) AS e
                        ORDER BY e.key LIMIT 8) AS p),
        'payer_message', left(m.payload->>'infoPagador', 140)))`,
		Since: "m.received_at", Traceparent: "m.traceparent",
	},
})

// InboxQueue is the pending inbox rows (keys: end_to_end_ids).
func (s *Store) InboxQueue() DueQueue { return s.DueQueue(inboxQueue) }

// Receive stores one delivery of a notification (see Receive in
// queries/credits.sql). Another
// amount or recipient under the same end_to_end_id is pix.ErrPayloadMismatch
// and changes nothing.
func (s *Store) Receive(ctx context.Context, n pix.Notification) (pix.Receipt, error) {
	r, err := s.receive(ctx, s.pool, n, tracing.Traceparent(ctx))
	if err == nil && r.MadeDue() {
		s.Wake(DueChannel)
	}
	return r, err
}

// receive is Receive on q (the pool, or a group commit writer's
// connection), with the traceparent of the request it serves, and without
// the wake.
func (s *Store) receive(ctx context.Context, q Querier, n pix.Notification, traceparent *string) (pix.Receipt, error) {
	r, stored, err := scanReceipt(q.QueryRow(ctx, creditSQL.Receive, receiveArgs(n, traceparent)...), n)
	if err != nil || stored {
		return r, err
	}
	return creditedBefore(ctx, q, n)
}

// ReceiveBatch stores the deliveries of one request in one transaction: all
// are committed or none. The statements go in one round trip, in the byte
// order of their end_to_end_ids (the lock order of every statement that
// locks several inbox rows: COLLATE "C"), not in the request's: two batches
// that share ids lock the shared rows in the same order and never wait for
// each other in a cycle. An item that repeats an earlier item's end_to_end_id is a
// redelivery of it (the sort is stable). The first refusal is returned as
// a *pix.ItemError naming the item by its place in the request.
func (s *Store) ReceiveBatch(ctx context.Context, ns []pix.Notification) ([]pix.Receipt, error) {
	receipts, err := s.receiveBatch(ctx, ns, tracing.Traceparent(ctx))
	if err == nil && slices.ContainsFunc(receipts, pix.Receipt.MadeDue) {
		s.Wake(DueChannel)
	}
	return receipts, err
}

// receiveBatch is ReceiveBatch, with the traceparent of the request it
// serves, and without the wake: one call of a group of its own.
func (s *Store) receiveBatch(ctx context.Context, ns []pix.Notification, traceparent *string) ([]pix.Receipt, error) {
	c := &receiveCall{notifications: ns, batch: true, traceparent: traceparent}
	if _, err := s.receiveTogether(ctx, s.pool, []*receiveCall{c}); err != nil {
		return nil, err
	}
	return c.receipts, c.err // a culprit alone: its own error
}

// Redrive puts a failed row back to pending in a new drive, due for
// dispatch at once: the dispatcher then starts a new workflow run. attempts
// and last_error are kept. It returns the attempts the PIX has had. It is
// RedriveFailed's statement, for one PIX: pix.ErrCreditNotFound when it has
// no inbox row, pix.ErrNotFailed when it is not failed.
func (s *Store) Redrive(ctx context.Context, endToEndID string) (attempts int, err error) {
	rows, err := s.redrive(ctx, endToEndID, nil)
	switch {
	case err != nil:
		return 0, err
	case len(rows) == 0:
		return 0, pix.ErrCreditNotFound
	case !rows[0].redriven:
		return rows[0].Attempts, fmt.Errorf("%w: it is %s", pix.ErrNotFailed, rows[0].status)
	}
	return rows[0].Attempts, nil
}

// redriveRow is a row creditSQL.RedriveFailed locked: its status when
// locked, and whether it was re-driven.
type redriveRow struct {
	Redriven
	status   string
	redriven bool
}

// redrive runs creditSQL.RedriveFailed over the PIX endToEndID names and
// the failed PIX of accountID (nil: any), in a transaction that runs again
// after a deadlock, and wakes the inbox dispatchers when it re-drove a row.
func (s *Store) redrive(ctx context.Context, endToEndID, accountID any) ([]redriveRow, error) {
	var out []redriveRow
	err := InTx(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, creditSQL.RedriveFailed, endToEndID, accountID)
		if err != nil {
			return fmt.Errorf("re-drive failed credits: %w", err)
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (redriveRow, error) {
			var r redriveRow
			err := row.Scan(&r.EndToEndID, &r.status, &r.Attempts, &r.redriven)
			return r, err
		})
		if err != nil {
			return fmt.Errorf("re-drive failed credits: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if slices.ContainsFunc(out, func(r redriveRow) bool { return r.redriven }) {
		s.Wake(DueChannel)
	}
	return out, nil
}

// CreditOutcome says what a credit transaction did.
type CreditOutcome struct {
	AccountID   string
	AmountCents int64
	// Credited is false when the PIX had already been credited (a re-run of
	// the activity, or a redelivery after the inbox row was cleaned up).
	Credited     bool
	BalanceAfter int64
	// ChargeOutcome is what the credit did to the charge its PIX named
	// (one of the Charge* values), "" when it named none.
	ChargeOutcome string
}

// What a credit did to the charge (API Pix cob) its PIX named. A charge is
// concluded only by a PIX credited to the charge's own account with the
// amount the charge expects (any amount when it expects none); any other
// PIX naming its txid is credited all the same, the charge stays as it
// was, and the reason is recorded with the credit (pix_credits.charge_outcome).
const (
	ChargeConcluded      = "concluded"
	ChargeOtherAccount   = "other_account"   // credited to another account (through its Pix key)
	ChargeAmountMismatch = "amount_mismatch" // another amount than the charge expects
	ChargeNotOpen        = "not_open"        // the charge was concluded or removed already
	ChargeUnknown        = "unknown_charge"  // no charge has that txid (the key decided the account)
)

// legacyDrive maps the drive of a run started before drives were numbered
// (0) to the drive every row had then (1, the column's default): such a run
// is fenced like any other, superseded once its row was re-driven.
func legacyDrive(drive int) int { return max(drive, 1) }

// Credit credits the account of a pending inbox row, records the pix_credits
// row and marks the inbox row done, all in one transaction (invariants I1-I3);
// the holds of the account that fill from its credits (NewHold.FillFromCredits)
// take what they lack of it in the same transaction, the credit unchanged.
// drive is the drive the caller's run belongs to (0: a run started before
// drives were numbered, taken as drive 1); attempt is the processing attempt
// number to record (kept as the maximum seen). Running it again after it
// committed changes nothing. Refusals: pix.ErrCreditNotFound (no inbox
// row), pix.ErrNotPending (the row is failed), pix.ErrSuperseded (the row
// was re-driven since the caller's drive), pix.ErrAccountNotFound,
// pix.ErrAccountClosed, pix.ErrPayloadMismatch (an earlier credit under
// this end_to_end_id went elsewhere), pix.ErrBalanceOverflow.
func (s *Store) Credit(ctx context.Context, endToEndID string, drive, attempt int) (CreditOutcome, error) {
	drive = legacyDrive(drive)
	var out CreditOutcome
	// The holds the credit fills (a MED's) are told after the commit
	// (Store.InTx), after the outbox's wake.
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		out = CreditOutcome{} // a try after a deadlock starts afresh
		// The row, locked, and its account.
		var status string
		var rowDrive int
		var pixKey, txid, account *string
		var psp *string
		err := tx.QueryRow(ctx, creditSQL.LockForCredit, endToEndID).Scan(&out.AmountCents, &status, &rowDrive, &pixKey, &txid, &account, &psp)
		if errors.Is(err, pgx.ErrNoRows) {
			return pix.ErrCreditNotFound
		}
		if err != nil {
			return fmt.Errorf("lock inbox message: %w", err)
		}
		switch {
		case status == pix.StatusDone:
		case rowDrive != drive:
			return fmt.Errorf("%w: drive %d, the row is at drive %d", pix.ErrSuperseded, drive, rowDrive)
		case status == pix.StatusFailed:
			return pix.ErrNotPending
		}
		switch {
		case account != nil:
			out.AccountID = *account
		case status != pix.StatusPending:
		case pixKey != nil:
			return fmt.Errorf("%w: %q", pix.ErrPixKeyNotFound, *pixKey)
		default:
			return fmt.Errorf("%w: %q", pix.ErrChargeNotFound, *txid)
		}
		if status == pix.StatusDone {
			return tx.QueryRow(ctx, creditSQL.CreditDone, endToEndID).Scan(&out.BalanceAfter, &out.ChargeOutcome)
		}

		// The account, locked, and any credit recorded in an earlier life of
		// this end_to_end_id.
		var accountStatus string
		var balance int64
		var prevAccount, prevCharge *string
		var prevAmount, prevBalanceAfter *int64
		err = tx.QueryRow(ctx, creditSQL.LockAccountForCredit, out.AccountID, endToEndID).
			Scan(&accountStatus, &balance, &prevAccount, &prevAmount, &prevBalanceAfter, &prevCharge)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: %s", pix.ErrAccountNotFound, out.AccountID)
		}
		if err != nil {
			return fmt.Errorf("lock account: %w", err)
		}

		if prevAccount != nil {
			if *prevAccount != out.AccountID || *prevAmount != out.AmountCents {
				return fmt.Errorf("%w: already credited %d to %s", pix.ErrPayloadMismatch, *prevAmount, *prevAccount)
			}
			out.BalanceAfter = *prevBalanceAfter
			if prevCharge != nil {
				out.ChargeOutcome = *prevCharge
			}
			_, err = tx.Exec(ctx, creditSQL.MarkCreditedBefore, endToEndID, attempt, out.AccountID)
			if err != nil {
				return fmt.Errorf("mark inbox message done: %w", err)
			}
			return nil
		}

		if accountStatus != pix.AccountActive {
			return fmt.Errorf("%w: %s", pix.ErrAccountClosed, out.AccountID)
		}
		if balance > math.MaxInt64-out.AmountCents {
			return pix.ErrBalanceOverflow
		}
		out.BalanceAfter = balance + out.AmountCents
		if err := recordCredit(ctx, tx, endToEndID, attempt, txid, s.deliveredBy(psp), &out); err != nil {
			return err
		}
		if out.Credited {
			WakeOnCommit(tx, OutboxChannel)
		}
		return nil
	})
	if err != nil {
		return CreditOutcome{}, err
	}
	return out, nil
}

// SetCatchUpPSP names the PSP the catch-up lists (PSP_NAME: its name in
// WEBHOOK_SECRETS or WEBHOOK_MTLS_PSPS), recorded as the PSP that delivered
// a PIX the catch-up stored first (deliveredBy). Set before the store is
// used; "" (unset): such a credit records no PSP.
func (s *Store) SetCatchUpPSP(name string) { s.catchUpPSP = name }

// CatchUpPSP is the name SetCatchUpPSP set ("": none).
func (s *Store) CatchUpPSP() string { return s.catchUpPSP }

// deliveredBy is the PSP a credit records as the one that delivered its
// PIX (pix_credits.psp, which outlives the inbox row: the PSP whose MED
// notices may hold it), from its inbox row's psp: the PSP's name; "" for
// a delivery not signed (NULL on the inbox row: signatures not required);
// for a PIX the catch-up stored first, the PSP it lists, nil (unknown:
// NULL, as a credit from before 0050) when none is named.
func (s *Store) deliveredBy(inboxPSP *string) *string {
	switch {
	case inboxPSP == nil:
		return new(string)
	case *inboxPSP != pix.CatchUpPSP:
		return inboxPSP
	case s.catchUpPSP == "":
		return nil
	}
	name := s.catchUpPSP
	return &name
}

// recordCredit makes the credit Credit decided on, its account locked and
// checked, out its account, amount and balance after: the balance, the
// credit (with psp, the PSP that delivered the PIX), its event, the inbox
// row and the charge its PIX names, in one statement, which also says
// whether a hold of the account fills from its credits (a MED): then the
// credit fills it (FillHolds), in the same transaction.
func recordCredit(ctx context.Context, tx pgx.Tx, endToEndID string, attempt int, txid, psp *string, out *CreditOutcome) error {
	var recorded int
	var chargeOutcome *string
	var fills bool
	err := tx.QueryRow(ctx, creditSQL.Credit, endToEndID, out.AccountID, out.BalanceAfter, out.AmountCents, attempt, txid,
		tracing.Traceparent(ctx), psp).Scan(&recorded, &chargeOutcome, &fills)
	if err != nil {
		return fmt.Errorf("credit: %w", err)
	}
	if recorded != 1 {
		// The locks make this impossible; if it happens, commit nothing.
		return fmt.Errorf("credit: %d credit rows recorded, want 1", recorded)
	}
	if fills {
		if _, err := FillHolds(ctx, tx, out.AccountID, out.AmountCents, FillSource{Kind: FillByCredit, ID: endToEndID}); err != nil {
			return err
		}
	}
	if chargeOutcome != nil {
		out.ChargeOutcome = *chargeOutcome
	}
	out.Credited = true
	return nil
}

// RecordAttemptFailure leaves the attempt count and the error on a pending
// row of the caller's drive (see legacyDrive for 0). A row that is no longer pending, or
// was re-driven since, is left alone.
func (s *Store) RecordAttemptFailure(ctx context.Context, endToEndID string, drive, attempt int, reason string) error {
	_, err := s.pool.Exec(ctx, creditSQL.RecordAttemptFailure, endToEndID, attempt, reason, legacyDrive(drive))
	if err != nil {
		return Classify(fmt.Errorf("record attempt failure: %w", err))
	}
	return nil
}

// MarkFailed closes the caller's drive of a PIX as failed, with its last
// error and its event, and says what it found and did. The row is locked first and decided on as it is now, not as
// a statement snapshot saw it:
//   - "done": a credit committed first (an attempt whose success was never
//     reported, or one that committed while this waited), which the caller
//     must honour;
//   - pix.StatusSuperseded: the row was re-driven since (drive is older than
//     the row's): a newer run owns it, and nothing is changed;
//   - "failed": failed now, or already by this drive (a retry whose first
//     try committed and whose answer was lost: no second event).
//
// drive 0 (a run from before drives were numbered) is drive 1.
// attempts, when larger than the stored count, replaces it.
func (s *Store) MarkFailed(ctx context.Context, endToEndID string, drive, attempts int, reason string) (MarkFailedOutcome, error) {
	drive = legacyDrive(drive)
	var out MarkFailedOutcome
	status, attemptsAfter := &out.Status, &out.Attempts
	err := InTx(ctx, s.pool, func(tx pgx.Tx) error {
		out = MarkFailedOutcome{}
		var rowDrive int
		err := tx.QueryRow(ctx, creditSQL.LockForFail, endToEndID).Scan(status, &rowDrive, attemptsAfter)
		if errors.Is(err, pgx.ErrNoRows) {
			// The retention removes done rows only: credited, if it has a credit.
			var credited bool
			if err := tx.QueryRow(ctx, creditSQL.IsCredited, endToEndID).Scan(&credited); err != nil {
				return fmt.Errorf("look up credit: %w", err)
			}
			if !credited {
				return pix.ErrCreditNotFound
			}
			*status = pix.StatusDone
			return nil
		}
		if err != nil {
			return fmt.Errorf("lock inbox message: %w", err)
		}
		switch {
		case *status == pix.StatusDone:
			return nil
		case rowDrive != drive:
			*status = pix.StatusSuperseded
			return nil
		case *status == pix.StatusFailed:
			return nil
		}
		*status, out.Marked = pix.StatusFailed, true
		return tx.QueryRow(ctx, creditSQL.MarkFailed, endToEndID, attempts, reason, tracing.Traceparent(ctx)).Scan(attemptsAfter)
	})
	if err != nil {
		return MarkFailedOutcome{}, err
	}
	if out.Marked {
		s.Wake(OutboxChannel)
	}
	return out, nil
}

// MarkFailedOutcome is what MarkFailed found and did.
type MarkFailedOutcome struct {
	// Status is the row's status for the caller: pix.StatusFailed,
	// pix.StatusDone or pix.StatusSuperseded.
	Status string
	// Attempts is the row's attempt count afterwards.
	Attempts int
	// Marked is true when this call failed the row (and wrote its event);
	// false when it found it failed by this drive already, done, or
	// superseded.
	Marked bool
}

// GetCredit reports one incoming PIX: its inbox row, or, once that was
// cleaned up, its credit.
func (s *Store) GetCredit(ctx context.Context, endToEndID string) (pix.Credit, error) {
	var c pix.Credit
	// NULL once the inbox row was cleaned up: the credit no longer says.
	var source, chargeTxID, chargeOutcome *string
	err := s.pool.QueryRow(ctx, creditSQL.GetCredit, endToEndID).Scan(&c.EndToEndID, &source, &c.AccountID, &c.PixKey, &c.TxID, &c.AmountCents, &c.Status, &c.Attempts, &c.LastError,
		&c.Deliveries, &c.ReceivedAt, &c.ProcessedAt, &c.CreditedAt, &chargeTxID, &chargeOutcome)
	if errors.Is(err, pgx.ErrNoRows) {
		return pix.Credit{}, pix.ErrCreditNotFound
	}
	if chargeTxID != nil && chargeOutcome != nil {
		c.Charge = &pix.ChargeView{TxID: *chargeTxID, Outcome: *chargeOutcome}
	}
	if err != nil {
		return pix.Credit{}, Classify(fmt.Errorf("get pix credit: %w", err))
	}
	if source != nil {
		c.Source = *source
	}
	return c, nil
}

// OldestPendingAge is how long the oldest pending inbox row has waited
// since the PSP first told us of it; 0 when none is pending.
func (s *Store) OldestPendingAge(ctx context.Context) (time.Duration, error) {
	return s.age(ctx, creditSQL.OldestPendingAge, "oldest pending inbox row")
}

// age runs query, a statement of one float8 column of seconds (the
// metrics' "oldest ... age" readings), as a duration; what names the
// reading in an error.
func (s *Store) age(ctx context.Context, query, what string) (time.Duration, error) {
	var seconds float64
	if err := s.pool.QueryRow(ctx, query).Scan(&seconds); err != nil {
		return 0, Classify(fmt.Errorf("%s: %w", what, err))
	}
	return time.Duration(seconds * float64(time.Second)), nil
}
