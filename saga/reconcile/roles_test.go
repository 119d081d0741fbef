package reconcile_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
)

// deniedTo requires s to be refused sql with the SQLSTATE code.
func deniedTo(t *testing.T, s *db.Store, code, sql string) {
	t.Helper()
	_, err := s.Pool().Exec(context.Background(), sql)
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "%s: want refused, got %v", sql, err)
	require.Equal(t, code, pgErr.Code, "%s: %s", sql, pgErr.Message)
}

// The service role (docs/operations.md, "The database's roles") owns
// nothing: whatever the design says only the tables' owner can do to the
// fences of the books, it can't. No ALTER of a table, no trigger turned
// off, dropped or made, no function replaced, no table made, no
// TRUNCATE, no delete of the settled sums or write of the migrations'
// bookkeeping, no reset of the books' count, no session_replication_role.
// Its own paths run: a credit, a devolução, the reconciliation's runs.
func TestTheServiceRoleCannotTakeTheFencesDown(t *testing.T) {
	owner, svc := dbtest.NewAsService(t)
	var who string
	require.NoError(t, svc.Pool().QueryRow(context.Background(), `SELECT current_user`).Scan(&who))
	require.Equal(t, dbtest.ServiceRole, who)
	roles, err := svc.ServiceRole(context.Background())
	require.NoError(t, err)
	require.Equal(t, db.Roles{User: dbtest.ServiceRole, Owner: false, Migrated: true, Powers: []string{}}, roles)
	ownerRoles, err := owner.ServiceRole(context.Background())
	require.NoError(t, err)
	require.True(t, ownerRoles.Owner, "the migrator owns the books")

	dbtest.OpenAccount(t, svc, "acc-1", 100_000)
	credited := dbtest.CreditPIX(t, svc, dbtest.PIX{AccountID: "acc-1", AmountCents: 5_000})
	_, err = refund(t, svc, credited.EndToEndID, 1_000, anyone)
	require.NoError(t, err)
	r := reconcileSettled(t, svc)
	require.True(t, r.Balanced(), "%+v", r)
	require.Equal(t, []string{}, r.FencesDown)

	for _, sql := range []string{
		`ALTER TABLE pix_credits DISABLE TRIGGER pix_credits_append_only`,
		`ALTER TABLE reconcile_settled DISABLE TRIGGER USER`,
		`ALTER TABLE pix_refunds ENABLE REPLICA TRIGGER pix_refunds_no_delete`,
		`DROP TRIGGER reconcile_checkpoint_guard ON reconcile_checkpoint`,
		`ALTER TABLE accounts ADD COLUMN later int`,
		`ALTER TABLE accounts OWNER TO ` + dbtest.ServiceRole,
		`DROP TABLE reconcile_settled`,
		`CREATE OR REPLACE FUNCTION refuse_movement_change() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$`,
		`CREATE OR REPLACE FUNCTION reconcile_fences(OUT down text[], OUT seen text, OUT seen_before_0064 text) LANGUAGE sql AS $$ SELECT '{}'::text[], 'x', 'x' $$`,
		`ALTER FUNCTION reconcile_settled_fence() RESET search_path`,
		`CREATE FUNCTION let_through() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$`,
		`CREATE TABLE pix_other_movements (account_id text, amount_cents bigint)`,
		`CREATE TRIGGER let_through BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION refuse_opening_change()`,
		`TRUNCATE reconcile_settled`,
		`TRUNCATE pix_credits`,
		`DELETE FROM reconcile_settled`,
		`INSERT INTO reconcile_checkpoint (id) VALUES (false)`,
		`DELETE FROM goose_db_version`,
		`UPDATE migration_checksums SET sha256 = 'x'`,
		`SELECT reconcile_reset()`,
		`SELECT pix_secure('` + dbtest.ServiceRole + `')`,
		`SET session_replication_role = replica`,
	} {
		deniedTo(t, svc, "42501", sql)
	}
	r = reconcileOK(t, svc)
	require.True(t, r.Balanced() && r.Fenced(), "%+v", r)
}

// What the service role may write of the reconciliation's own (it is the
// run), past 0024's guard (pix.reconcile, which any role may set), is
// what the database can check (0064): a settled sum inserted is its
// account's movements; the digest of the fences is the catalog's; a
// settling happens once a transaction; and a temporary table (which any
// role may make) does not stand in for the books in a fence's reading.
// The same writes by the owner, past 0064 (its triggers dropped, its
// functions unpinned), go through: 0064 is what refuses them.
func TestTheServiceRoleCannotWritePastTheGuard(t *testing.T) {
	ctx := context.Background()
	owner, svc := dbtest.NewAsService(t)
	dbtest.OpenAccount(t, svc, "acc-1", 100_000)
	dbtest.CreditNth(t, svc, 1, "acc-1", 1_000)
	reconcileSettled(t, svc)
	dbtest.CreditNth(t, svc, 2, "acc-2", 2_000) // acc-2: not counted yet
	waitSettleable(t, svc)

	forgeries := func(s *db.Store, uncounted string, refused bool) {
		t.Helper()
		try := func(tx pgx.Tx, sql string, args ...any) {
			t.Helper()
			if refused {
				refusedIn(t, tx, sql, args...)
				return
			}
			_, err := tx.Exec(ctx, sql, args...)
			require.NoError(t, err, sql)
		}
		asTheRun(t, s, pgx.RepeatableRead, func(tx pgx.Tx) {
			try(tx, `UPDATE reconcile_checkpoint SET fences_seen = md5('a fence toggled between two runs, hidden')`)
			try(tx, `UPDATE reconcile_checkpoint SET fences_seen = NULL`)
			try(tx, `INSERT INTO reconcile_settled (account_id, settled_cents) VALUES ($1, 2000000)`, uncounted)
			// The books as a temporary table says: acc-1 has 1,000,000 more
			// from the checkpoint on, the account not counted 2,000,000 in
			// all.
			_, err := tx.Exec(ctx, `CREATE TEMP TABLE account_movements ON COMMIT DROP AS
				SELECT 'acc-1'::text AS account_id, 1000000::bigint AS amount_cents, settled_before AS xact_id FROM reconcile_checkpoint
				UNION ALL SELECT $1, 2000000, NULL`, uncounted)
			require.NoError(t, err)
			try(tx, `UPDATE reconcile_settled SET settled_cents = settled_cents + 1000000 WHERE account_id = 'acc-1'`)
			try(tx, `INSERT INTO reconcile_settled (account_id, settled_cents) VALUES ($1, 2000000) ON CONFLICT (account_id) DO NOTHING`, uncounted)
		})
	}
	forgeries(svc, "acc-2", true)
	r := reconcileSettled(t, svc)
	require.True(t, r.Balanced(), "%+v", r)
	require.Equal(t, []string{}, r.FencesDown)
	require.Zero(t, queryInt64(t, svc, settledWrong))

	// Past 0064: its triggers dropped and its pins undone by the owner,
	// the same writes go through (rolled back).
	dbtest.CreditNth(t, svc, 3, "acc-3", 3_000)
	waitSettleable(t, svc)
	for _, sql := range []string{
		`DROP TRIGGER reconcile_checkpoint_seen ON reconcile_checkpoint`,
		`DROP TRIGGER reconcile_settled_counted ON reconcile_settled`,
		`ALTER FUNCTION reconcile_settled_fence() RESET search_path`,
	} {
		_, err := owner.Pool().Exec(ctx, sql)
		require.NoError(t, err, sql)
	}
	forgeries(svc, "acc-3", false)
}

// waitSettleable waits (a minute at most) until a movement is above the
// checkpoint and below the snapshots' xmin: a transaction of another
// test of the server may hold the xmin back a while.
func waitSettleable(t *testing.T, s *db.Store) {
	t.Helper()
	require.Eventually(t, func() bool {
		return queryInt64(t, s, `SELECT count(*) FROM account_movements
			WHERE xact_id >= (SELECT settled_before FROM reconcile_checkpoint) AND xact_id < pg_snapshot_xmin(pg_current_snapshot())`) > 0
	}, time.Minute, 50*time.Millisecond, "a movement settleable within a minute")
}

// A movement's transaction is the one that inserts it, whatever the
// writer says (H2): xact_id written NULL (a movement from before 0024),
// far in the past or in the future would keep it out of every run's
// window of new movements, seen by the rotating recount alone. A credit
// written past the balance, with any xact_id, is flagged by the next run.
func TestTheServiceRoleCannotPickAMovementsTransaction(t *testing.T) {
	ctx := context.Background()
	_, svc := dbtest.NewAsService(t)
	dbtest.OpenAccount(t, svc, "acc-1", 0)
	reconcileSettled(t, svc)
	for i, forged := range []string{"NULL", "'1'::xid8", "'9000000000000000000'::xid8"} {
		var stamped, own pgtype.Text
		require.NoError(t, pgx.BeginFunc(ctx, svc.Pool(), func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, `INSERT INTO pix_credits (end_to_end_id, account_id, amount_cents, balance_after_cents, xact_id)
				VALUES ($1, 'acc-1', 700, 700, `+forged+`) RETURNING xact_id::text, pg_current_xact_id()::text`, dbtest.E2EID(i+1)).Scan(&stamped, &own)
		}), forged)
		require.Equal(t, own, stamped, "xact_id written %s", forged)
	}
	r := reconcileSettled(t, svc)
	require.False(t, r.Balanced(), "a credit past the balance: %+v", r)
}

// The service role deletes only from the tables it deletes from (the
// retention's, an Idempotency-Key's lock, the MED's requests and
// quarantine, the scheduled PIX's cancel wakes): not an account (deleted
// with no movements and inserted again, it would open with another
// balance), not a movement. And what the schema grants PUBLIC is revoked
// at every migrate (pix_secure): a grant of the owner's to every role, and
// EXECUTE on the functions, PostgreSQL's default.
func TestTheServiceRoleDeletesOnlyWhatItDeletes(t *testing.T) {
	ctx := context.Background()
	owner, svc := dbtest.NewAsService(t)
	dbtest.OpenAccount(t, svc, "acc-empty", 0)
	dbtest.CreditNth(t, svc, 1, "acc-1", 1_000)
	denied := []string{
		`DELETE FROM accounts WHERE id = 'acc-empty'`,
		`DELETE FROM pix_credits`,
		`DELETE FROM pix_transfers`,
		`DELETE FROM pix_refunds`,
		`DELETE FROM pix_keys`,
		`TRUNCATE inbox_messages`,
	}
	for _, sql := range denied {
		deniedTo(t, svc, "42501", sql)
	}
	_, err := svc.Pool().Exec(ctx, `DELETE FROM idempotency_keys WHERE false`)
	require.NoError(t, err, "the service deletes an Idempotency-Key's lock")

	_, err = owner.Pool().Exec(ctx, `GRANT ALL ON accounts, pix_keys TO PUBLIC`)
	require.NoError(t, err)
	_, err = db.Migrate(ctx, owner.Pool(), db.GrantTo(dbtest.ServiceRole))
	require.NoError(t, err)
	for _, sql := range denied {
		deniedTo(t, svc, "42501", sql)
	}
	require.Zero(t, queryInt64(t, owner, `SELECT count(*) FROM pg_class c CROSS JOIN aclexplode(c.relacl) a
		WHERE c.relnamespace = current_schema()::regnamespace AND a.grantee = 0`), "a grant to PUBLIC on a relation")
	require.Zero(t, queryInt64(t, owner, `SELECT count(*) FROM pg_proc p CROSS JOIN aclexplode(COALESCE(p.proacl, acldefault('f', p.proowner))) a
		WHERE p.pronamespace = current_schema()::regnamespace AND a.grantee = 0`), "EXECUTE of PUBLIC on a function")
	r := reconcileSettled(t, svc)
	require.True(t, r.Balanced(), "%+v", r)
}
