package db_test

import (
	"context"
	"errors"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
)

// migrationLock is the advisory lock every build's migrator takes turns on:
// one per schema, its name hashed with the key of the runner before goose.
// Written out here, not taken from the code: a build deployed beside the
// one before it (a rolling deploy, both running pixd migrate at once) must
// take the same lock, or both would migrate the schema at once.
const migrationLock = `hashtextextended(current_schema(), 7368237001)`

// holdMigrationLock takes the schema's migration lock (url's search_path)
// on a session of its own, as another migrator would, until the returned
// release is called (or the test ends).
func holdMigrationLock(t *testing.T, url string) (release func()) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `SELECT pg_advisory_lock(`+migrationLock+`)`)
	require.NoError(t, err)
	released := false
	release = func() {
		if !released {
			released = true
			require.NoError(t, conn.Close(ctx)) // the session's locks end with it
		}
	}
	t.Cleanup(release)
	return release
}

// migrationLockFree is whether a session could take the schema's migration
// lock at once (and gives it back).
func migrationLockFree(t *testing.T, url string) bool {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var free bool
	require.NoError(t, conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(`+migrationLock+`)`).Scan(&free))
	return free
}

// A migrator that finds the schema's lock held waits for it, and migrates
// once it is released; the migrators of another schema don't wait for it.
func TestMigrateWaitsForTheSchemasLock(t *testing.T) {
	ctx := context.Background()
	url := dbtest.EmptyURL(t)
	release := holdMigrationLock(t, url)

	done := make(chan error, 1)
	go func() {
		_, err := db.MigrateWithin(ctx, openPool(t, url), time.Minute)
		done <- err
	}()
	// Another schema migrates meanwhile.
	_, err := db.Migrate(ctx, openPool(t, dbtest.EmptyURL(t)))
	require.NoError(t, err, "another schema's lock is another lock")
	select {
	case err := <-done:
		t.Fatalf("migrated while another migrator held the lock: %v", err)
	case <-time.After(1500 * time.Millisecond):
	}
	var tables int
	require.NoError(t, openPool(t, url).QueryRow(ctx,
		`SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()`).Scan(&tables))
	require.Zero(t, tables, "the waiting migrator touched the schema")

	release()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("still waiting 30 s after the lock was released")
	}
	require.True(t, migrationLockFree(t, url), "the migrator left the lock held")
}

// A migrator gives up after its wait, unavailable (whatever started it
// starts it again), saying that another migrator kept it waiting.
func TestMigrateGivesUpAfterItsWait(t *testing.T) {
	ctx := context.Background()
	url := dbtest.EmptyURL(t)
	holdMigrationLock(t, url)

	start := time.Now()
	_, err := db.MigrateWithin(ctx, openPool(t, url), time.Second)
	took := time.Since(start)
	require.Error(t, err)
	require.ErrorIs(t, err, pix.ErrUnavailable)
	require.ErrorContains(t, err, "migration lock")
	require.ErrorContains(t, err, "another migrator")
	require.GreaterOrEqual(t, took, time.Second, "gave up before its wait")
	require.Less(t, took, 5*time.Second, "waited well past its wait")
}

// The lock is released whatever ends the run: a migration that fails, a
// build refused, a caller that gives up.
func TestMigrationLockIsReleasedOnError(t *testing.T) {
	ctx := context.Background()

	t.Run("a migration fails", func(t *testing.T) {
		url := dbtest.EmptyURL(t)
		_, err := db.MigrateFS(ctx, openPool(t, url), fstest.MapFS{
			"0001_ok.sql":  {Data: []byte("-- +goose Up\nCREATE TABLE ok (id int);\n")},
			"0002_bad.sql": {Data: []byte("-- +goose Up\nSELECT 1 / 0;\n")},
		})
		require.ErrorContains(t, err, "0002_bad.sql")
		require.True(t, migrationLockFree(t, url))
	})

	t.Run("the build is refused", func(t *testing.T) {
		url := dbtest.EmptyURL(t)
		pool := openPool(t, url)
		_, err := db.MigrateFS(ctx, pool, fstest.MapFS{"0001_a.sql": {Data: []byte("-- +goose Up\nCREATE TABLE a (id int);\n")}})
		require.NoError(t, err)
		_, err = db.MigrateFS(ctx, pool, fstest.MapFS{"0001_a.sql": {Data: []byte("-- +goose Up\nCREATE TABLE a (id bigint);\n")}})
		require.ErrorIs(t, err, db.ErrMigrationsRefused)
		require.True(t, migrationLockFree(t, url))
	})

	t.Run("the caller gives up while it waits", func(t *testing.T) {
		url := dbtest.EmptyURL(t)
		release := holdMigrationLock(t, url)
		waitCtx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := db.MigrateWithin(waitCtx, openPool(t, url), time.Minute)
		require.True(t, errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled), "%v", err)
		require.Less(t, time.Since(start), 5*time.Second, "the caller's end was not heard")
		release()
		require.True(t, migrationLockFree(t, url))
	})
}
