package app

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/config"
)

// appOn is an App on cfg's DATABASE_URL with only what Migrate and
// checkServiceRole use, its log in the buffer returned.
func appOn(t *testing.T, cfg config.Config) (*App, *bytes.Buffer) {
	t.Helper()
	pool, err := db.Open(context.Background(), cfg.DatabaseURL, 4)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	var logs bytes.Buffer
	return &App{Cfg: cfg, Log: slog.New(slog.NewJSONHandler(&logs, nil)), Store: db.NewStore(pool)}, &logs
}

// One URL for the migrations and the service: the tables' owner serves,
// which pixd migrate and the service's start say at WARN (docs/
// operations.md, "The database's roles"). Two: the migrations grant the
// service role, which owns nothing, and nothing is said at WARN.
func TestOneRoleIsSaidAtWarn(t *testing.T) {
	ctx := context.Background()
	one, logs := appOn(t, config.Config{DatabaseURL: dbtest.EmptyURL(t)})
	require.NoError(t, one.Migrate(ctx))
	require.Contains(t, logs.String(), `"level":"WARN","msg":"the service and the migrations run as one database role`)
	logs.Reset()
	require.NoError(t, one.checkServiceRole(ctx))
	require.Contains(t, logs.String(), `"level":"WARN","msg":"the service and the migrations run as one database role`)

	u := dbtest.EmptyURL(t)
	two, logs := appOn(t, config.Config{MigrateDatabaseURL: u, DatabaseURL: dbtest.AsService(t, u)})
	require.NoError(t, two.Migrate(ctx))
	require.NotContains(t, logs.String(), `"level":"WARN"`)
	require.Contains(t, logs.String(), `"service_role":"`+dbtest.ServiceRole+`"`)
	require.NoError(t, two.checkServiceRole(ctx))
	require.NotContains(t, logs.String(), `"level":"WARN"`)
	require.Contains(t, logs.String(), `"msg":"the service's database role owns nothing of the books","db_role":"`+dbtest.ServiceRole+`"`)
	_, err := two.Store.Pool().Exec(ctx, `SELECT count(*) FROM accounts`)
	require.NoError(t, err, "the service reads what it needs")
	_, err = two.Store.Pool().Exec(ctx, `ALTER TABLE accounts DISABLE TRIGGER accounts_opening_fixed`)
	require.ErrorContains(t, err, "must be owner of table accounts")
	report, err := two.MigrationStatus(ctx)
	require.NoError(t, err)
	require.Empty(t, report.Pending())
}

// Two roles, and a service role that owns nothing of the books but could
// take their fences down all the same: CREATE in the schema, the schema's
// owner (it drops any function of it). pixd migrate refuses to grant it,
// the api and the worker to start (checkServiceRole's error stops them),
// naming what it holds. (The database's owner, a member of
// pg_database_owner, and CREATEROLE are the same query's: not made here,
// on the tests' shared database and role.)
func TestTwoRolesRefuseAServiceRoleThatCouldTakeTheFencesDown(t *testing.T) {
	ctx := context.Background()
	u := dbtest.EmptyURL(t)
	two, _ := appOn(t, config.Config{MigrateDatabaseURL: u, DatabaseURL: dbtest.AsService(t, u)})
	require.NoError(t, two.Migrate(ctx))
	owner, err := db.Open(ctx, u, 2)
	require.NoError(t, err)
	t.Cleanup(owner.Close)
	var schema, me string
	require.NoError(t, owner.QueryRow(ctx, `SELECT quote_ident(current_schema()), current_user`).Scan(&schema, &me))
	for _, c := range []struct{ grant, undo, said string }{
		{`GRANT CREATE ON SCHEMA ` + schema + ` TO ` + dbtest.ServiceRole, `REVOKE CREATE ON SCHEMA ` + schema + ` FROM ` + dbtest.ServiceRole,
			"may CREATE in the schema "},
		{`ALTER SCHEMA ` + schema + ` OWNER TO ` + dbtest.ServiceRole, `ALTER SCHEMA ` + schema + ` OWNER TO ` + me,
			"owns the schema "},
	} {
		_, err := owner.Exec(ctx, c.grant)
		require.NoError(t, err, c.grant)
		err = two.Migrate(ctx)
		require.ErrorIs(t, err, errUnfenced, c.grant)
		require.ErrorContains(t, err, c.said)
		err = two.checkServiceRole(ctx)
		require.ErrorIs(t, err, errUnfenced, c.grant)
		require.ErrorContains(t, err, c.said)
		_, err = owner.Exec(ctx, c.undo)
		require.NoError(t, err, c.undo)
	}
	require.NoError(t, two.Migrate(ctx))
	require.NoError(t, two.checkServiceRole(ctx))
}
