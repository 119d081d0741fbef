-- The database's clock (clock.go).

-- name: Now
-- The database's clock: the start of this statement (statement_timestamp()),
-- the clock every deadline is written by (a hold's created_at, and so a
-- block's expires_at, is its transaction's now()). Every worker decides by
-- this one clock, never by its own: one whose clock runs ahead would pass a
-- deadline early. Not now(), the start of the transaction: a deadline is
-- decided after the row's lock, which the transaction may have waited for,
-- and now() would be the instant before the wait (a block's return taken
-- after its 72 hours ended while it waited). This statement runs after the
-- lock, so its start is after the wait; clock_timestamp() would add nothing
-- (the statement reads no row).
SELECT statement_timestamp()
