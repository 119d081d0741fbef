package db

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/internal/pix"
)

// Reconciliation is what the books say about themselves: every list empty
// means they balance.
type Reconciliation struct {
	// UnbalancedAccounts: balance != opening + movements (account_movements, I2).
	UnbalancedAccounts []string `json:"unbalanced_accounts"`
	// DoneWithoutCredit: inbox rows done with no pix_credits row (I3).
	DoneWithoutCredit []string `json:"done_without_credit"`
	// CreditWithoutDone: credits whose inbox row exists and is not done (I3).
	CreditWithoutDone []string `json:"credit_without_done"`
	// RefundsOverCredit: PIX whose refunds (but the reversed) sum to more
	// than their credit.
	RefundsOverCredit []string `json:"refunds_over_credit"`
	// RefundContradictions: final refunds the PSP's latest notice
	// contradicts (returned but NAO_REALIZADO, reversed but DEVOLVIDO).
	RefundContradictions []string `json:"refund_contradictions"`
}

// Balanced reports whether nothing was found.
func (r Reconciliation) Balanced() bool {
	return len(r.UnbalancedAccounts) == 0 && len(r.DoneWithoutCredit) == 0 && len(r.CreditWithoutDone) == 0 &&
		len(r.RefundsOverCredit) == 0 && len(r.RefundContradictions) == 0
}

// Reconcile checks the books. It reports; it never fixes money.
func (s *Store) Reconcile(ctx context.Context) (Reconciliation, error) {
	var r Reconciliation
	var err error
	if r.UnbalancedAccounts, err = s.UnbalancedAccounts(ctx, ""); err != nil {
		return r, err
	}
	if r.DoneWithoutCredit, err = s.listStrings(ctx, `
		SELECT m.end_to_end_id FROM inbox_messages m
		WHERE m.status = 'done' AND NOT EXISTS (SELECT 1 FROM pix_credits c WHERE c.end_to_end_id = m.end_to_end_id)
		ORDER BY 1`); err != nil {
		return r, err
	}
	if r.CreditWithoutDone, err = s.listStrings(ctx, `
		SELECT c.end_to_end_id FROM pix_credits c JOIN inbox_messages m USING (end_to_end_id)
		WHERE m.status <> 'done' ORDER BY 1`); err != nil {
		return r, err
	}
	if r.RefundsOverCredit, err = s.listStrings(ctx, refundSQL.OverCredit); err != nil {
		return r, err
	}
	if r.RefundContradictions, err = s.listStrings(ctx, refundSQL.Contradictions); err != nil {
		return r, err
	}
	return r, nil
}

func (s *Store) listStrings(ctx context.Context, query string, args ...any) ([]string, error) {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, classify(fmt.Errorf("query: %w", err))
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, classify(fmt.Errorf("query: %w", err))
	}
	if out == nil {
		out = []string{}
	}
	return out, nil
}

// FailedCredits lists up to limit failed PIX, newest first, of one account
// ("" for all).
func (s *Store) FailedCredits(ctx context.Context, accountID string, limit int) ([]pix.Credit, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT end_to_end_id, source, account_id, pix_key, txid, amount_cents, status, attempts, last_error,
		       deliveries, received_at, processed_at, NULL::timestamptz
		FROM inbox_messages
		WHERE status = 'failed' AND ($1 = '' OR account_id = $1)
		ORDER BY processed_at DESC LIMIT $2`, accountID, limit)
	if err != nil {
		return nil, classify(fmt.Errorf("list failed credits: %w", err))
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (pix.Credit, error) {
		var c pix.Credit
		err := row.Scan(&c.EndToEndID, &c.Source, &c.AccountID, &c.PixKey, &c.TxID, &c.AmountCents, &c.Status, &c.Attempts,
			&c.LastError, &c.Deliveries, &c.ReceivedAt, &c.ProcessedAt, &c.CreditedAt)
		return c, err
	})
	if err != nil {
		return nil, classify(fmt.Errorf("list failed credits: %w", err))
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
// new drive, due at once, and returns them.
func (s *Store) RedriveFailed(ctx context.Context, accountID string) ([]Redriven, error) {
	// Locked in end_to_end_id order first: a concurrent re-drive, or a
	// batch of redeliveries, takes the same rows in the same order.
	rows, err := s.pool.Query(ctx, `
		WITH failed AS (
			SELECT end_to_end_id FROM inbox_messages
			WHERE status = 'failed' AND account_id = $1
			ORDER BY end_to_end_id COLLATE "C"
			FOR UPDATE)
		UPDATE inbox_messages m
		SET status = 'pending', drive = m.drive + 1, dispatch_due_at = now(), dispatched_at = NULL, processed_at = NULL
		FROM failed WHERE m.end_to_end_id = failed.end_to_end_id AND m.status = 'failed'
		RETURNING m.end_to_end_id, m.attempts`, accountID)
	if err != nil {
		return nil, classify(fmt.Errorf("re-drive failed credits: %w", err))
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Redriven])
	if err != nil {
		return nil, classify(fmt.Errorf("re-drive failed credits: %w", err))
	}
	if len(out) > 0 {
		s.wake(DueChannel)
	}
	return out, nil
}
