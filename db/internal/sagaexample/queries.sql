-- The toy saga's own statements, bound by its store (BindQueries): a
-- saga's SQL lives with the saga.

-- name: RecordPayout
-- The payout row, after its debit (db.DebitAccount) in the same
-- transaction: due at once for its dispatcher. $1 id, $2 account_id,
-- $3 amount_cents, $4 the balance after the debit, $5 the time of the
-- debit.
INSERT INTO example_payouts (id, account_id, amount_cents, balance_after_cents, created_at, dispatch_due_at)
VALUES ($1, $2, $3, $4, $5, now())

-- name: GetPayout
SELECT id, account_id, amount_cents, balance_after_cents, created_at FROM example_payouts WHERE id = $1
