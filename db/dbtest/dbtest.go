package dbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	neturl "net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
)

// BaseURL is the test database: PIX_TEST_DATABASE_URL, else the local
// server's "test" database.
func BaseURL() string {
	if u := os.Getenv("PIX_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

var unsafeChars = regexp.MustCompile(`[^a-z0-9_]+`)

// URL creates a fresh, migrated schema for t and returns a connection URL
// whose search_path is that schema. The schema lives in a database of its
// own, a copy of the migrated template (template.go): the same catalog
// the migrations make, without running them for each test. The database is
// made ahead and dropped after the test, beside the tests (copies.go). The
// URL connects as the schema's owner, or as ServiceRole with
// PIX_TEST_AS_SERVICE=1 (roles.go).
func URL(t testing.TB) string {
	t.Helper()
	u := ownerURL(t)
	if asService() {
		return AsService(t, u)
	}
	return u
}

// ownerURL is URL connecting as the schema's owner.
func ownerURL(t testing.TB) string {
	t.Helper()
	skipInShort(t)
	ctx := context.Background()
	template, err := migratedTemplate(ctx)
	require.NoError(t, err, "the migrated template database on %s", BaseURL())
	schema := schemaName(t)
	name, u, err := copyTemplate(ctx, template, schema)
	require.NoError(t, err, "copy the migrated template database %s", template)
	if err := failedDrops(); err != nil {
		// The test whose copy it was ended: the run fails still, as it did
		// when each test dropped its own.
		t.Errorf("an earlier test's database could not be dropped (did it leave a prepared transaction, or a session?): %v", err)
	}
	t.Cleanup(func() {
		testDatabases.CompareAndDelete(t, u)
		if err := dropCopy(context.Background(), name, t.Name()); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	testDatabases.LoadOrStore(t, u)
	su, err := db.SchemaURL(u, schema)
	require.NoError(t, err)
	return su
}

// EmptyURL creates a fresh schema for t, not migrated, and returns a
// connection URL whose search_path is that schema: where the migrations
// run, their bookkeeping tables included. The schema is made in the
// database of t's first URL, if it has one (so that a test may copy rows
// from its migrated schema into this one), else in the test database; it
// is dropped at cleanup.
func EmptyURL(t testing.TB) string {
	t.Helper()
	skipInShort(t)
	ctx := context.Background()
	schema := schemaName(t)
	where, inTestDatabase := BaseURL(), false
	if u, ok := testDatabases.Load(t); ok {
		where, inTestDatabase = u.(string), true
	}
	admin, err := pgx.Connect(ctx, where)
	require.NoError(t, err, "connect to the test database %s", where)
	_, err = admin.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize())
	require.NoError(t, err)
	require.NoError(t, admin.Close(ctx))
	if !inTestDatabase { // else dropped with its database
		t.Cleanup(func() {
			ctx := context.Background()
			admin, err := pgx.Connect(ctx, where)
			if err != nil {
				t.Errorf("drop schema %s: %v", schema, err)
				return
			}
			defer admin.Close(ctx)
			if _, err := admin.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
				t.Errorf("drop schema %s: %v", schema, err)
			}
		})
	}
	u, err := db.SchemaURL(where, schema)
	require.NoError(t, err)
	return u
}

// schemaName is a new name for a schema of t: t_, its
// name's first 40 letters, digits and underscores, and a random suffix.
func schemaName(t testing.TB) string {
	name := unsafeChars.ReplaceAllString(strings.ToLower(t.Name()), "_")
	if len(name) > 40 {
		name = name[:40]
	}
	return "t_" + name + "_" + randomHex(4)
}

// New returns a Store on a fresh schema for t; the pool closes at cleanup
// (before the schema is dropped).
func New(t testing.TB) *db.Store {
	t.Helper()
	u := URL(t)
	pool, err := db.Open(context.Background(), u, 10)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return db.NewStore(pool)
}

// NewClockBehind is New whose database's clock runs behind the process's
// by behind: in every statement of the Store's sessions, now() and
// statement_timestamp() (db.Now's) are PostgreSQL's less behind (functions
// of those names in a schema its search_path names before pg_catalog;
// column defaults, bound to PostgreSQL's when
// their table was made, keep its own). It stands for a worker whose clock
// runs ahead of the database's (NTP broken): the process's clock can't be
// moved, and the code under test may read it anywhere. A negative behind
// puts the database's clock ahead (a worker whose clock runs behind).
func NewClockBehind(t testing.TB, behind time.Duration) *db.Store {
	t.Helper()
	u := ownerURL(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, u)
	require.NoError(t, err)
	defer func() { require.NoError(t, admin.Close(ctx)) }()
	_, err = admin.Exec(ctx, fmt.Sprintf(`CREATE SCHEMA clock_behind;
CREATE FUNCTION clock_behind.now() RETURNS timestamptz LANGUAGE sql STABLE
AS $$ SELECT pg_catalog.now() - interval '%[1]d microseconds' $$;
CREATE FUNCTION clock_behind.statement_timestamp() RETURNS timestamptz LANGUAGE sql STABLE
AS $$ SELECT pg_catalog.statement_timestamp() - interval '%[1]d microseconds' $$;
GRANT USAGE ON SCHEMA clock_behind TO %[2]s`, behind.Microseconds(), pgx.Identifier{ServiceRole}.Sanitize()))
	require.NoError(t, err)
	parsed, err := neturl.Parse(u)
	require.NoError(t, err)
	schema := parsed.Query().Get("search_path")
	u, err = db.SchemaURL(u, schema+",clock_behind,pg_catalog")
	require.NoError(t, err)
	if asService() {
		u = AsService(t, u)
	}
	pool, err := db.Open(ctx, u, 10)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return db.NewStore(pool)
}

// NewWithAccount is New with account id opened with opening as its
// balance (OpenAccount): most tests' first lines.
func NewWithAccount(t testing.TB, id string, opening int64) *db.Store {
	t.Helper()
	s := New(t)
	OpenAccount(t, s, id, opening)
	return s
}

// randomHex is n random bytes in hex (crypto/rand.Read never fails).
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// skipInShort skips a test of the integration tier under -short: the unit
// tier (go test -short ./...) runs with no PostgreSQL and no Temporal.
func skipInShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration tier: needs PostgreSQL (run without -short)")
	}
}

// WaitBlockedBy waits (10 s at most) until a session waits for a lock
// that the session of backend pid holds (pg_blocking_pids): a test that
// steps two transactions by hand orders them so, not by sleeping.
func WaitBlockedBy(t testing.TB, s *db.Store, pid uint32) {
	t.Helper()
	require.Eventually(t, func() bool {
		var waits bool
		require.NoError(t, s.Pool().QueryRow(context.Background(),
			`SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid)))`, pid).Scan(&waits))
		return waits
	}, 10*time.Second, 2*time.Millisecond, "no session waited for a lock of backend %d", pid)
}
