package db

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/internal/pix"
)

// NewAccount opens an account.
type NewAccount struct {
	ID                  string
	OwnerName           string
	OpeningBalanceCents int64
}

// CreateAccount opens an account with its opening balance; an account that
// already exists is left as it is (so seeding is safe to repeat). It reports
// whether the account was created.
func (s *Store) CreateAccount(ctx context.Context, a NewAccount) (bool, error) {
	tag, err := s.pool.Exec(ctx, `
		INSERT INTO accounts (id, owner_name, opening_balance_cents, balance_cents)
		VALUES ($1, $2, $3, $3)
		ON CONFLICT (id) DO NOTHING`, a.ID, a.OwnerName, a.OpeningBalanceCents)
	if err != nil {
		return false, classify(fmt.Errorf("create account: %w", err))
	}
	return tag.RowsAffected() == 1, nil
}

// CloseAccount marks an account closed: it receives no further credit.
func (s *Store) CloseAccount(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE accounts SET status = 'closed', updated_at = now() WHERE id = $1`, id)
	if err != nil {
		return classify(fmt.Errorf("close account: %w", err))
	}
	if tag.RowsAffected() == 0 {
		return pix.ErrAccountNotFound
	}
	return nil
}

// GetAccount returns one account.
func (s *Store) GetAccount(ctx context.Context, id string) (pix.Account, error) {
	var a pix.Account
	err := s.pool.QueryRow(ctx, `
		SELECT id, owner_name, status, balance_cents, created_at, updated_at FROM accounts WHERE id = $1`, id).
		Scan(&a.ID, &a.OwnerName, &a.Status, &a.BalanceCents, &a.CreatedAt, &a.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return pix.Account{}, pix.ErrAccountNotFound
	}
	if err != nil {
		return pix.Account{}, classify(fmt.Errorf("get account: %w", err))
	}
	return a, nil
}
