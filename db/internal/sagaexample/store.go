// Package sagaexample is a toy saga's store built outside package db on
// db's exported core only (db.InTx, db.DebitAccount, db.RecordCreated,
// Store.Wake, db.DeclareQueue, db.BindQueries): the proof that a saga's
// store code can live in the saga's own package. Nothing but its test
// imports it; its table (example_payouts, see Schema) exists only in the
// test's schema.
package sagaexample

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/db"
)

// Schema is the toy saga's table; a real saga's comes in a migration.
const Schema = `CREATE TABLE example_payouts (
    id                  uuid        PRIMARY KEY,
    account_id          text        NOT NULL REFERENCES accounts (id),
    amount_cents        bigint      NOT NULL CHECK (amount_cents > 0),
    balance_after_cents bigint      NOT NULL,
    created_at          timestamptz NOT NULL,
    dispatch_due_at     timestamptz,
    dispatched_at       timestamptz)`

//go:embed queries.sql
var queryFiles embed.FS

// payoutSQL holds the statements of queries.sql.
var payoutSQL struct{ RecordPayout, GetPayout string }

func init() { db.BindQueries(queryFiles, "queries.sql", &payoutSQL) }

// PayoutDueChannel is the notification channel that says payouts are due.
const PayoutDueChannel = "example_payout_due"

// payoutQueue is the open payouts: one drive, no attempts counted.
var payoutQueue = db.DeclareQueue(db.QueueSpec{
	Name: "example_payouts", Table: "example_payouts", Key: "id", KeyType: "uuid", Channel: PayoutDueChannel,
	Open:     "m.dispatch_due_at IS NOT NULL",
	Attempts: "0",
	Drive:    "1",
	Listing: db.Listing{
		EndToEndID: "''", AccountID: "m.account_id", AmountCents: "m.amount_cents", Status: "'debited'", PSP: "NULL::text",
		Memo: "'{}'::jsonb", Since: "m.created_at", Traceparent: "NULL::text",
	},
})

// ErrPayoutNotFound: no payout has the id.
var ErrPayoutNotFound = errors.New("payout not found")

// Payout is money paid out of an account.
type Payout struct {
	ID                uuid.UUID
	AccountID         string
	AmountCents       int64
	BalanceAfterCents int64
	CreatedAt         time.Time
}

// Store is the toy saga's store, over the service's.
type Store struct{ store *db.Store }

// NewStore returns the saga's store over s.
func NewStore(s *db.Store) *Store { return &Store{s} }

// Queue is the open payouts, for the saga's dispatcher.
func (s *Store) Queue() db.DueQueue { return s.store.DueQueue(payoutQueue) }

// CreatePayout debits the account, records the payout and the
// Idempotency-Key's answer (201, render's body) in one transaction, and
// wakes the payouts' dispatchers on commit. Refusals, with nothing changed:
// those of db.DebitAccount, and pix.ErrRequestInProgress when the
// reservation was taken over meanwhile.
func (s *Store) CreatePayout(ctx context.Context, r db.Reservation, id uuid.UUID, accountID string, amountCents int64,
	render func(Payout) ([]byte, error)) (Payout, error) {
	var out Payout
	err := db.InTx(ctx, s.store.Pool(), func(tx pgx.Tx) error {
		debit, err := db.DebitAccount(ctx, tx, accountID, amountCents)
		if err != nil {
			return err
		}
		out = Payout{ID: id, AccountID: accountID, AmountCents: amountCents, BalanceAfterCents: debit.BalanceAfterCents, CreatedAt: debit.At}
		if _, err := tx.Exec(ctx, payoutSQL.RecordPayout, id, accountID, amountCents, debit.BalanceAfterCents, debit.At); err != nil {
			return fmt.Errorf("record payout: %w", err)
		}
		return db.RecordCreated(ctx, tx, r, out, render)
	})
	if err != nil {
		return Payout{}, err
	}
	s.store.Wake(PayoutDueChannel)
	return out, nil
}

// GetPayout returns one payout.
func (s *Store) GetPayout(ctx context.Context, id uuid.UUID) (Payout, error) {
	var p Payout
	err := s.store.Pool().QueryRow(ctx, payoutSQL.GetPayout, id).Scan(&p.ID, &p.AccountID, &p.AmountCents, &p.BalanceAfterCents, &p.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Payout{}, ErrPayoutNotFound
	}
	if err != nil {
		return Payout{}, db.Classify(fmt.Errorf("get payout: %w", err))
	}
	return p, nil
}
