-- The database's clock (clock.go).

-- name: Now
-- The database's clock: the start of the transaction it runs in (or of the
-- statement, through the pool), the clock every deadline is written by (a
-- hold's created_at, and so a block's expires_at, is its transaction's
-- now()). Every worker decides by this one clock, never by its own: one
-- whose clock runs ahead would pass a deadline early.
SELECT now()
