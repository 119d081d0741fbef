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
// are dropped by another once no process holds their token's lock; a
// living process's and the sweeper's own stay. The names are this test's
// own (pattern), so that it never drops the copies of the tests running
// beside it.
func TestLeftoverCopiesOfEndedProcessesAreSwept(t *testing.T) {
	skipInShort(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, BaseURL())
	require.NoError(t, err)
	defer admin.Close(ctx)
	prefix := "pix_tsweep_" + randomHex(4)
	pattern := regexp.MustCompile("^" + prefix + "_([0-9a-f]{16})_[0-9]+$")
	living, ended, own := randomHex(8), randomHex(8), randomHex(8)
	name := func(token string, n int) string { return fmt.Sprintf("%s_%s_%d", prefix, token, n) }
	exists := createDatabases(t, admin, name(living, 1), name(ended, 1), name(ended, 2), name(own, 1))
	process, err := pgx.Connect(ctx, BaseURL())
	require.NoError(t, err)
	defer process.Close(ctx)
	var locked bool
	require.NoError(t, process.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, hashtext($2))`, processClass, living).Scan(&locked))
	require.True(t, locked)

	require.NoError(t, sweepLeftovers(ctx, pattern, own))
	require.True(t, exists(name(living, 1)), "its process lives")
	require.False(t, exists(name(ended, 1)), "its process ended")
	require.False(t, exists(name(ended, 2)), "its process ended")
	require.True(t, exists(name(own, 1)), "the sweeper's own")
}
