-- The cautionary blocks of db/plans' fixture (planFixture runs this file after
-- db/plans/testdata/fixture.sql, in its session: its helpers and holds are there).
-- A cautionary block (saga/block) per hold of a block: active while its
-- hold is, returned when it was captured, released (expired) otherwise.
INSERT INTO pix_blocks (id, end_to_end_id, account_id, hold_id, amount_cents, reason, status, end_cause, expires_at,
                        refund_id, requested_by, created_at, updated_at, ended_at, dispatch_due_at, dispatched_at)
SELECT md5('blk' || i)::uuid, pg_temp.e(i * 9), pg_temp.acc(i * 9), md5('hold' || i)::uuid, 100, 'suspeita de fraude',
       CASE WHEN i > 19800 THEN 'active' WHEN i % 2 = 0 THEN 'returned' ELSE 'released' END,
       CASE WHEN i > 19800 THEN NULL WHEN i % 2 = 0 THEN 'returned' ELSE 'expired' END,
       now() - (20000 - i) * interval '10 minutes' + interval '72 hours',
       CASE WHEN i <= 19800 AND i % 2 = 0 THEN 'D' || (i / 2) END, 'operator-1',
       now() - (20000 - i) * interval '10 minutes', now(),
       CASE WHEN i <= 19800 THEN now() - (20000 - i) * interval '10 minutes' + interval '1 hour' END,
       CASE WHEN i > 19800 THEN now() END, CASE WHEN i > 19800 THEN now() END
FROM generate_series(1, 20000) i;
