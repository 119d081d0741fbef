-- +goose Up
-- +goose NO TRANSACTION
-- The final devoluções whose latest PSP notice says otherwise than their
-- status (refunds.sql Contradictions, a check of every reconciliation):
-- without this index the check read every devolução there is; with it,
-- only the contradicted ones, which the index holds alone (normally none).
-- Its predicate is the statement's condition, word for word, so that the
-- planner proves the index serves it: change both together.
--
-- Built CONCURRENTLY (docs/extending.md, "An index on a busy table").
DROP INDEX CONCURRENTLY IF EXISTS pix_refunds_contradicted_idx;
CREATE INDEX CONCURRENTLY pix_refunds_contradicted_idx ON pix_refunds (id)
    WHERE (status = 'returned' AND psp_notice = 'NAO_REALIZADO') OR (status = 'reversed' AND psp_notice = 'DEVOLVIDO');
