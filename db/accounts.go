package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/internal/pix"
)

// accountSQL holds the statements of queries/accounts.sql.
var accountSQL struct {
	CreateAccount, CloseAccount, GetAccount, LockForDebit, Debit, CreatePixKey, CreateCharge, ChargeStatus string
}

func init() { bindQueries("accounts.sql", &accountSQL) }

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
	tag, err := s.pool.Exec(ctx, accountSQL.CreateAccount, a.ID, a.OwnerName, a.OpeningBalanceCents)
	if err != nil {
		return false, Classify(fmt.Errorf("create account: %w", err))
	}
	return tag.RowsAffected() == 1, nil
}

// CloseAccount marks an account closed: it receives no further credit.
func (s *Store) CloseAccount(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, accountSQL.CloseAccount, id)
	if err != nil {
		return Classify(fmt.Errorf("close account: %w", err))
	}
	if tag.RowsAffected() == 0 {
		return pix.ErrAccountNotFound
	}
	return nil
}

// GetAccount returns one account.
func (s *Store) GetAccount(ctx context.Context, id string) (pix.Account, error) {
	var a pix.Account
	err := s.pool.QueryRow(ctx, accountSQL.GetAccount, id).
		Scan(&a.ID, &a.OwnerName, &a.Status, &a.BalanceCents, &a.HeldCents, &a.AvailableCents, &a.CreatedAt, &a.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return pix.Account{}, pix.ErrAccountNotFound
	}
	if err != nil {
		return pix.Account{}, Classify(fmt.Errorf("get account: %w", err))
	}
	return a, nil
}

// NewPixKey registers a Pix key (DICT key) of one of our accounts.
type NewPixKey struct {
	Key       string
	KeyType   string // cpf, cnpj, email, phone or evp
	AccountID string
}

// CreatePixKey registers a Pix key; a key that already exists is left as it
// is. It reports whether the key was created.
func (s *Store) CreatePixKey(ctx context.Context, k NewPixKey) (bool, error) {
	tag, err := s.pool.Exec(ctx, accountSQL.CreatePixKey, k.Key, k.KeyType, k.AccountID)
	if err != nil {
		return false, Classify(fmt.Errorf("create pix key: %w", err))
	}
	return tag.RowsAffected() == 1, nil
}

// NewCharge is a charge (cob) a customer issued: a PIX paying it names its
// txid.
type NewCharge struct {
	TxID                string
	AccountID           string
	AmountExpectedCents int64 // 0: any amount
}

// CreateCharge records a charge; one that already exists is left as it is.
// It reports whether the charge was created.
func (s *Store) CreateCharge(ctx context.Context, c NewCharge) (bool, error) {
	tag, err := s.pool.Exec(ctx, accountSQL.CreateCharge, c.TxID, c.AccountID, c.AmountExpectedCents)
	if err != nil {
		return false, Classify(fmt.Errorf("create charge: %w", err))
	}
	return tag.RowsAffected() == 1, nil
}

// ChargeStatus returns a charge's status (ATIVA until a PIX pays it, then
// CONCLUIDA).
func (s *Store) ChargeStatus(ctx context.Context, txid string) (string, error) {
	var status string
	err := s.pool.QueryRow(ctx, accountSQL.ChargeStatus, txid).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", pix.ErrChargeNotFound
	}
	if err != nil {
		return "", Classify(fmt.Errorf("get charge: %w", err))
	}
	return status, nil
}

// lockedAccount is an account as the one debit lock found it.
type lockedAccount struct {
	balance, held int64
}

// available is what a debit may take: the balance less what is held (I11).
func (a lockedAccount) available() int64 { return a.balance - a.held }

// lockAccount takes the one debit lock: it locks the account (FOR UPDATE,
// until tx ends) and reads its balance and what of it is held, which
// change only under this lock. pix.ErrAccountNotFound and
// pix.ErrAccountClosed are refusals: nothing was changed.
func lockAccount(ctx context.Context, tx pgx.Tx, accountID string) (lockedAccount, error) {
	a, status, err := lockAccountOfAnyStatus(ctx, tx, accountID)
	if err == nil && status != pix.AccountActive {
		err = fmt.Errorf("%w: %s", pix.ErrAccountClosed, accountID)
	}
	return a, err
}

// lockAccountOfAnyStatus is the one debit lock (LockForDebit) and what it
// read, whatever the account's status (a hold of a closed account is
// released: lockHoldAndAccount). pix.ErrAccountNotFound: no such account.
func lockAccountOfAnyStatus(ctx context.Context, tx pgx.Tx, accountID string) (a lockedAccount, status string, err error) {
	err = tx.QueryRow(ctx, accountSQL.LockForDebit, accountID).Scan(&status, &a.balance, &a.held)
	if errors.Is(err, pgx.ErrNoRows) {
		return a, "", fmt.Errorf("%w: %s", pix.ErrAccountNotFound, accountID)
	}
	if err != nil {
		return a, "", fmt.Errorf("lock account: %w", err)
	}
	return a, status, nil
}

// LockAccountForDebit locks the account (FOR UPDATE, until tx ends) and
// checks that it can be debited amountCents: its available balance (the
// balance less what active holds set aside, I11) covers it.
// pix.ErrAccountNotFound, pix.ErrAccountClosed, pix.ErrInsufficientFunds
// otherwise (refusals: nothing was changed, and the transaction should
// end). Whatever a debit of the account decides under the lock, no other
// debit, credit or hold of it can change meanwhile.
func LockAccountForDebit(ctx context.Context, tx pgx.Tx, accountID string, amountCents int64) error {
	return lockForDebit(ctx, tx, accountID, amountCents, 0)
}

// lockForDebit is LockAccountForDebit for a debit that captures
// capturedCents of the account's held money (a devolução capturing its
// hold: RecordRefund), which the debit may spend.
func lockForDebit(ctx context.Context, tx pgx.Tx, accountID string, amountCents, capturedCents int64) error {
	a, err := lockAccount(ctx, tx, accountID)
	if err != nil {
		return err
	}
	if a.available()+capturedCents < amountCents {
		return fmt.Errorf("%w: available %d (balance %d, held %d), debit %d", pix.ErrInsufficientFunds,
			a.available()+capturedCents, a.balance, a.held-capturedCents, amountCents)
	}
	return nil
}

// AccountDebit is what a debit left on its account: the balance after it
// and the time it was made, which the saga records on its own row
// (balance_after_cents, and its created_at: the books order movements by
// them).
type AccountDebit struct {
	BalanceAfterCents int64
	At                time.Time
}

// DebitAccount debits amountCents from the account within tx: the one
// debit of every saga that moves money out. It locks and checks the
// account first (LockAccountForDebit: its refusals, with nothing changed),
// so the debit never takes held money and the balance can't go below what
// is held (I11). The caller records, in the same
// transaction, the row that says why (its amount, and the debit's
// BalanceAfterCents and At), which the books (the view account_movements)
// must count: a debit without it leaves the account unbalanced.
func DebitAccount(ctx context.Context, tx pgx.Tx, accountID string, amountCents int64) (AccountDebit, error) {
	return debitAccount(ctx, tx, accountID, amountCents, 0)
}

// debitAccount is DebitAccount taking capturedCents of held money out of
// the account's held with the debit. Only RecordRefund passes a capture,
// under the lock of the active hold it captures and with the capture
// recorded in the same transaction: held money leaves the account only
// with the hold that set it aside.
func debitAccount(ctx context.Context, tx pgx.Tx, accountID string, amountCents, capturedCents int64) (AccountDebit, error) {
	if err := lockForDebit(ctx, tx, accountID, amountCents, capturedCents); err != nil {
		return AccountDebit{}, err
	}
	var d AccountDebit
	if err := tx.QueryRow(ctx, accountSQL.Debit, accountID, amountCents, capturedCents).Scan(&d.BalanceAfterCents, &d.At); err != nil {
		return AccountDebit{}, fmt.Errorf("debit: %w", err)
	}
	return d, nil
}
