-- Idempotency-Keys: db/idempotency.go runs these (and the sagas that record
-- a key's response in their own transaction, through recordResponse). The
-- retention of expired keys is in maintenance.sql.

-- name: Reserve
-- Reserves the key, or takes it over: an expired key counts as new, and a
-- reservation past its lock whose holder recorded nothing (it died) is
-- taken over by a request with the same body. Returns a row only when the
-- key is reserved. $1 key, $2 request_hash, $3 lock_token, $4 lock for,
-- $5 keep for, $6 caller.
INSERT INTO idempotency_keys (caller, key, request_hash, lock_token, locked_until, expires_at)
VALUES ($6, $1, $2, $3, now() + $4::interval, now() + $5::interval)
ON CONFLICT (caller, key) DO UPDATE SET
    request_hash = EXCLUDED.request_hash, lock_token = EXCLUDED.lock_token,
    locked_until = EXCLUDED.locked_until, status_code = NULL, response_body = NULL,
    created_at = now(), expires_at = EXCLUDED.expires_at
WHERE idempotency_keys.expires_at <= now()
   OR (idempotency_keys.status_code IS NULL AND idempotency_keys.locked_until <= now()
       AND idempotency_keys.request_hash = EXCLUDED.request_hash)
RETURNING true

-- name: ReadKey
-- What holds a key Reserve could not take: its body's hash, its recorded
-- response if any, and the seconds left on its lock. $1 key, $2 caller.
SELECT request_hash, status_code, response_body, COALESCE(GREATEST(EXTRACT(EPOCH FROM locked_until - now()), 0), 0)::float8
FROM idempotency_keys WHERE caller = $2 AND key = $1

-- name: RecordResponse
-- Fenced by the reservation's token: no row is updated once the
-- reservation was taken over. $1 key, $2 lock_token, $3 status_code,
-- $4 response_body, $5 caller.
UPDATE idempotency_keys SET status_code = $3, response_body = $4, lock_token = NULL, locked_until = NULL
WHERE caller = $5 AND key = $1 AND lock_token = $2

-- name: Release
-- $1 key, $2 lock_token, $3 caller.
DELETE FROM idempotency_keys WHERE caller = $3 AND key = $1 AND lock_token = $2
