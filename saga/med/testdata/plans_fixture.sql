-- The MED reports of db/plans' fixture (planFixture runs this file after
-- db/plans/testdata/fixture.sql, in its session: its helpers are there).
-- A report (saga/med) per 9th PIX: ended (released, returned or
-- cancelled) but the last 200, open; a few not ours.
INSERT INTO pix_med_reports (id, end_to_end_id, account_id, amount_cents, credited_at, reporter, infraction_type,
                             reported_by, dict_status, dict_modified_at, reported_at, status, end_cause,
                             analysis_due_at, return_until, created_at, updated_at, ended_at, dispatch_due_at, dispatched_at)
SELECT md5('med' || i)::uuid, pg_temp.e(i * 9),
       CASE WHEN i % 100 = 0 THEN NULL ELSE pg_temp.acc(i * 9) END,
       CASE WHEN i % 100 = 0 THEN NULL ELSE 100 END,
       CASE WHEN i % 100 = 0 THEN NULL ELSE now() - (20000 - i) * interval '10 minutes' END,
       '99999999', 'FRAUD', 'DEBITED_PARTICIPANT', 'ACKNOWLEDGED',
       now() - (20000 - i) * interval '10 minutes', now() - (20000 - i) * interval '10 minutes',
       CASE WHEN i % 100 = 0 THEN 'not_ours' WHEN i > 19800 THEN 'acknowledged' ELSE 'ended' END,
       CASE WHEN i % 100 = 0 OR i > 19800 THEN NULL WHEN i % 3 = 0 THEN 'returned' WHEN i % 3 = 1 THEN 'released' ELSE 'cancelled' END,
       now() - (20000 - i) * interval '10 minutes' + interval '7 days',
       CASE WHEN i % 100 = 0 THEN NULL ELSE now() - (20000 - i) * interval '10 minutes' + interval '90 days' END,
       now() - (20000 - i) * interval '10 minutes', now(),
       CASE WHEN i % 100 <> 0 AND i <= 19800 THEN now() - (20000 - i) * interval '10 minutes' + interval '1 hour' END,
       CASE WHEN i % 100 <> 0 AND i > 19800 THEN now() END, CASE WHEN i % 100 <> 0 AND i > 19800 THEN now() END
FROM generate_series(1, 20000) i;

-- The refund requests no report answers (pix_med_refund_requests): one per
-- report, closed at the DICT but the last few. As many as the reports: with
-- 400 rows the table was four pages, and a scan of it cost about what the
-- partial index's lookup does, so the planner chose either from one run to
-- the next (the Open gauges' count, seen as a Seq Scan once); it grows with
-- the reports in production.
INSERT INTO pix_med_refund_requests (id, report_id, amount_cents, dict_status, why)
SELECT md5('med-request' || i)::uuid, md5('med' || i)::uuid, 100,
       CASE WHEN i > 19950 THEN 'OPEN' ELSE 'CLOSED' END, 'report_ended'
FROM generate_series(1, 20000) i;

-- The quarantine of the DICT's lists (pix_med_quarantine): a row per 10th
-- report, as if none were ever cleared.
INSERT INTO pix_med_quarantine (kind, dict_id, dict_modified_at, reason)
SELECT CASE WHEN i % 20 = 0 THEN 'refund' ELSE 'report' END, md5('med' || i)::uuid::text,
       now() - (20000 - i) * interval '10 minutes', 'dict_malformed:Status'
FROM generate_series(10, 20000, 10) i;

-- The runs stopped on a quarantined item (pix_med_quarantine_stops): a
-- row per 20th report, stale or not, as if none were ever replaced.
INSERT INTO pix_med_quarantine_stops (report_id, kind, dict_id, dict_modified_at, gen)
SELECT md5('med' || i)::uuid, 'refund', md5('med-request' || i)::uuid::text, now() - (20000 - i) * interval '10 minutes', 1
FROM generate_series(20, 20000, 20) i;
