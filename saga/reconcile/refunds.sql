-- The reconciliation's check of the devoluções' final statuses against the
-- PSP's latest notices (Contradictions). The file's name is kept from
-- db/queries/refunds.sql, where it was, so that traces still say
-- refunds.Contradictions.

-- name: Contradictions
-- For the reconciliation: final refunds whose latest PSP notice says
-- otherwise than their status.
SELECT id FROM pix_refunds
WHERE (status = 'returned' AND psp_notice = 'NAO_REALIZADO') OR (status = 'reversed' AND psp_notice = 'DEVOLVIDO')
ORDER BY id
