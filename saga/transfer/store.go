package transfer

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

//go:embed transfers.sql
var queryFiles embed.FS

// transferSQL holds the statements of transfers.sql (named transfers.* in
// traces, as they always were).
var transferSQL struct {
	GetTransfer, GetTransferByEndToEndID, LockTransfer, MarkSubmitted, Settle, Refund, OldestOpenAge string
}

func init() { db.BindQueries(queryFiles, "transfers.sql", &transferSQL) }

// Store is the transfer's store: the core's (the debit, the hand-over
// db.RecordTransfer, the Idempotency-Key layer, the open transfers' queue
// db.Store.TransferQueue), and the saga's own statements.
type Store struct{ *db.Store }

// NewStore returns the transfer's store over s.
func NewStore(s *db.Store) *Store { return &Store{s} }

// CreateTransfer debits the account, records the transfer and records the
// Idempotency-Key's response, all in one transaction, and wakes the
// transfer dispatchers on commit. render turns the recorded transfer into
// the response body (201) that the key will replay. Refusals, with nothing
// changed: pix.ErrAccountNotFound, pix.ErrAccountClosed,
// pix.ErrInsufficientFunds; pix.ErrRequestInProgress when the reservation
// was taken over meanwhile.
func (s *Store) CreateTransfer(ctx context.Context, r db.Reservation, t db.NewTransfer, render func(pix.Transfer) ([]byte, error)) (pix.Transfer, error) {
	var out pix.Transfer
	err := db.InTx(ctx, s.Pool(), func(tx pgx.Tx) error {
		debit, err := db.DebitAccount(ctx, tx, t.AccountID, t.AmountCents)
		if err != nil {
			return err
		}
		if out, err = db.RecordTransfer(ctx, tx, t, &r.Key, r.Caller, debit); err != nil {
			return err
		}
		return db.RecordCreated(ctx, tx, r, out, render)
	})
	if err != nil {
		return pix.Transfer{}, err
	}
	s.Wake(db.TransferDueChannel, db.OutboxChannel)
	return out, nil
}

// GetTransfer returns one transfer.
func (s *Store) GetTransfer(ctx context.Context, id uuid.UUID) (pix.Transfer, error) {
	return s.get(ctx, transferSQL.GetTransfer, id)
}

// GetTransferByEndToEndID returns the transfer sent under an end_to_end_id.
func (s *Store) GetTransferByEndToEndID(ctx context.Context, endToEndID string) (pix.Transfer, error) {
	return s.get(ctx, transferSQL.GetTransferByEndToEndID, endToEndID)
}

// get reads the one transfer query finds by arg.
func (s *Store) get(ctx context.Context, query string, arg any) (pix.Transfer, error) {
	t, err := db.ScanTransfer(s.Pool().QueryRow(ctx, query, arg))
	if err != nil && !errors.Is(err, pix.ErrTransferNotFound) {
		return pix.Transfer{}, db.Classify(fmt.Errorf("get transfer: %w", err))
	}
	return t, err
}

// MarkTransferSubmitted records that the PSP accepted the transfer. A
// transfer past debited is left as it is. It returns the transfer.
func (s *Store) MarkTransferSubmitted(ctx context.Context, id uuid.UUID) (pix.Transfer, error) {
	return s.updateTransfer(ctx, id, transferSQL.MarkSubmitted, nil)
}

// SettleTransfer records that the PSP settled the transfer, with its event:
// it is final. A settled transfer stays settled; a refunded one is
// pix.ErrTransferFinal (the PSP contradicts itself: a human must look).
func (s *Store) SettleTransfer(ctx context.Context, id uuid.UUID) (pix.Transfer, error) {
	t, err := s.updateTransfer(ctx, id, transferSQL.Settle, []any{tracing.Traceparent(ctx)}, db.OutboxChannel)
	if err == nil && t.Status == pix.TransferRefunded {
		return t, fmt.Errorf("%w: settled by the PSP after it was refunded", pix.ErrTransferFinal)
	}
	return t, err
}

// updateTransfer runs a guarded one-row update ($1 id, then more) and
// returns the transfer as it is afterwards, whether or not the guard let the
// update through. It wakes the channels the update may have made work for.
func (s *Store) updateTransfer(ctx context.Context, id uuid.UUID, update string, more []any, wakes ...string) (pix.Transfer, error) {
	if _, err := s.Pool().Exec(ctx, update, append([]any{id}, more...)...); err != nil {
		return pix.Transfer{}, db.Classify(fmt.Errorf("update transfer: %w", err))
	}
	s.Wake(wakes...)
	return s.GetTransfer(ctx, id)
}

// RefundTransfer compensates a transfer the PSP rejected: credits the
// amount back, records the refund, marks the transfer refunded and writes
// its event, and fills the account's holds that fill with the money back
// (db.FillHolds), in one transaction, exactly once (the refund's primary key is
// the guard). A refunded transfer is returned as it is; a settled one is
// pix.ErrTransferFinal: money that reached the receiver is never refunded
// here.
func (s *Store) RefundTransfer(ctx context.Context, id uuid.UUID, reason string) (pix.Transfer, error) {
	var out pix.Transfer
	// The holds the money back fills (a MED's) are told after the commit
	// (db.Store.InTx), after the outbox's wake.
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		db.WakeOnCommit(tx, db.OutboxChannel)
		var err error
		out, err = db.ScanTransfer(tx.QueryRow(ctx, transferSQL.LockTransfer, id))
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
		// The money back fills the account's holds that fill (a MED waiting
		// for it: docs/design.md, I11), under the account lock the refund
		// just took.
		if _, err := db.FillHolds(ctx, tx, out.AccountID, out.AmountCents,
			db.FillSource{Kind: db.FillByTransferRefund, ID: id.String()}); err != nil {
			return err
		}
		out.Status, out.FailureReason, out.RefundedAt = pix.TransferRefunded, &reason, &now
		return nil
	})
	if err != nil {
		return pix.Transfer{}, err
	}
	return out, nil
}

// OldestOpenTransferAge is how long the oldest open transfer (debited or
// submitted: the customer's money out of the balance and not yet settled
// nor refunded) has been open since its debit; 0 when none is open.
func (s *Store) OldestOpenTransferAge(ctx context.Context) (time.Duration, error) {
	var seconds float64
	if err := s.Pool().QueryRow(ctx, transferSQL.OldestOpenAge).Scan(&seconds); err != nil {
		return 0, db.Classify(fmt.Errorf("oldest open transfer: %w", err))
	}
	return time.Duration(seconds * float64(time.Second)), nil
}
