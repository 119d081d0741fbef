package dbtest

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
)

// ServiceRole is the tests' service role (docs/operations.md, "The
// database's roles"): the template's migrations grant it what the service
// needs (db.GrantTo), so every test's schema has its grants. A role is the
// cluster's, not a database's: it is made once, by the first test process
// that needs it, and shared (it owns nothing, so it is never dropped).
const ServiceRole = "pix_test_service"

// asServiceEnv, set to 1, makes New (and URL) connect as ServiceRole,
// not as the schema's owner: the service's paths run by the tests as the
// service runs them. A test that changes the schema itself (DDL) fails
// so.
const asServiceEnv = "PIX_TEST_AS_SERVICE"

// ensureServiceRole creates ServiceRole unless it exists, with LOGIN and
// nothing else.
func ensureServiceRole(ctx context.Context) error {
	admin, err := pgx.Connect(ctx, BaseURL())
	if err != nil {
		return fmt.Errorf("connect to the test database %s: %w", BaseURL(), err)
	}
	defer admin.Close(ctx)
	var exists bool
	if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, ServiceRole).Scan(&exists); err != nil || exists {
		return err
	}
	_, err = admin.Exec(ctx, "CREATE ROLE "+pgx.Identifier{ServiceRole}.Sanitize()+" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT")
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "42710" || pgErr.Code == "23505") {
		return nil // another test process made it meanwhile
	}
	if err != nil {
		return fmt.Errorf("create the tests' service role %s: %w", ServiceRole, err)
	}
	return nil
}

// serviceRole makes ServiceRole once a process.
var serviceRole = sync.OnceValue(func() error { return ensureServiceRole(context.Background()) })

// AsService is u (a URL of URL or EmptyURL) connecting as ServiceRole
// (made if need be: an EmptyURL's schema is granted it by db.Migrate with
// db.GrantTo(ServiceRole)).
func AsService(t testing.TB, u string) string {
	t.Helper()
	require.NoError(t, serviceRole(), "the tests' service role")
	parsed, err := neturl.Parse(u)
	require.NoError(t, err)
	parsed.User = neturl.User(ServiceRole)
	return parsed.String()
}

// asService says whether New connects as ServiceRole (asServiceEnv).
func asService() bool { return os.Getenv(asServiceEnv) == "1" }

// NewAsService returns two Stores on one fresh schema for t: as its owner
// (the migrator) and as ServiceRole, whatever asServiceEnv says.
func NewAsService(t testing.TB) (owner, service *db.Store) {
	t.Helper()
	u := ownerURL(t)
	ctx := context.Background()
	ownerPool, err := db.Open(ctx, u, 4)
	require.NoError(t, err)
	t.Cleanup(ownerPool.Close)
	servicePool, err := db.Open(ctx, AsService(t, u), 10)
	require.NoError(t, err)
	t.Cleanup(servicePool.Close)
	return db.NewStore(ownerPool), db.NewStore(servicePool)
}
