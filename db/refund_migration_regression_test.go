package db_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
)

// forgetMigrations makes s's schema as it was before the migration of that
// version: the changes of it and of every later one undone by undo, and
// the runner's records of them gone (goose applies no version below the
// newest applied).
func forgetMigrations(t *testing.T, s *db.Store, version int, undo string) {
	t.Helper()
	ctx := context.Background()
	_, err := s.Pool().Exec(ctx, undo)
	require.NoError(t, err)
	for _, table := range []string{"goose_db_version WHERE version_id", "migration_checksums WHERE version"} {
		_, err = s.Pool().Exec(ctx, `DELETE FROM `+table+` >= $1`, version)
		require.NoError(t, err)
	}
}

// undo0012 is the schema before 0012 (and the migrations after it).
const undo0012 = `ALTER TABLE pix_refunds DROP COLUMN psp_asked_at; DROP INDEX inbox_messages_pending_received_idx;
	ALTER TABLE inbox_messages DROP COLUMN traceparent; ALTER TABLE pix_transfers DROP COLUMN traceparent;
	ALTER TABLE pix_refunds DROP COLUMN traceparent; ALTER TABLE outbox_events DROP COLUMN traceparent;
	DROP TABLE psp_catchup; ALTER TABLE pix_refunds DROP COLUMN psp_refused_at, DROP COLUMN psp_refusal; ` + undo0017

// undo0017 is the schema before 0017, and the migrations after it (a new
// migration adds its undo here, and its name to afterwards).
const undo0017 = `ALTER TABLE pix_refunds DROP COLUMN psp_asks; DROP TABLE pix_scheduled CASCADE; DROP INDEX inbox_messages_failed_order_idx;
	DROP INDEX pix_transfer_refunds_account_idx; DROP INDEX pix_refund_reversals_account_idx; DROP INDEX pix_refunds_contradicted_idx;
	DROP VIEW account_movements; DROP TABLE reconcile_checkpoint, reconcile_settled, reconcile_runs;
	DROP FUNCTION refuse_movement_change() CASCADE; ALTER TABLE pix_credits DROP COLUMN xact_id; ALTER TABLE pix_transfers DROP COLUMN xact_id;
	ALTER TABLE pix_transfer_refunds DROP COLUMN xact_id; ALTER TABLE pix_refunds DROP COLUMN xact_id;
	ALTER TABLE pix_refund_reversals DROP COLUMN xact_id; DROP TABLE pix_holds; ALTER TABLE accounts DROP COLUMN held_cents;
	CREATE VIEW account_movements (account_id, amount_cents, kind, ref) AS
	    SELECT account_id, amount_cents, 'pix_credit', end_to_end_id FROM pix_credits
	    UNION ALL SELECT account_id, -amount_cents, 'pix_transfer', id::text FROM pix_transfers
	    UNION ALL SELECT account_id, amount_cents, 'pix_transfer_refund', transfer_id::text FROM pix_transfer_refunds
	    UNION ALL SELECT account_id, -amount_cents, 'pix_refund', id FROM pix_refunds
	    UNION ALL SELECT account_id, amount_cents, 'pix_refund_reversal', refund_id FROM pix_refund_reversals`

// afterwards are the migrations after 0017, which the tests below apply
// again.
var afterwards = []string{"0018_pix_scheduled.sql", "0019_inbox_failed_list_index.sql", "0020_pix_scheduled_status_index.sql",
	"0021_transfer_refunds_account_index.sql", "0022_refund_reversals_account_index.sql", "0023_refund_contradictions_index.sql",
	"0024_reconcile_checkpoint.sql", "0025_credits_xact_index.sql", "0026_transfers_xact_index.sql", "0027_transfer_refunds_xact_index.sql",
	"0028_refunds_xact_index.sql", "0029_refund_reversals_xact_index.sql", "0030_holds.sql"}

// Found by the fourth attack review: psp_asked_at was once appended to the
// committed migration 0011, so a database that had applied 0011 before
// never got the column, and every devolução's saga failed before its PUT,
// for ever (42703). 0011 is back as first committed and the column comes
// in 0012: such a database gets it.
func TestDatabaseWithoutPSPAskedAtGetsIt(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	openAccount(t, s, "acc-1", 0)
	e2e := creditPIX(t, s, 1, "acc-1", 10_000)
	r, err := refund(s, e2e, 1_000, anyone)
	require.NoError(t, err)
	// The schema 0011 as first committed left.
	forgetMigrations(t, s, 12, undo0012)

	applied, err := db.Migrate(ctx, s.Pool())
	require.NoError(t, err)
	require.Equal(t, append([]string{"0012_refund_psp_asked_at.sql", "0013_inbox_oldest_pending_index.sql", "0014_trace_context.sql", "0015_psp_catchup.sql",
		"0016_refund_psp_refusal.sql", "0017_refund_psp_asks.sql"}, afterwards...), applied)
	_, err = s.MarkRefundAsked(ctx, r.ID)
	require.NoError(t, err, "the saga's first statement runs")
}

// Found by the fourth attack review: a refund whose saga ran before
// psp_asked_at existed (its PUTs possibly sent, their answers lost:
// debited, no rtr_id) must not read as never asked after the upgrade, or a
// refusal of the next PUT would pass every check and reverse a devolução
// the PSP may have made. 0012 counts every refund there was as asked.
func TestRefundsOpenAtTheUpgradeCountAsAsked(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	openAccount(t, s, "acc-1", 0)
	e2e := creditPIX(t, s, 1, "acc-1", 10_000)
	r, err := refund(s, e2e, 1_000, anyone)
	require.NoError(t, err)
	_, err = s.Pool().Exec(ctx, `UPDATE pix_refunds SET dispatched_at = now() - interval '1 hour' WHERE id = $1`, r.ID)
	require.NoError(t, err)
	forgetMigrations(t, s, 12, undo0012)

	_, err = db.Migrate(ctx, s.Pool())
	require.NoError(t, err)
	first, err := s.MarkRefundAsked(ctx, r.ID)
	require.NoError(t, err)
	require.False(t, first, "a refund that existed at the upgrade counts as asked: a refusal of its next PUT needs a human (activities.RequestRefund)")
}

// A refund asked before psp_asks existed counts its one known ask: a
// refusal recorded after the upgrade stands, and stops standing at the
// next ask, as for a refund asked after it (without the count, that ask
// would count as the only one, and the refusal would stand on a PUT that
// may have made the devolução). A refusal recorded before the upgrade may
// have been recorded late, after another attempt's PUT, which nothing
// traced: it counts two and does not stand (a human looks; found by the
// third attack review).
func TestRefundsAskedBeforeTheAskCountCountOne(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	openAccount(t, s, "acc-1", 0)
	e2e := creditPIX(t, s, 1, "acc-1", 10_000)
	asked, err := refund(s, e2e, 1_000, anyone)
	require.NoError(t, err)
	refused, err := refund(s, e2e, 2_000, anyone)
	require.NoError(t, err)
	forgetMigrations(t, s, 17, undo0017)
	// As the release before 0017 recorded them: the first refund's first
	// ask; the second's first ask and a refusal.
	_, err = s.Pool().Exec(ctx, `UPDATE pix_refunds SET psp_asked_at = now() WHERE id = $1`, asked.ID)
	require.NoError(t, err)
	_, err = s.Pool().Exec(ctx, `UPDATE pix_refunds SET psp_asked_at = now(), psp_refused_at = now(), psp_refusal = 'PixDevolucaoInvalida' WHERE id = $1`, refused.ID)
	require.NoError(t, err)

	applied, err := db.Migrate(ctx, s.Pool())
	require.NoError(t, err)
	require.Equal(t, append([]string{"0017_refund_psp_asks.sql"}, afterwards...), applied)

	_, stands, err := s.StandingRefusal(ctx, refused.ID)
	require.NoError(t, err)
	require.False(t, stands, "a refusal recorded before asks were counted may have followed another PUT")
	_, err = s.ReverseRefund(ctx, refused.ID, "refused", true)
	require.ErrorIs(t, err, pix.ErrRefundFinal, "reversed on a refusal that may have followed a second PUT")

	recorded, err := s.MarkRefundRefused(ctx, asked.ID, "PixDevolucaoInvalida")
	require.NoError(t, err)
	require.True(t, recorded, "one ask known: its refusal is recorded")
	_, stands, err = s.StandingRefusal(ctx, asked.ID)
	require.NoError(t, err)
	require.True(t, stands, "one ask known: the refusal stands")
	first, err := s.MarkRefundAsked(ctx, asked.ID)
	require.NoError(t, err)
	require.False(t, first)
	_, stands, err = s.StandingRefusal(ctx, asked.ID)
	require.NoError(t, err)
	require.False(t, stands, "asked again after the refusal")
	require.EqualValues(t, 10_000-1_000-2_000, balance(t, s, "acc-1"))
}
