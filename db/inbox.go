package db

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/internal/pix"
)

// receiveSQL stores one delivery of a notification, in one statement: a first
// delivery inserts a pending row that is due for dispatch at once; a
// redelivery of the same PIX only counts (deliveries+1) and records a refund
// notice if it carries one, except that a failed row is put back to pending
// in a new drive (re-driven). The same PIX means the same format, amount and
// recipient as sent (account, or key and txid). Otherwise nothing is updated
// and no row is returned: a payload mismatch. Concurrent copies are one
// insert and n-1 updates: PostgreSQL's ON CONFLICT decides atomically.
//
// A PIX credited already (pix_credits, the guard that outlives the inbox
// row) is never inserted as pending. Its candidate row exists only while
// the statement's snapshot still shows the inbox row (the usual case: the
// ON CONFLICT branch counts the delivery); if the retention deletes that
// row while this statement runs, the insert goes through, and then as a
// done row that agrees with the credit (the retention takes it again), so
// the books never show a credited PIX pending. With no inbox row in the
// snapshot no row is returned and creditedBefore answers.
//
// first is deliveries = 1 on a pending row: a row brought back as done is
// a redelivery. RETURNING's subquery reads the statement's snapshot, that
// is the row as it was before this delivery (absent for an insert): whether
// it was failed. A concurrent change makes it at worst a needless kick.
const receiveSQL = `
	INSERT INTO inbox_messages (end_to_end_id, amount_cents, source, account_id, pix_key, txid, psp, refund_notice, payload,
	                            status, dispatch_due_at, processed_at)
	SELECT $1, $2, $3, COALESCE(NULLIF($4, ''), c.account_id), NULLIF($5, ''), NULLIF($6, ''), NULLIF($7, ''), $8, $9,
	       CASE WHEN c.end_to_end_id IS NULL THEN 'pending' ELSE 'done' END,
	       CASE WHEN c.end_to_end_id IS NULL THEN now() END,
	       c.credited_at
	FROM (SELECT 1) AS one LEFT JOIN pix_credits c ON c.end_to_end_id = $1
	WHERE c.end_to_end_id IS NULL
	   OR (EXISTS (SELECT 1 FROM inbox_messages m WHERE m.end_to_end_id = $1)
	       AND c.amount_cents = $2 AND ($3 = 'api_pix' OR c.account_id = $4))
	ON CONFLICT (end_to_end_id) DO UPDATE SET
		deliveries        = inbox_messages.deliveries + 1,
		last_delivered_at = now(),
		refund_notice     = COALESCE(EXCLUDED.refund_notice, inbox_messages.refund_notice),
		status            = CASE WHEN inbox_messages.status = 'failed' THEN 'pending' ELSE inbox_messages.status END,
		drive             = CASE WHEN inbox_messages.status = 'failed' THEN inbox_messages.drive + 1 ELSE inbox_messages.drive END,
		dispatch_due_at   = CASE WHEN inbox_messages.status = 'failed' THEN now() ELSE inbox_messages.dispatch_due_at END,
		dispatched_at     = CASE WHEN inbox_messages.status = 'failed' THEN NULL ELSE inbox_messages.dispatched_at END,
		processed_at      = CASE WHEN inbox_messages.status = 'failed' THEN NULL ELSE inbox_messages.processed_at END
	WHERE inbox_messages.amount_cents = EXCLUDED.amount_cents
	  AND inbox_messages.source = EXCLUDED.source
	  AND CASE WHEN EXCLUDED.source = 'native' THEN inbox_messages.account_id = EXCLUDED.account_id
	           ELSE inbox_messages.pix_key IS NOT DISTINCT FROM EXCLUDED.pix_key
	                AND inbox_messages.txid IS NOT DISTINCT FROM EXCLUDED.txid END
	RETURNING status, deliveries = 1 AND status = 'pending',
		COALESCE((SELECT before.status = 'failed' FROM inbox_messages before WHERE before.end_to_end_id = $1), false),
		attempts`

func receiveArgs(n pix.Notification) []any {
	source := n.Source
	if source == "" {
		source = pix.SourceNative
	}
	var refund any
	if len(n.RefundNotice) > 0 {
		refund = n.RefundNotice
	}
	return []any{n.EndToEndID, n.AmountCents, source, n.AccountID, n.PixKey, n.TxID, n.PSP, refund, n.Payload}
}

// scanReceipt reads receiveSQL's answer for n. stored is false when the
// statement stored nothing and returned no row: a payload mismatch, or a PIX
// credited before its inbox row was cleaned up (creditedBefore says which).
func scanReceipt(row pgx.Row, n pix.Notification) (r pix.Receipt, stored bool, err error) {
	r = pix.Receipt{EndToEndID: n.EndToEndID}
	var first bool
	err = row.Scan(&r.Status, &first, &r.Redriven, &r.Attempts)
	if errors.Is(err, pgx.ErrNoRows) {
		return pix.Receipt{}, false, nil
	}
	if err != nil {
		return pix.Receipt{}, false, classify(fmt.Errorf("store inbox message: %w", err))
	}
	r.Duplicate = !first
	return r, true, nil
}

// creditedBefore answers a delivery that stored nothing: a duplicate of a
// PIX credited already (its inbox row cleaned up; pix_credits is the guard
// that lasts, I1), or, when no credit matches, a payload mismatch. The
// account is compared for the native format only: an API Pix notification
// names a key or charge, resolved when it was credited.
func creditedBefore(ctx context.Context, q querier, n pix.Notification) (pix.Receipt, error) {
	var account string
	var amount int64
	err := q.QueryRow(ctx, `SELECT account_id, amount_cents FROM pix_credits WHERE end_to_end_id = $1`, n.EndToEndID).Scan(&account, &amount)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		// The row exists (the insert conflicted) and the update's
		// condition failed: another amount or recipient.
		return pix.Receipt{}, pix.ErrPayloadMismatch
	case err != nil:
		return pix.Receipt{}, classify(fmt.Errorf("look up earlier credit: %w", err))
	case amount != n.AmountCents || (n.Source != pix.SourceAPIPix && account != n.AccountID):
		return pix.Receipt{}, pix.ErrPayloadMismatch
	}
	return pix.Receipt{EndToEndID: n.EndToEndID, Status: pix.StatusDone, Duplicate: true}, nil
}

// DueChannel is the notification channel that says inbox rows are due for
// dispatch.
const DueChannel = "pix_inbox_due"

// creditSQL holds the statements of queries/credits.sql.
var creditSQL struct{ ClaimDue, MarkDispatched, DeferDispatch string }

func init() { bindQueries("credits.sql", &creditSQL) }

// InboxQueue is the pending inbox rows (keys: end_to_end_ids).
func (s *Store) InboxQueue() DueQueue {
	return DueQueue{s, "inbox_messages", DueChannel, creditSQL.ClaimDue, creditSQL.MarkDispatched, creditSQL.DeferDispatch}
}

// Receive stores one delivery of a notification (see receiveSQL). Another
// amount or recipient under the same end_to_end_id is pix.ErrPayloadMismatch
// and changes nothing.
func (s *Store) Receive(ctx context.Context, n pix.Notification) (pix.Receipt, error) {
	r, stored, err := scanReceipt(s.pool.QueryRow(ctx, receiveSQL, receiveArgs(n)...), n)
	if err != nil || stored {
		if err == nil && r.MadeDue() {
			s.wake(DueChannel)
		}
		return r, err
	}
	return creditedBefore(ctx, s.pool, n)
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
	order := make([]int, len(ns))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(ns[a].EndToEndID, ns[b].EndToEndID) })
	receipts := make([]pix.Receipt, len(ns))
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		batch := &pgx.Batch{}
		for _, i := range order {
			batch.Queue(receiveSQL, receiveArgs(ns[i])...)
		}
		results := tx.SendBatch(ctx, batch)
		// A delivery that stored nothing is looked up in pix_credits once
		// the batch's results are read (one conversation at a time on the
		// transaction's connection).
		var unstored []int
		for _, i := range order {
			r, stored, err := scanReceipt(results.QueryRow(), ns[i])
			if err != nil {
				// The first failure in execution order is the cause; the
				// statements after it only found the transaction aborted.
				results.Close() //nolint:errcheck // the item's error is the one to report
				return &pix.ItemError{Index: i, Err: err}
			}
			if !stored {
				unstored = append(unstored, i)
				continue
			}
			receipts[i] = r
		}
		if err := results.Close(); err != nil {
			return err
		}
		slices.Sort(unstored)
		for _, i := range unstored {
			r, err := creditedBefore(ctx, tx, ns[i])
			if err != nil {
				return &pix.ItemError{Index: i, Err: err}
			}
			receipts[i] = r
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if slices.ContainsFunc(receipts, pix.Receipt.MadeDue) {
		s.wake(DueChannel)
	}
	return receipts, nil
}

// Redrive puts a failed row back to pending in a new drive, due for
// dispatch at once: the dispatcher then starts a new workflow run. attempts
// and last_error are kept. It returns the attempts the PIX has had.
func (s *Store) Redrive(ctx context.Context, endToEndID string) (attempts int, err error) {
	err = inTx(ctx, s.pool, func(tx pgx.Tx) error {
		var status string
		err := tx.QueryRow(ctx, `SELECT status, attempts FROM inbox_messages WHERE end_to_end_id = $1 FOR UPDATE`, endToEndID).Scan(&status, &attempts)
		if errors.Is(err, pgx.ErrNoRows) {
			return pix.ErrCreditNotFound
		}
		if err != nil {
			return fmt.Errorf("lock inbox message: %w", err)
		}
		if status != pix.StatusFailed {
			return fmt.Errorf("%w: it is %s", pix.ErrNotFailed, status)
		}
		_, err = tx.Exec(ctx, `
			UPDATE inbox_messages
			SET status = 'pending', drive = drive + 1, dispatch_due_at = now(), dispatched_at = NULL, processed_at = NULL
			WHERE end_to_end_id = $1`, endToEndID)
		return err
	})
	if err == nil {
		s.wake(DueChannel)
	}
	return attempts, err
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
// row and marks the inbox row done, all in one transaction (invariants I1-I3).
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
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		out = CreditOutcome{} // a try after a deadlock starts afresh
		// The row, locked, and its account: named by the PSP (native format),
		// else resolved through the Pix key, else through the charge's txid
		// (API Pix format).
		var status string
		var rowDrive int
		var pixKey, txid, account *string
		err := tx.QueryRow(ctx, `
			SELECT m.amount_cents, m.status, m.drive, m.pix_key, m.txid,
			       COALESCE(m.account_id, CASE WHEN m.pix_key IS NOT NULL THEN k.account_id ELSE c.account_id END)
			FROM inbox_messages m
			LEFT JOIN pix_keys k ON k.key = m.pix_key
			LEFT JOIN pix_charges c ON c.txid = m.txid
			WHERE m.end_to_end_id = $1
			FOR UPDATE OF m`, endToEndID).Scan(&out.AmountCents, &status, &rowDrive, &pixKey, &txid, &account)
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
			return tx.QueryRow(ctx, `SELECT balance_after_cents, COALESCE(charge_outcome, '') FROM pix_credits WHERE end_to_end_id = $1`,
				endToEndID).Scan(&out.BalanceAfter, &out.ChargeOutcome)
		}

		// The account, locked, and any credit recorded in an earlier life of
		// this end_to_end_id (the guard that outlives the inbox row), in one
		// round trip.
		var accountStatus string
		var balance int64
		var prevAccount, prevCharge *string
		var prevAmount, prevBalanceAfter *int64
		err = tx.QueryRow(ctx, `
			SELECT a.status, a.balance_cents, c.account_id, c.amount_cents, c.balance_after_cents, c.charge_outcome
			FROM accounts a LEFT JOIN pix_credits c ON c.end_to_end_id = $2
			WHERE a.id = $1
			FOR UPDATE OF a`, out.AccountID, endToEndID).Scan(&accountStatus, &balance, &prevAccount, &prevAmount, &prevBalanceAfter, &prevCharge)
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
			_, err = tx.Exec(ctx, `
				UPDATE inbox_messages
				SET status = 'done', account_id = $3, attempts = GREATEST(attempts, $2), processed_at = clock_timestamp(), dispatch_due_at = NULL
				WHERE end_to_end_id = $1`, endToEndID, attempt, out.AccountID)
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
		// The balance, the credit, its event, the inbox row and the charge
		// its PIX names (concluded only under the charge rule, see
		// ChargeConcluded) in one statement. The credit's time is
		// clock_timestamp(), not now(): the moment of the credit, after the
		// locks were obtained, not the transaction's start.
		var recorded int
		var chargeOutcome *string
		err = tx.QueryRow(ctx, `
			WITH charge_before AS (
				SELECT account_id, amount_expected_cents, status FROM pix_charges WHERE txid = $6),
			charge AS (
				UPDATE pix_charges SET status = 'CONCLUIDA', concluded_by = $1, updated_at = clock_timestamp()
				WHERE txid = $6 AND status = 'ATIVA' AND account_id = $2
				  AND (amount_expected_cents IS NULL OR amount_expected_cents = $4)
				RETURNING txid),
			outcome AS (
				SELECT CASE
					WHEN $6::text IS NULL THEN NULL
					WHEN EXISTS (SELECT 1 FROM charge) THEN 'concluded'
					WHEN NOT EXISTS (SELECT 1 FROM charge_before) THEN 'unknown_charge'
					WHEN (SELECT account_id FROM charge_before) <> $2 THEN 'other_account'
					WHEN (SELECT status FROM charge_before) <> 'ATIVA' THEN 'not_open'
					WHEN (SELECT amount_expected_cents FROM charge_before) <> $4 THEN 'amount_mismatch'
					-- Open, right account and amount, yet not updated: a
					-- concurrent PIX concluded it first.
					ELSE 'not_open' END AS value),
			balance AS (
				UPDATE accounts SET balance_cents = $3, updated_at = clock_timestamp()
				WHERE id = $2
				RETURNING updated_at),
			credit AS (
				INSERT INTO pix_credits (end_to_end_id, account_id, amount_cents, balance_after_cents, credited_at, charge_txid, charge_outcome, received_at)
				SELECT $1, $2, $4, $3, updated_at, $6, (SELECT value FROM outcome),
				       (SELECT received_at FROM inbox_messages WHERE end_to_end_id = $1) FROM balance
				RETURNING end_to_end_id, account_id, amount_cents, balance_after_cents, credited_at),
			event AS (`+emitEvent(AggregateCredit, EventCreditSettled, "credit", "end_to_end_id",
			`'end_to_end_id', end_to_end_id, 'account_id', account_id, 'amount_cents', amount_cents,
				 'balance_after_cents', balance_after_cents, 'credited_at', credited_at`)+`)
			UPDATE inbox_messages
			SET status = 'done', account_id = $2, attempts = GREATEST(attempts, $5), dispatch_due_at = NULL,
			    processed_at = (SELECT credited_at FROM credit)
			WHERE end_to_end_id = $1
			RETURNING (SELECT count(*) FROM credit), (SELECT value FROM outcome)`,
			endToEndID, out.AccountID, out.BalanceAfter, out.AmountCents, attempt, txid).Scan(&recorded, &chargeOutcome)
		if err != nil {
			return fmt.Errorf("credit: %w", err)
		}
		if recorded != 1 {
			// The locks make this impossible; if it happens, commit nothing.
			return fmt.Errorf("credit: %d credit rows recorded, want 1", recorded)
		}
		if chargeOutcome != nil {
			out.ChargeOutcome = *chargeOutcome
		}
		out.Credited = true
		return nil
	})
	if err != nil {
		return CreditOutcome{}, err
	}
	if out.Credited {
		s.wake(OutboxChannel)
	}
	return out, nil
}

// RecordAttemptFailure leaves the attempt count and the error on a pending
// row of the caller's drive (see legacyDrive for 0). A row that is no longer pending, or
// was re-driven since, is left alone.
func (s *Store) RecordAttemptFailure(ctx context.Context, endToEndID string, drive, attempt int, reason string) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE inbox_messages SET attempts = GREATEST(attempts, $2), last_error = $3
		WHERE end_to_end_id = $1 AND status = 'pending' AND drive = $4`, endToEndID, attempt, reason, legacyDrive(drive))
	if err != nil {
		return classify(fmt.Errorf("record attempt failure: %w", err))
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
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		out = MarkFailedOutcome{}
		var rowDrive int
		err := tx.QueryRow(ctx, `SELECT status, drive, attempts FROM inbox_messages WHERE end_to_end_id = $1 FOR UPDATE`,
			endToEndID).Scan(status, &rowDrive, attemptsAfter)
		if errors.Is(err, pgx.ErrNoRows) {
			// The retention removes done rows only: credited, if it has a credit.
			var credited bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pix_credits WHERE end_to_end_id = $1)`, endToEndID).Scan(&credited); err != nil {
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
		return tx.QueryRow(ctx, `
			WITH failed AS (
				UPDATE inbox_messages
				SET status = 'failed', attempts = GREATEST(attempts, $2), last_error = $3,
				    processed_at = clock_timestamp(), dispatch_due_at = NULL
				WHERE end_to_end_id = $1
				RETURNING end_to_end_id, account_id, pix_key, txid, amount_cents, attempts, last_error, processed_at),
			event AS (`+emitEvent(AggregateCredit, EventCreditFailed, "failed", "end_to_end_id",
			`'end_to_end_id', end_to_end_id, 'account_id', account_id, 'pix_key', pix_key, 'txid', txid,
				 'amount_cents', amount_cents, 'attempts', attempts, 'reason', last_error, 'failed_at', processed_at`)+`)
			SELECT attempts FROM failed`, endToEndID, attempts, reason).Scan(attemptsAfter)
	})
	if err != nil {
		return MarkFailedOutcome{}, err
	}
	if out.Marked {
		s.wake(OutboxChannel)
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
	err := s.pool.QueryRow(ctx, `
		SELECT m.end_to_end_id, m.source, m.account_id, m.pix_key, m.txid, m.amount_cents, m.status, m.attempts, m.last_error,
		       m.deliveries, m.received_at, m.processed_at, c.credited_at, c.charge_txid, c.charge_outcome
		FROM inbox_messages m LEFT JOIN pix_credits c USING (end_to_end_id)
		WHERE m.end_to_end_id = $1
		UNION ALL
		SELECT c.end_to_end_id, NULL, c.account_id, NULL, c.charge_txid, c.amount_cents, 'done', 0, NULL, 0, c.credited_at, c.credited_at, c.credited_at,
		       c.charge_txid, c.charge_outcome
		FROM pix_credits c
		WHERE c.end_to_end_id = $1 AND NOT EXISTS (SELECT 1 FROM inbox_messages WHERE end_to_end_id = $1)`,
		endToEndID).Scan(&c.EndToEndID, &source, &c.AccountID, &c.PixKey, &c.TxID, &c.AmountCents, &c.Status, &c.Attempts, &c.LastError,
		&c.Deliveries, &c.ReceivedAt, &c.ProcessedAt, &c.CreditedAt, &chargeTxID, &chargeOutcome)
	if errors.Is(err, pgx.ErrNoRows) {
		return pix.Credit{}, pix.ErrCreditNotFound
	}
	if chargeTxID != nil && chargeOutcome != nil {
		c.Charge = &pix.ChargeView{TxID: *chargeTxID, Outcome: *chargeOutcome}
	}
	if err != nil {
		return pix.Credit{}, classify(fmt.Errorf("get pix credit: %w", err))
	}
	if source != nil {
		c.Source = *source
	}
	return c, nil
}

// DeleteDoneInboxRows deletes up to limit inbox rows that became done longer
// than olderThan ago, and returns how many. Their credits stay: a
// redelivery after that is still a duplicate (creditedBefore). Failed and
// pending rows are never deleted here.
func (s *Store) DeleteDoneInboxRows(ctx context.Context, olderThan time.Duration, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM inbox_messages WHERE end_to_end_id IN (
			SELECT end_to_end_id FROM inbox_messages
			WHERE status = 'done' AND processed_at < now() - $1::interval
			ORDER BY processed_at LIMIT $2 FOR UPDATE SKIP LOCKED)`, olderThan, limit)
	if err != nil {
		return 0, classify(fmt.Errorf("delete done inbox rows: %w", err))
	}
	return tag.RowsAffected(), nil
}

// OldestPendingAge is how long the oldest pending inbox row has waited
// since the PSP first told us of it; 0 when none is pending.
func (s *Store) OldestPendingAge(ctx context.Context) (time.Duration, error) {
	var seconds float64
	err := s.pool.QueryRow(ctx, `
		SELECT COALESCE(EXTRACT(EPOCH FROM clock_timestamp() - min(received_at)), 0)::float8
		FROM inbox_messages WHERE status = 'pending'`).Scan(&seconds)
	if err != nil {
		return 0, classify(fmt.Errorf("oldest pending inbox row: %w", err))
	}
	return time.Duration(seconds * float64(time.Second)), nil
}
