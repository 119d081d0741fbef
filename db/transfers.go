package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/tracing"
)

// TransferDueChannel is the notification channel that says transfers are
// due for dispatch.
const TransferDueChannel = "pix_transfer_due"

// transferSQL holds the statements of queries/transfers.sql.
var transferSQL struct {
	RecordDebited, GetTransfer, GetTransferByEndToEndID, LockTransfer, MarkSubmitted, Settle, Refund, OldestOpenAge string
}

func init() { bindQueries("transfers.sql", &transferSQL) }

// transferQueue is the open transfers: a transfer has one drive (it stays
// open until it is final) and counts no attempts.
var transferQueue = DeclareQueue(QueueSpec{
	Name: "transfers", Table: "pix_transfers", Key: "id", KeyType: "uuid", Channel: TransferDueChannel,
	Open:     "m.dispatch_due_at IS NOT NULL",
	Attempts: "0",
	Drive:    "1",
	Listing: Listing{
		EndToEndID: "m.end_to_end_id", AccountID: "m.account_id", AmountCents: "m.amount_cents", Status: "m.status", PSP: "NULL::text",
		Memo:  "jsonb_build_object('payee_pix_key', m.pix_key)",
		Since: "m.created_at", Traceparent: "m.traceparent",
	},
})

// TransferQueue is the open transfers (keys: transfer ids).
func (s *Store) TransferQueue() DueQueue { return s.DueQueue(transferQueue) }

// NewTransfer is a transfer about to be debited: its id and end_to_end_id
// are chosen by the caller.
type NewTransfer struct {
	ID         uuid.UUID
	EndToEndID string
	pix.TransferRequest
}

// CreateTransfer debits the account, records the transfer and records the
// Idempotency-Key's response, all in one transaction, and wakes the
// transfer dispatchers on commit. render turns the recorded transfer into
// the response body (201) that the key will replay. Refusals, with nothing
// changed: pix.ErrAccountNotFound, pix.ErrAccountClosed,
// pix.ErrInsufficientFunds; pix.ErrRequestInProgress when the reservation
// was taken over meanwhile.
func (s *Store) CreateTransfer(ctx context.Context, r Reservation, t NewTransfer, render func(pix.Transfer) ([]byte, error)) (pix.Transfer, error) {
	var out pix.Transfer
	err := InTx(ctx, s.pool, func(tx pgx.Tx) error {
		debit, err := DebitAccount(ctx, tx, t.AccountID, t.AmountCents)
		if err != nil {
			return err
		}
		if out, err = RecordTransfer(ctx, tx, t, &r.Key, r.Caller, debit); err != nil {
			return err
		}
		return RecordCreated(ctx, tx, r, out, render)
	})
	if err != nil {
		return pix.Transfer{}, err
	}
	s.Wake(TransferDueChannel, OutboxChannel)
	return out, nil
}

// RecordTransfer records the transfer t, debited in tx (DebitAccount, the
// same transaction), with its event: the hand-over to the transfer saga,
// whose dispatcher starts it once tx commits (wake TransferDueChannel and
// OutboxChannel then). key is the Idempotency-Key it was asked with (nil:
// none, a transfer another saga creates) and requestedBy who asked.
func RecordTransfer(ctx context.Context, tx pgx.Tx, t NewTransfer, key *uuid.UUID, requestedBy string, debit AccountDebit) (pix.Transfer, error) {
	row := tx.QueryRow(ctx, transferSQL.RecordDebited, t.ID, t.EndToEndID, t.AccountID, t.AmountCents, t.PixKey, t.Description,
		key, requestedBy, tracing.Traceparent(ctx), debit.BalanceAfterCents, debit.At)
	out, err := scanTransfer(row)
	if err != nil {
		return pix.Transfer{}, fmt.Errorf("record transfer: %w", err)
	}
	return out, nil
}

// scanTransfer reads a transfer's columns in the order transfers.sql's
// statements return them.
func scanTransfer(row pgx.Row) (pix.Transfer, error) {
	var t pix.Transfer
	err := row.Scan(&t.ID, &t.EndToEndID, &t.AccountID, &t.AmountCents, &t.PixKey, &t.Description, &t.Status,
		&t.BalanceAfterCents, &t.FailureReason, &t.CreatedAt, &t.SubmittedAt, &t.SettledAt, &t.RefundedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return pix.Transfer{}, pix.ErrTransferNotFound
	}
	return t, err
}

// GetTransfer returns one transfer.
func (s *Store) GetTransfer(ctx context.Context, id uuid.UUID) (pix.Transfer, error) {
	t, err := scanTransfer(s.pool.QueryRow(ctx, transferSQL.GetTransfer, id))
	if err != nil && !errors.Is(err, pix.ErrTransferNotFound) {
		return pix.Transfer{}, Classify(fmt.Errorf("get transfer: %w", err))
	}
	return t, err
}

// GetTransferByEndToEndID returns the transfer sent under an end_to_end_id.
func (s *Store) GetTransferByEndToEndID(ctx context.Context, endToEndID string) (pix.Transfer, error) {
	t, err := scanTransfer(s.pool.QueryRow(ctx, transferSQL.GetTransferByEndToEndID, endToEndID))
	if err != nil && !errors.Is(err, pix.ErrTransferNotFound) {
		return pix.Transfer{}, Classify(fmt.Errorf("get transfer: %w", err))
	}
	return t, err
}

// MarkTransferSubmitted records that the PSP accepted the transfer. A
// transfer past debited is left as it is. It returns the transfer.
func (s *Store) MarkTransferSubmitted(ctx context.Context, id uuid.UUID) (pix.Transfer, error) {
	return s.updateTransfer(ctx, id, transferSQL.MarkSubmitted, nil)
}

// SettleTransfer records that the PSP settled the transfer, with its event:
// it is final. A
// settled transfer stays settled; a refunded one is pix.ErrTransferFinal
// (the PSP contradicts itself: a human must look).
func (s *Store) SettleTransfer(ctx context.Context, id uuid.UUID) (pix.Transfer, error) {
	t, err := s.updateTransfer(ctx, id, transferSQL.Settle, []any{tracing.Traceparent(ctx)}, OutboxChannel)
	if err == nil && t.Status == pix.TransferRefunded {
		return t, fmt.Errorf("%w: settled by the PSP after it was refunded", pix.ErrTransferFinal)
	}
	return t, err
}

// updateTransfer runs a guarded one-row update ($1 id, then more) and
// returns the transfer as it is afterwards, whether or not the guard let the
// update through. It wakes the channels the update may have made work for.
func (s *Store) updateTransfer(ctx context.Context, id uuid.UUID, update string, more []any, wakes ...string) (pix.Transfer, error) {
	if _, err := s.pool.Exec(ctx, update, append([]any{id}, more...)...); err != nil {
		return pix.Transfer{}, Classify(fmt.Errorf("update transfer: %w", err))
	}
	s.Wake(wakes...)
	return s.GetTransfer(ctx, id)
}

// RefundTransfer compensates a transfer the PSP rejected: credits the
// amount back, records the refund, marks the transfer refunded and writes
// its event, in one transaction, exactly once (the refund's primary key is the guard). A
// refunded transfer is returned as it is; a settled one is
// pix.ErrTransferFinal: money that reached the receiver is never refunded
// here.
func (s *Store) RefundTransfer(ctx context.Context, id uuid.UUID, reason string) (pix.Transfer, error) {
	var out pix.Transfer
	err := InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		out, err = scanTransfer(tx.QueryRow(ctx, transferSQL.LockTransfer, id))
		if err != nil {
			return err
		}
		switch out.Status {
		case pix.TransferRefunded:
			return nil
		case pix.TransferSettled:
			return fmt.Errorf("%w: the transfer is settled", pix.ErrTransferFinal)
		}
		var now time.Time
		err = tx.QueryRow(ctx, transferSQL.Refund, id, out.AccountID, out.AmountCents, reason, tracing.Traceparent(ctx)).Scan(&now)
		if err != nil {
			return fmt.Errorf("refund: %w", err)
		}
		out.Status, out.FailureReason, out.RefundedAt = pix.TransferRefunded, &reason, &now
		return nil
	})
	if err != nil {
		return pix.Transfer{}, err
	}
	s.Wake(OutboxChannel)
	return out, nil
}

// OldestOpenTransferAge is how long the oldest open transfer (debited or
// submitted: the customer's money out of the balance and not yet settled
// nor refunded) has been open since its debit; 0 when none is open.
func (s *Store) OldestOpenTransferAge(ctx context.Context) (time.Duration, error) {
	return s.age(ctx, transferSQL.OldestOpenAge, "oldest open transfer")
}
