package db

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/internal/pix"
)

// Reconciliation is what the books say about themselves: every list empty
// means they balance.
type Reconciliation struct {
	// UnbalancedAccounts: balance != opening + movements (account_movements, I2).
	UnbalancedAccounts []string `json:"unbalanced_accounts"`
	// UnbalancedHolds: held != the sum of the account's active holds (I11).
	UnbalancedHolds []string `json:"unbalanced_holds"`
	// DoneWithoutCredit: inbox rows done with no pix_credits row (I3).
	DoneWithoutCredit []string `json:"done_without_credit"`
	// CreditWithoutDone: credits whose inbox row exists and is not done (I3).
	CreditWithoutDone []string `json:"credit_without_done"`
	// RefundsOverCredit: PIX whose refunds (but the reversed) and active
	// holds sum to more than their credit (I9, I11).
	RefundsOverCredit []string `json:"refunds_over_credit"`
	// RefundContradictions: final refunds the PSP's latest notice
	// contradicts (returned but NAO_REALIZADO, reversed but DEVOLVIDO).
	RefundContradictions []string `json:"refund_contradictions"`
}

// Balanced reports whether nothing was found.
func (r Reconciliation) Balanced() bool {
	return len(r.UnbalancedAccounts) == 0 && len(r.UnbalancedHolds) == 0 && len(r.DoneWithoutCredit) == 0 && len(r.CreditWithoutDone) == 0 &&
		len(r.RefundsOverCredit) == 0 && len(r.RefundContradictions) == 0
}

// reconcileSQL holds the statements of queries/reconcile.sql: the
// reconciliation, from its checkpoint.
var reconcileSQL struct {
	RepeatableRead, Snapshot, Checkpoint, Unbalanced, UnbalancedHolds, Settle, DoneWithoutCredit, OverCredit, Advance string
}

func init() { bindQueries("reconcile.sql", &reconcileSQL) }

// Reconcile checks the books, from the checkpoint the last run left
// (docs/design.md, "The reconciliation"): every account's balance against
// its opening balance, its settled sum and its movements since; every
// account's held amount against its active holds; the done
// inbox rows since, and every pending or failed one, against the credits;
// the devoluções since, and the active holds, against their PIX's credit;
// the contradicted
// devoluções; and the differences the last run found, again. Its cost
// follows the accounts and what is new, never the books' history (the
// first run after migration 0024, which settles the history, reads it
// once). One REPEATABLE READ transaction: the checks read one snapshot,
// and the checkpoint moves with its commit; two runs at once are one after
// the other (the second starts again from the first's checkpoint). It
// reports; it never fixes money.
func (s *Store) Reconcile(ctx context.Context) (Reconciliation, error) {
	var r Reconciliation
	err := InTx(ctx, s.pool, func(tx pgx.Tx) error {
		r = Reconciliation{}
		if _, err := tx.Exec(ctx, reconcileSQL.RepeatableRead); err != nil {
			return fmt.Errorf("reconcile: %w", err)
		}
		// xid8 values travel as their text: pgx has no type of its own
		// for them.
		var xmin string
		var started time.Time
		if err := tx.QueryRow(ctx, reconcileSQL.Snapshot).Scan(&xmin, &started); err != nil {
			return fmt.Errorf("reconcile: snapshot: %w", err)
		}
		var settled *string
		var doneFrom *time.Time
		var doneBefore, overBefore []string
		if err := tx.QueryRow(ctx, reconcileSQL.Checkpoint).Scan(&settled, &doneFrom, &doneBefore, &overBefore); err != nil {
			return fmt.Errorf("reconcile: checkpoint: %w", err)
		}
		// Before Settle: the balances against the sums as the last run
		// left them.
		checks := []struct {
			out   *[]string
			query string
			args  []any
		}{
			{&r.UnbalancedAccounts, reconcileSQL.Unbalanced, []any{settled}},
			{&r.UnbalancedHolds, reconcileSQL.UnbalancedHolds, nil},
			{&r.DoneWithoutCredit, reconcileSQL.DoneWithoutCredit, []any{doneFrom, doneBefore}},
			{&r.CreditWithoutDone, maintenanceSQL.CreditWithoutDone, nil},
			{&r.RefundsOverCredit, reconcileSQL.OverCredit, []any{settled, overBefore}},
			{&r.RefundContradictions, refundSQL.Contradictions, nil},
		}
		for _, c := range checks {
			var err error
			if *c.out, err = listStrings(ctx, tx, c.query, c.args...); err != nil {
				return fmt.Errorf("reconcile: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, reconcileSQL.Settle, settled, xmin); err != nil {
			return fmt.Errorf("reconcile: settle: %w", err)
		}
		if _, err := tx.Exec(ctx, reconcileSQL.Advance, xmin, started, r.DoneWithoutCredit, r.RefundsOverCredit); err != nil {
			return fmt.Errorf("reconcile: advance: %w", err)
		}
		return nil
	})
	return r, err
}

// rowsQuerier runs a query of many rows: the pool, or a transaction.
type rowsQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// listStrings is query's one text column, every row ([] for none).
func listStrings(ctx context.Context, q rowsQuerier, query string, args ...any) ([]string, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, Classify(fmt.Errorf("query: %w", err))
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, Classify(fmt.Errorf("query: %w", err))
	}
	if out == nil {
		out = []string{}
	}
	return out, nil
}

// FailedKey is the sort key of the list of failed PIX (FailedCredits):
// newest first by the time they failed, then end_to_end_id. A page's
// cursor holds its last row's.
type FailedKey struct {
	FailedAt   time.Time `json:"failed_at"`
	EndToEndID string    `json:"end_to_end_id"`
}

// Valid says whether k is a key of the list: a failed PIX's.
func (k FailedKey) Valid() bool { return !k.FailedAt.IsZero() && pix.ValidEndToEndID(k.EndToEndID) }

// FailedKeyOf is the sort key of a failed PIX of the list (its
// processed_at is when it failed).
func FailedKeyOf(c pix.Credit) FailedKey {
	k := FailedKey{EndToEndID: c.EndToEndID}
	if c.ProcessedAt != nil {
		k.FailedAt = c.ProcessedAt.UTC()
	}
	return k
}

// FailedCredits lists up to limit failed PIX, newest first, of one account
// ("" for all), those after the key after in that order (nil: from the
// newest): a page of the list, read from an index whatever its depth.
func (s *Store) FailedCredits(ctx context.Context, accountID string, after *FailedKey, limit int) ([]pix.Credit, error) {
	var at *time.Time
	var id *string
	if after != nil {
		at, id = &after.FailedAt, &after.EndToEndID
	}
	var rows pgx.Rows
	var err error
	if accountID == "" {
		rows, err = s.pool.Query(ctx, creditSQL.FailedCredits, at, id, limit)
	} else {
		rows, err = s.pool.Query(ctx, creditSQL.FailedCreditsOfAccount, accountID, at, id, limit)
	}
	if err != nil {
		return nil, Classify(fmt.Errorf("list failed credits: %w", err))
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (pix.Credit, error) {
		var c pix.Credit
		err := row.Scan(&c.EndToEndID, &c.Source, &c.AccountID, &c.PixKey, &c.TxID, &c.AmountCents, &c.Status, &c.Attempts,
			&c.LastError, &c.Deliveries, &c.ReceivedAt, &c.ProcessedAt, &c.CreditedAt)
		return c, err
	})
	if err != nil {
		return nil, Classify(fmt.Errorf("list failed credits: %w", err))
	}
	if out == nil {
		out = []pix.Credit{}
	}
	return out, nil
}

// Redriven is one PIX put back to pending, with the attempts it has had.
type Redriven struct {
	EndToEndID string
	Attempts   int
}

// RedriveFailed puts every failed PIX of one account back to pending in a
// new drive, due at once, and returns them in end_to_end_id byte order.
func (s *Store) RedriveFailed(ctx context.Context, accountID string) ([]Redriven, error) {
	rows, err := s.redrive(ctx, nil, accountID)
	if err != nil {
		return nil, err
	}
	out := []Redriven{} // as pgx.CollectRows answers: empty, not nil
	for _, r := range rows {
		if r.redriven {
			out = append(out, r.Redriven)
		}
	}
	return out, nil
}
