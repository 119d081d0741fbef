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
// warnIfOwner use, its log in the buffer returned.
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
	one.warnIfOwner(ctx)
	require.Contains(t, logs.String(), `"level":"WARN","msg":"the service and the migrations run as one database role`)

	u := dbtest.EmptyURL(t)
	two, logs := appOn(t, config.Config{MigrateDatabaseURL: u, DatabaseURL: dbtest.AsService(t, u)})
	require.NoError(t, two.Migrate(ctx))
	require.NotContains(t, logs.String(), `"level":"WARN"`)
	require.Contains(t, logs.String(), `"service_role":"`+dbtest.ServiceRole+`"`)
	two.warnIfOwner(ctx)
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
