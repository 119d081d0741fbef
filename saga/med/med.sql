-- The MED saga's statements, bound by its store (db.BindQueries). A
-- statement that returns a report returns its row (*), which the store
-- reads by column name (Report in store.go).

-- name: CreditOf
-- The PIX's credit, if we made it: whose, how much, when, and when its
-- devolução window closes, the report's return_until ($1 end_to_end_id,
-- $2 the refund window): the instant db.LockCredit closes it at
-- (COALESCE(received_at, credited_at) + the window), not credited_at's,
-- later when the PIX was credited after it was received (attack review r11
-- LOW-2). Read without a lock (a credit never changes); db.Hold locks the
-- credit and the account.
SELECT account_id, amount_cents, credited_at, COALESCE(received_at, credited_at) + $2::interval
FROM pix_credits WHERE end_to_end_id = $1

-- name: CreditPSP
-- The PSP that delivered the PIX, the one PSP whose MED notices may hold
-- it: whether it was credited, the PSP its credit recorded (NULL: not
-- credited, or credited before 0050, or with the PSP unknown), whether its
-- inbox row is there (the retention deletes it) and its psp ('': delivered
-- unsigned). Each by its primary key.
SELECT c.end_to_end_id IS NOT NULL, c.psp, m.end_to_end_id IS NOT NULL, COALESCE(m.psp, '')
FROM (VALUES ($1::text)) AS k (id)
LEFT JOIN pix_credits c ON c.end_to_end_id = k.id
LEFT JOIN inbox_messages m ON m.end_to_end_id = k.id

-- name: Insert
-- A report received for the first time: $1 id, $2 end_to_end_id,
-- $3 account_id, $4 amount_cents, $5 credited_at (all three NULL: not
-- ours), $6 reporter, $7 infraction_type, $8 reported_by,
-- $9 report_details, $10 dict_status, $11 dict_modified_at,
-- $12 reported_at, $13 status, $14 end_cause, $15 analysis_due_at,
-- $16 return_until, $17 traceparent, $18 dict_analysis_result. Due at once for its dispatcher when
-- open. A report received already (two intakes at once) inserts nothing
-- (no row): the caller locks it and updates it.
INSERT INTO pix_med_reports (id, end_to_end_id, account_id, amount_cents, credited_at, reporter, infraction_type,
                             reported_by, report_details, dict_status, dict_modified_at, reported_at, status, end_cause,
                             analysis_due_at, return_until, traceparent, dict_analysis_result, ended_at, dispatch_due_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
        CASE WHEN $13 = 'ended' THEN now() END,
        CASE WHEN $13 NOT IN ('ended', 'not_ours') THEN now() END)
ON CONFLICT (id) DO NOTHING
RETURNING *

-- name: Get
SELECT * FROM pix_med_reports WHERE id = $1

-- name: Lock
-- The row, locked for a decision: whoever takes the lock first decides,
-- the others see its decision. Taken before any lock of the core, which
-- come after it in their one order (a PIX's credit or an inbox row, the
-- account, the hold).
SELECT * FROM pix_med_reports WHERE id = $1 FOR UPDATE

-- name: Save
-- Writes a decision made on the row locked at generation $2: every field
-- that changes, the generation bumped. A row no longer at $2 is left as
-- it is (no row): the fence. The queue entry closes when the report ends.
-- Another refund request taken ($17 not the one recorded: a first, one
-- reopened, one replacing a request cancelled) is not closed by the
-- refund close marked sent for the one before: the mark is cleared (the
-- right-hand side reads the row as it was), else closedByTheDICT and
-- closedCopy took it for ours and MarkSent never marked the new one's.
UPDATE pix_med_reports SET
    refund_close_sent_at = CASE WHEN $17::uuid IS DISTINCT FROM refund_request_id AND $17::uuid IS NOT NULL
                                THEN NULL ELSE refund_close_sent_at END,
    report_details = $3, dict_status = $4, dict_modified_at = $5, status = $6, end_cause = $7,
    analysis_result = $8, analysis_details = $9, analysed_by = $10, analysed_at = $11,
    acknowledged_at = $12, closed_at = $13, hold_id = $14, holds = $15, held_cents = $16,
    refund_request_id = $17, refund_request_cents = $18, refund_request_status = $19,
    refund_closed_at = $20, refund_closed_rtr_id = $21, refund_id = $22, returned_cents = $23, returns = $24,
    first_rtr_id = $25, refund_request_due_at = $26, dict_problem = $27, return_refused = $28,
    refund_request_modified_at = $29, dict_analysis_result = $30, refund_request_dict_result = $31,
    refund_request_dict_reason = $32, released_by = $33, release_details = $34,
    gen = gen + 1, updated_at = now(),
    ended_at = CASE WHEN $6 = 'ended' THEN COALESCE(ended_at, now()) END,
    dispatch_due_at = CASE WHEN $6 IN ('ended', 'not_ours') THEN NULL ELSE COALESCE(dispatch_due_at, now()) END
WHERE id = $1 AND gen = $2
RETURNING *

-- name: MarkSent
-- Marks the DICT write $3 (acknowledge, close, refund_close) as about to be
-- sent, on the row locked at generation $2 (the caller's decide): from now
-- on it may have been done, and is read back before it is sent again. Not
-- a decision: the generation stays (a retry of the activity, with the
-- report it was given, is still at it). A mark set already stays as it was
-- (no row: nothing changed).
UPDATE pix_med_reports SET
    acknowledge_sent_at = CASE WHEN $3 = 'acknowledge' THEN now() ELSE acknowledge_sent_at END,
    close_sent_at = CASE WHEN $3 = 'close' THEN now() ELSE close_sent_at END,
    refund_close_sent_at = CASE WHEN $3 = 'refund_close' THEN now() ELSE refund_close_sent_at END,
    updated_at = now()
WHERE id = $1 AND gen = $2
  AND CASE $3 WHEN 'acknowledge' THEN acknowledge_sent_at WHEN 'close' THEN close_sent_at
              WHEN 'refund_close' THEN refund_close_sent_at END IS NULL
RETURNING *

-- name: Unanswered
-- A refund request its report does not answer (IntakeRefund), by its own
-- id: $1 id, $2 report, $3 amount, $4 the DICT's status, $5 why, $6 the
-- DICT's LastModified of it. Again, its status only, when it moved: out of
-- OPEN only, by the DICT's order of the statuses, not by LastModified
-- (requestMoves in store.go; no row: nothing changed), and only by a copy
-- naming the report it is kept under: the caller holds that report's lock,
-- not another's (a copy naming another report of the same PIX changes
-- nothing). A copy CLOSED as our close of a kept request sends it ($7:
-- the copy is our close of one kept report_disagreed, $8 of one kept
-- report_cancelled, KeptClosing; $9 its result, $10 its rejection reason),
-- met with our close marked sent and not recorded (its answer lost), also
-- records that close as ours (as KeptClosed): the run's retry no longer
-- finds it OPEN (KeptToClose), so nothing else would. Returns whether this
-- statement recorded that close (closed_at set now: counted once, the
-- run's KeptClosed then finding it recorded); no row: nothing changed.
INSERT INTO pix_med_refund_requests (id, report_id, amount_cents, dict_status, why, dict_modified_at)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (id) DO UPDATE SET dict_status = EXCLUDED.dict_status, dict_modified_at = EXCLUDED.dict_modified_at,
                               updated_at = now(),
    (closed_at, close_result, rejection_reason, close_problem) = (
        SELECT CASE WHEN o THEN now() ELSE pix_med_refund_requests.closed_at END,
               CASE WHEN o THEN $9::text ELSE pix_med_refund_requests.close_result END,
               CASE WHEN o THEN $10::text ELSE pix_med_refund_requests.rejection_reason END,
               CASE WHEN o THEN NULL ELSE pix_med_refund_requests.close_problem END
        FROM (SELECT pix_med_refund_requests.close_sent_at IS NOT NULL AND pix_med_refund_requests.closed_at IS NULL
                     AND EXCLUDED.dict_status = 'CLOSED'
                     AND ((pix_med_refund_requests.why = 'report_disagreed' AND $7::bool)
                       OR (pix_med_refund_requests.why = 'report_cancelled' AND $8::bool)) AS o) ours)
    WHERE pix_med_refund_requests.report_id = EXCLUDED.report_id
      AND pix_med_refund_requests.dict_status = 'OPEN' AND EXCLUDED.dict_status <> 'OPEN'
RETURNING COALESCE(closed_at = now(), false)

-- name: Kept
-- The refund request $1 of report $2 as kept on its own (its status, the
-- DICT's LastModified of it), locked after its report's row (the one
-- order): the report about to take it reads whether the DICT cancelled it
-- meanwhile (keptCopy in store.go). No row: never kept. By its primary key.
SELECT dict_status, dict_modified_at FROM pix_med_refund_requests WHERE id = $1 AND report_id = $2 FOR UPDATE

-- name: Taken
-- A refund request kept on its own ($1) that its report $2 takes as the one
-- it answers (IntakeRefund): no longer on-call's.
DELETE FROM pix_med_refund_requests WHERE id = $1 AND report_id = $2

-- name: Ours
-- A report recorded not_ours whose PIX was credited since ($3 account_id,
-- $4 amount_cents, $5 credited_at, $6 return_until), on the row locked at
-- generation $2: received, due for its run at once. A cancel the DICT sent
-- meanwhile is the run's to read (it cancels before it holds).
UPDATE pix_med_reports SET
    account_id = $3, amount_cents = $4, credited_at = $5, return_until = $6, status = 'received',
    dispatch_due_at = now(), gen = gen + 1, updated_at = now()
WHERE id = $1 AND gen = $2 AND status = 'not_ours'
RETURNING *

-- name: OfPIX
-- A PIX's reports, oldest first, at most $2. Read from pix_med_reports_pix_idx.
SELECT * FROM pix_med_reports WHERE end_to_end_id = $1 ORDER BY created_at, id LIMIT $2

-- name: List
-- A page of every report, oldest first (the operators' list): $1, $2 the
-- sort key of the last row of the page before (NULL, NULL: from the
-- first), $3 at most. Read from pix_med_reports_list_idx.
SELECT * FROM pix_med_reports
WHERE (created_at, id) > (COALESCE($1::timestamptz, '-infinity'), COALESCE($2::uuid, '00000000-0000-0000-0000-000000000000'))
ORDER BY created_at, id LIMIT $3

-- name: Open
-- The gauges: the open reports, those not closed at the DICT past
-- analysis_due_at less $1 (the alert's margin before the 7 days: the
-- deadline is the DICT's close, not our analysis, so a report analysed and
-- not closed yet, its close stopped or not sent, counts; one the DICT has
-- closed or cancelled does not), the
-- centavos held (what each report's hold holds now: it fills from the
-- account's inflows, its row's held_cents is what it held when last
-- decided on; one lookup of pix_holds' key per open report), those
-- stopped at the DICT (from pix_med_reports_open_idx), and the refund
-- requests no report answers, OPEN at the DICT (few: from
-- pix_med_refund_requests_open_idx). A report that awaits a step at the
-- PSP (a bank behind a PSP: its dict_problem starts with $2,
-- 'psp_action_awaited:') is not stopped at the DICT: counted apart, with
-- the seconds since the oldest of them last changed (its cue noted:
-- nothing changes on it while it waits).
SELECT count(*),
       count(*) FILTER (WHERE m.status IN ('received', 'held', 'acknowledged', 'analysed')
                          AND m.dict_status NOT IN ('CLOSED', 'CANCELLED') AND m.analysis_due_at < now() + $1::interval),
       COALESCE(sum((SELECT h.amount_cents FROM pix_holds h WHERE h.id = m.hold_id AND h.status = 'active')), 0),
       count(*) FILTER (WHERE m.dict_problem IS NOT NULL AND NOT starts_with(m.dict_problem, $2::text)),
       (SELECT count(*) FROM pix_med_refund_requests WHERE dict_status = 'OPEN'),
       count(*) FILTER (WHERE starts_with(m.dict_problem, $2::text)),
       COALESCE(EXTRACT(EPOCH FROM now() - min(m.updated_at) FILTER (WHERE starts_with(m.dict_problem, $2::text))), 0)::float8
FROM pix_med_reports m
WHERE m.dispatch_due_at IS NOT NULL

-- name: Event
-- The report's event (pix.med.changed) in the transaction of its change:
-- $1 report id, $2 payload (eventOf in store.go, the one shape), $3
-- traceparent.
INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, traceparent)
SELECT 'pix_med_report', $1::text, 'pix.med.changed', $2::jsonb, $3

-- name: Quarantine
-- An item of the DICT's lists the doors refused for good (lister.go): $1
-- kind (report, refund), $2 its DICT id, $3 its LastModified, $4 the
-- refusal's code. Listed again (the next run's overlap) it is the same
-- row, its last_listed_at moved; first is true only the first time.
INSERT INTO pix_med_quarantine (kind, dict_id, dict_modified_at, reason) VALUES ($1, $2, $3, $4)
ON CONFLICT (kind, dict_id, dict_modified_at) DO UPDATE SET last_listed_at = now(), reason = EXCLUDED.reason
RETURNING (xmax = 0) AS first

-- name: KeptList
-- A page of the refund requests kept on their own, oldest first: $1, $2
-- the sort key of the last row of the page before (NULL, NULL: from the
-- first), $3 at most. Read from pix_med_refund_requests_created_idx.
SELECT * FROM pix_med_refund_requests
WHERE (created_at, id) > (COALESCE($1::timestamptz, '-infinity'), COALESCE($2::uuid, '00000000-0000-0000-0000-000000000000'))
ORDER BY created_at, id LIMIT $3

-- name: KeptGet
-- One refund request kept on its own, by its primary key.
SELECT * FROM pix_med_refund_requests WHERE id = $1

-- name: KeptToClose
-- The refund requests of report $1 kept on their own because it ended
-- without returning them (DISAGREED, cancelled by its reporter) and OPEN
-- at the DICT: its run closes them REJECTED as it ends (keptclose.go).
-- From pix_med_refund_requests_open_idx.
SELECT * FROM pix_med_refund_requests
WHERE report_id = $1 AND dict_status = 'OPEN' AND why IN ('report_disagreed', 'report_cancelled')
ORDER BY created_at, id

-- name: KeptMarkSent
-- Marks the close of the kept refund request $1 as about to be sent: from
-- now on it may have been done, and is read back before it is sent again.
-- Only while OPEN and not closed by us (no row: it moved, nothing is sent).
-- By its primary key.
UPDATE pix_med_refund_requests SET close_sent_at = COALESCE(close_sent_at, now()), updated_at = now()
WHERE id = $1 AND dict_status = 'OPEN' AND closed_at IS NULL
RETURNING *

-- name: KeptClosed
-- Our close of the kept refund request $1, answered (or read back) as we
-- sent it: $2 result, $3 rejection reason, $4 the DICT's LastModified of
-- it (NULL: not said). Once: a request closed by us already, or CANCELLED
-- at the DICT, is left as it is (no row). A row the lister moved to CLOSED
-- first (our close, listed) still records that the close was ours. By its
-- primary key.
UPDATE pix_med_refund_requests
SET dict_status = 'CLOSED', closed_at = now(), close_result = $2, rejection_reason = $3, close_problem = NULL,
    dict_modified_at = GREATEST(dict_modified_at, $4), updated_at = now()
WHERE id = $1 AND closed_at IS NULL AND dict_status <> 'CANCELLED'
RETURNING *

-- name: KeptSeen
-- The kept refund request $1 read back moved at the DICT otherwise than by
-- our close ($2 CANCELLED by its requester, or CLOSED another way: $4
-- dict_not_as_ours): its status, as the intake's copy would move it, out of
-- OPEN only ($3 the DICT's LastModified). No row: moved already. By its
-- primary key.
UPDATE pix_med_refund_requests SET dict_status = $2, dict_modified_at = $3, close_problem = $4, updated_at = now()
WHERE id = $1 AND dict_status = 'OPEN'
RETURNING *

-- name: KeptProblem
-- Why the close of the kept refund request $1 could not be made ($2, a
-- code), while it is OPEN and not closed by us (no row: it moved). By its
-- primary key.
UPDATE pix_med_refund_requests SET close_problem = $2, updated_at = now()
WHERE id = $1 AND dict_status = 'OPEN' AND closed_at IS NULL
RETURNING *
