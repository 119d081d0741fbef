package dbtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

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
	for _, name := range []string{stale, current} {
		_, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, dropDatabase(context.Background(), name)) })
	}
	exists := func(name string) bool {
		var ok bool
		require.NoError(t, admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&ok))
		return ok
	}
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
