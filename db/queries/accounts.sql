-- Accounts, Pix keys and charges (cob): db/accounts.go runs these. The
-- balance check of the reconciliation is in maintenance.sql.

-- name: CreateAccount
-- An account that exists already is left as it is. $1 id, $2 owner_name,
-- $3 opening balance.
INSERT INTO accounts (id, owner_name, opening_balance_cents, balance_cents)
VALUES ($1, $2, $3, $3)
ON CONFLICT (id) DO NOTHING

-- name: CloseAccount
UPDATE accounts SET status = 'closed', updated_at = now() WHERE id = $1

-- name: GetAccount
-- The account, what of its balance is held (I11) and what is available.
SELECT id, owner_name, status, balance_cents, held_cents, balance_cents - held_cents, created_at, updated_at
FROM accounts WHERE id = $1

-- name: LockForDebit
-- The account, locked until the transaction ends, before a debit or a
-- hold (the one debit lock): its balance and what of it is held, which
-- change only under this lock.
SELECT status, balance_cents, held_cents FROM accounts WHERE id = $1 FOR UPDATE

-- name: Debit
-- Every saga's debit (DebitAccount), on an account locked and checked
-- already (LockForDebit): what it returns is the saga's row's
-- balance_after_cents and the time of its debit. $1 account_id,
-- $2 amount_cents, $3 the held amount the debit captures (a devolução
-- that captures its hold, RecordRefund: the held money leaves with the
-- debit; 0 for every other debit).
UPDATE accounts SET balance_cents = balance_cents - $2, held_cents = held_cents - $3, updated_at = clock_timestamp()
WHERE id = $1
RETURNING balance_cents, updated_at

-- name: CreatePixKey
-- $1 key, $2 key_type, $3 account_id.
INSERT INTO pix_keys (key, key_type, account_id) VALUES ($1, $2, $3)
ON CONFLICT (key) DO NOTHING

-- name: CreateCharge
-- $1 txid, $2 account_id, $3 amount expected (0: any amount).
INSERT INTO pix_charges (txid, account_id, amount_expected_cents) VALUES ($1, $2, NULLIF($3, 0))
ON CONFLICT (txid) DO NOTHING

-- name: ChargeStatus
SELECT status FROM pix_charges WHERE txid = $1
