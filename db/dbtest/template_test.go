package dbtest

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// createDatabases creates the databases names, dropped at cleanup unless
// gone, and returns whether one exists.
func createDatabases(t *testing.T, admin *pgx.Conn, names ...string) (exists func(name string) bool) {
	t.Helper()
	ctx := context.Background()
	for _, name := range names {
		_, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, dropDatabase(context.Background(), name)) })
	}
	return func(name string) bool {
		var ok bool
		require.NoError(t, admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&ok))
		return ok
	}
}

// A template of other migrations is dropped once no process holds its
// in-use lock and it is old enough; the current one, one in use, and one
// made too lately stay. The names are this test's own (pattern), so that
// it never drops the templates of the tests running beside it.
func TestStaleTemplatesAreDroppedUnlessInUse(t *testing.T) {
	skipInShort(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, BaseURL())
	require.NoError(t, err)
	defer admin.Close(ctx)
	prefix := "pix_dbtest_stale_" + randomHex(4)
	pattern := "^" + prefix + "_[a-z]+$"
	stale, current := prefix+"_old", prefix+"_current"
	exists := createDatabases(t, admin, stale, current)
	anyAge := -time.Minute // made now: older than a minute in the future

	user, err := lockInUse(ctx, stale)
	require.NoError(t, err)
	require.NoError(t, dropStaleTemplates(ctx, admin, pattern, current, anyAge))
	require.True(t, exists(stale), "in use by a process")
	// The process ends (unlocked first: a closed session's locks go only
	// once the server has seen it leave).
	_, err = user.Exec(ctx, `SELECT pg_advisory_unlock_shared($1, hashtext($2))`, templateInUseClass, stale)
	require.NoError(t, err)
	require.NoError(t, user.Close(ctx))

	require.NoError(t, dropStaleTemplates(ctx, admin, pattern, current, time.Hour))
	require.True(t, exists(stale), "made within the hour")

	require.NoError(t, dropStaleTemplates(ctx, admin, pattern, current, anyAge))
	require.False(t, exists(stale), "unused and old enough")
	require.True(t, exists(current), "the current template stays")
}

// The copies a process left (its spare, its drops waiting, when it ended)
// are dropped by another once no session of the cluster holds their
// token's lock and they were made long enough ago; a living process's
// (its lock held on a session to another database of the cluster: a
// checkout with another PIX_TEST_DATABASE_URL), an ended process's made
// lately (its session may have died under a process that lives) and the
// sweeper's own stay. The names are this test's own (pattern), so that it
// never drops the copies of the tests running beside it.
func TestLeftoverCopiesOfEndedProcessesAreSwept(t *testing.T) {
	ctx := context.Background()
	admin, prefix, pattern := sweepFixture(t)
	living, ended, own := randomHex(8), randomHex(8), randomHex(8)
	now := time.Now()
	old, lately := now.Add(-3*time.Hour).Unix(), now.Add(-10*time.Minute).Unix()
	name := func(token string, made int64, n int) string {
		return fmt.Sprintf("%s_%s_%d_%d", prefix, token, made, n)
	}
	otherDatabase := prefix + "_other"
	exists := createDatabases(t, admin, name(living, old, 1), name(ended, old, 1), name(ended, old, 2),
		name(ended, lately, 3), name(own, old, 1), otherDatabase)
	otherURL, err := databaseURL(otherDatabase)
	require.NoError(t, err)
	process, err := pgx.Connect(ctx, otherURL)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, process.Close(ctx)) }) // before otherDatabase's drop
	var locked bool
	require.NoError(t, process.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, hashtext($2))`, processClass, living).Scan(&locked))
	require.True(t, locked)

	require.NoError(t, sweepLeftovers(ctx, pattern, own, 2*time.Hour, now))
	require.True(t, exists(name(living, old, 1)), "its process lives")
	require.False(t, exists(name(ended, old, 1)), "its process ended")
	require.False(t, exists(name(ended, old, 2)), "its process ended")
	require.True(t, exists(name(ended, lately, 3)), "made lately")
	require.True(t, exists(name(own, old, 1)), "the sweeper's own")
}

// A leftover copy that fails to be dropped (here a template: PostgreSQL
// refuses) is reported, and the sweep drops the others still.
func TestSweepGoesOnPastAFailedDrop(t *testing.T) {
	ctx := context.Background()
	admin, prefix, pattern := sweepFixture(t)
	old := time.Now().Add(-3 * time.Hour).Unix()
	token := randomHex(8) // one token: its copies are dropped in order
	stuck := fmt.Sprintf("%s_%s_%d_1", prefix, token, old)
	other := fmt.Sprintf("%s_%s_%d_2", prefix, token, old)
	exists := createDatabases(t, admin, stuck, other)
	_, err := admin.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{stuck}.Sanitize()+" IS_TEMPLATE true")
	require.NoError(t, err)
	t.Cleanup(func() { // before its drop
		require.NoError(t, exec(ctx, BaseURL(), "ALTER DATABASE "+pgx.Identifier{stuck}.Sanitize()+" IS_TEMPLATE false"))
	})

	require.ErrorContains(t, sweepLeftovers(ctx, pattern, randomHex(8), time.Hour, time.Now()), stuck)
	require.True(t, exists(stuck))
	require.False(t, exists(other), "dropped past the failed drop")
}

// sweepFixture is a session to the test database (closed at cleanup,
// after the databases' drops), and the prefix and the pattern (groups:
// token, unix seconds) of a sweep test's own copies.
func sweepFixture(t *testing.T) (admin *pgx.Conn, prefix string, pattern *regexp.Regexp) {
	t.Helper()
	skipInShort(t)
	admin = connect(t, BaseURL())
	prefix = "pix_tsweep_" + randomHex(4)
	return admin, prefix, regexp.MustCompile("^" + prefix + "_([0-9a-f]{16})_([0-9]{10})_[0-9]+$")
}

// connect is a session to url, closed at cleanup.
func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) }) // closed already by a test at times
	return conn
}

// The template's name changes with what this package makes it with: the
// service role granted and the schema migrated.
func TestTemplateNameHashesTheRoleAndTheSchema(t *testing.T) {
	base, err := templateNameOf(ServiceRole, templateSchema)
	require.NoError(t, err)
	current, err := templateName()
	require.NoError(t, err)
	require.Equal(t, base, current)
	otherRole, err := templateNameOf(ServiceRole+"_2", templateSchema)
	require.NoError(t, err)
	otherSchema, err := templateNameOf(ServiceRole, templateSchema+"_2")
	require.NoError(t, err)
	require.NotEqual(t, base, otherRole, "another service role")
	require.NotEqual(t, base, otherSchema, "another schema")
}
