package db

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/tracing"
)

// TransferDueChannel is the notification channel that says transfers are
// due for dispatch.
const TransferDueChannel = "pix_transfer_due"

// The outgoing transfer is a saga of its own package (saga/transfer: its
// routes, store, workflow and activities). What stays here is the
// hand-over every saga that sends money out makes to it, in its own
// transaction: the transfer recorded after its debit (RecordTransfer), due
// for the transfer's dispatcher at commit (its queue, TransferQueue, and
// TransferDueChannel): the core's, beside RecordRefund.

// transferSQL holds the hand-over's statement, queries/transfers.sql.
var transferSQL struct {
	RecordDebited string
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

// RecordTransfer records the transfer t, debited in tx (DebitAccount, the
// same transaction), with its event: the hand-over to the transfer saga,
// whose dispatcher starts it once tx commits (wake TransferDueChannel and
// OutboxChannel then). key is the Idempotency-Key it was asked with (nil:
// none, a transfer another saga creates) and requestedBy who asked.
func RecordTransfer(ctx context.Context, tx pgx.Tx, t NewTransfer, key *uuid.UUID, requestedBy string, debit AccountDebit) (pix.Transfer, error) {
	row := tx.QueryRow(ctx, transferSQL.RecordDebited, t.ID, t.EndToEndID, t.AccountID, t.AmountCents, t.PixKey, t.Description,
		key, requestedBy, tracing.Traceparent(ctx), debit.BalanceAfterCents, debit.At)
	out, err := ScanTransfer(row)
	if err != nil {
		return pix.Transfer{}, fmt.Errorf("record transfer: %w", err)
	}
	return out, nil
}

// ScanTransfer reads a transfer's columns in the order the transfers'
// statements return them (this package's RecordDebited, the transfer
// saga's own: saga/transfer): id::text, end_to_end_id, account_id,
// amount_cents, pix_key, description, status, balance_after_cents,
// failure_reason, created_at, submitted_at, settled_at, refunded_at. No
// row is pix.ErrTransferNotFound.
func ScanTransfer(row pgx.Row) (pix.Transfer, error) {
	var t pix.Transfer
	err := row.Scan(&t.ID, &t.EndToEndID, &t.AccountID, &t.AmountCents, &t.PixKey, &t.Description, &t.Status,
		&t.BalanceAfterCents, &t.FailureReason, &t.CreatedAt, &t.SubmittedAt, &t.SettledAt, &t.RefundedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return pix.Transfer{}, pix.ErrTransferNotFound
	}
	return t, err
}
