-- +goose Up
-- One function builds every pix.hold.* event's payload (issue 36, one
-- piece of code per idea): each hold statement of db/queries/holds.sql
-- (Hold, Release, Capture, Fill, Shrink, CapturePart, Restore) wrote again
-- the keys every hold event has (internal/broker/schemas/pix.hold.*.json)
-- and the account's available balance as its balance less its held; they
-- now call pix_hold_event with the hold as it is after the statement's
-- change, the account's held and balance just after it, and the event's
-- own keys. The payloads are unchanged (db's hold tests and the e2e event
-- tests check them against their schemas).
--
-- Only a function is added: the statements of the release before do not
-- call it and keep working while both releases run; the new release's
-- statements call it once this migration ran (pixd migrate runs before
-- the new workers start). Nothing to undo on a rollback: the release
-- before never calls it. It reads nothing but its arguments: no table's
-- lock is taken, the type pix_holds is only referenced; CREATE OR REPLACE
-- runs twice alike. SQL, not plpgsql, and no SET clause, so that the
-- planner inlines it into each statement. STABLE, as jsonb_build_object
-- is.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION pix_hold_event(h pix_holds, held_after_cents bigint, balance_after_cents bigint, extra jsonb)
RETURNS jsonb LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT jsonb_build_object('schema_version', 1, 'hold_id', h.id, 'ref', h.ref, 'account_id', h.account_id,
                              'end_to_end_id', h.end_to_end_id, 'kind', h.kind, 'amount_cents', h.amount_cents,
                              'held_after_cents', held_after_cents,
                              'available_after_cents', balance_after_cents - held_after_cents)
           || extra
$$;
-- +goose StatementEnd
