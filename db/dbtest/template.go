package dbtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	neturl "net/url"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pixbank/pix/db"
)

// A test's migrated schema is a copy of a template database: the
// migrations run once into the template's schema, then each URL copies the
// database (CREATE DATABASE ... TEMPLATE, a copy of its files: about 0.2 s,
// where migrating a schema took about 1 s, most of it the migrations' DDL;
// made ahead by the process's copier, copies.go) and renames the copy's
// schema to the test's. The template is named by
// what made it (templateName), so a changed or new migration makes a new
// one, and checkouts and test processes with the same
// migrations share it; it is built once, under an advisory lock, under a
// temporary name and renamed when complete, so nobody copies half of one.
// The migrations' own tests (EmptyURL, db.Migrate over it) still run them.
//
// Templates of other migrations (another hash) are dropped, so that they
// do not pile up as the migrations change, but never one in use: each
// test process holds, on a session that lives as long as it does, a shared
// advisory lock on its template's name (templateInUseClass, the name's
// hashtext) from before it looks for the template; the builder, after
// ensuring its own (under the builders' lock), drops each other template
// (and each other _building leftover) whose exclusive lock it gets at
// once, i.e. that no living process uses, and that was made more than
// staleTemplateAge ago (its files' age: processes of a version of this
// package before the lock, which take none, still run on a template of
// the day's migrations; and a template just made by a process that has
// not locked it yet is spared). A process that finds its template dropped
// before it locked it builds it again. What fails to be dropped stays, for
// the next build to try: the tests do not fail for it.

// templateInUseClass is the first key of the advisory locks that say a
// template is in use (the second: hashtext of its name). A two-key lock
// is another lock than templateLockKey's one-key lock.
const templateInUseClass = 7_368

// staleTemplateAge is how old a template of other migrations, unused, must
// be to be dropped.
const staleTemplateAge = 24 * time.Hour

// templatePattern matches the names of templates (and of their builds).
const templatePattern = `^pix_dbtest_[0-9a-f]{16}(_building)?$`

// templateSchema is the migrated schema in the template, renamed in each
// copy.
const templateSchema = "dbtest_template"

// templateLockKey is the advisory lock the template's builders take turns
// on (in the test database).
const templateLockKey = 7_368_237_002

// testDatabases holds the database of each test's first URL (a URL
// string), where its EmptyURL schemas go.
var testDatabases sync.Map

var template struct {
	once sync.Once
	name string
	err  error
	// inUse holds the template's in-use lock until the process ends
	// (never closed: the session ends with the process).
	inUse *pgx.Conn
}

// migratedTemplate is the name of the migrated template database, built
// by the first test of the process that needs it unless it exists; the
// process holds its in-use lock from before it looks for it.
func migratedTemplate(ctx context.Context) (string, error) {
	template.once.Do(func() {
		name, err := templateName()
		if err == nil {
			err = serviceRole()
		}
		if err == nil {
			template.inUse, err = lockInUse(ctx, name)
		}
		if err == nil {
			err = ensureTemplate(ctx, name)
		}
		template.name, template.err = name, err
	})
	return template.name, template.err
}

// lockInUse takes the shared in-use lock of template name on a session of
// its own, which it returns.
func lockInUse(ctx context.Context, name string) (*pgx.Conn, error) {
	conn, err := pgx.Connect(ctx, BaseURL())
	if err != nil {
		return nil, fmt.Errorf("connect to the test database %s: %w", BaseURL(), err)
	}
	if err := pollLock(ctx, conn, `SELECT pg_try_advisory_lock_shared($1, hashtext($2))`, templateInUseClass, name); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("the template's in-use lock: %w", err)
	}
	return conn, nil
}

// pollLock runs try (a pg_try_advisory_lock* of args) until it locks:
// polled, as a session waiting inside pg_advisory_lock holds a snapshot,
// which a concurrent index build in the test database would wait for.
func pollLock(ctx context.Context, conn *pgx.Conn, try string, args ...any) error {
	for {
		var locked bool
		if err := conn.QueryRow(ctx, try, args...).Scan(&locked); err != nil {
			return err
		}
		if locked {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// templateName names the template by what makes it: the embedded
// migrations (their names and SQL), the runner's own statements
// (migrate.sql: its bookkeeping, and the grants), goose's version, and
// this package's side (templateNameOf).
func templateName() (string, error) {
	return templateNameOf(ServiceRole, templateSchema)
}

// templateNameOf is templateName of a template whose migrations ran into
// schema, granting service its privileges (db.GrantTo): another role or
// schema makes another template.
func templateNameOf(service, schema string) (string, error) {
	ms, err := db.Migrations()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "granted to\x00%s\x00schema\x00%s\x00", service, schema)
	for _, m := range ms {
		fmt.Fprintf(h, "%s\x00%s\x00", m.Name, m.SQL)
	}
	for _, st := range db.Statements() {
		if strings.HasPrefix(st.Name, "migrate.") {
			fmt.Fprintf(h, "%s\x00%s\x00", st.Name, st.SQL)
		}
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "github.com/pressly/goose/v3" {
				fmt.Fprintf(h, "%s\x00%s\x00", dep.Path, dep.Version)
			}
		}
	}
	return "pix_dbtest_" + hex.EncodeToString(h.Sum(nil))[:16], nil
}

// ensureTemplate builds the template name unless it exists, under the
// builders' lock, and then drops the stale templates of other migrations
// (dropStaleTemplates).
func ensureTemplate(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, BaseURL())
	if err != nil {
		return fmt.Errorf("connect to the test database %s: %w", BaseURL(), err)
	}
	defer admin.Close(context.WithoutCancel(ctx))
	if err := pollLock(ctx, admin, `SELECT pg_try_advisory_lock($1)`, templateLockKey); err != nil {
		return fmt.Errorf("the template's lock: %w", err)
	}
	defer admin.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, templateLockKey) //nolint:errcheck // the session closes just after
	if err := buildTemplate(ctx, admin, name); err != nil {
		return err
	}
	// Best effort: a template left is only disk, tried again next time.
	_ = dropStaleTemplates(ctx, admin, templatePattern, name, staleTemplateAge)
	return nil
}

// dropStaleTemplates drops each database whose name matches pattern, but
// keep, made more than age ago, whose in-use lock it gets at once (no
// process uses it): see the comment at the top of this file. It holds
// that lock while it drops, so no process starts to use it meanwhile.
func dropStaleTemplates(ctx context.Context, admin *pgx.Conn, pattern, keep string, age time.Duration) error {
	rows, err := admin.Query(ctx, `
		SELECT datname FROM pg_database
		WHERE datname ~ $1 AND datname <> $2
		  AND (pg_stat_file('base/' || oid || '/PG_VERSION')).modification < now() - make_interval(secs => $3)`,
		pattern, keep, age.Seconds())
	if err != nil {
		return fmt.Errorf("list the stale templates: %w", err)
	}
	stale, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("list the stale templates: %w", err)
	}
	for _, name := range stale {
		var unused bool
		if err := admin.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, hashtext($2))`, templateInUseClass, name).Scan(&unused); err != nil {
			return fmt.Errorf("the in-use lock of %s: %w", name, err)
		}
		if !unused {
			continue
		}
		_, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize())
		if _, unlockErr := admin.Exec(ctx, `SELECT pg_advisory_unlock($1, hashtext($2))`, templateInUseClass, name); err == nil {
			err = unlockErr
		}
		if err != nil {
			return fmt.Errorf("drop the stale template %s: %w", name, err)
		}
	}
	return nil
}

// buildTemplate builds the template name unless it exists, under the
// builders' lock (the caller's).
func buildTemplate(ctx context.Context, admin *pgx.Conn, name string) error {
	var exists bool
	if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	building := name + "_building"
	// An interrupted build's leftover.
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{building}.Sanitize()+" WITH (FORCE)"); err != nil {
		return err
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{building}.Sanitize()); err != nil {
		return err
	}
	if err := migrateTemplate(ctx, building); err != nil {
		return err
	}
	// No connection to it but a copy's (autovacuum's aside, which a copy
	// stops): nothing writes into the template.
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{building}.Sanitize()+" WITH ALLOW_CONNECTIONS false"); err != nil {
		return err
	}
	return retryInUse(ctx, func() error {
		_, err := admin.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{building}.Sanitize()+" RENAME TO "+pgx.Identifier{name}.Sanitize())
		return err
	})
}

// migrateTemplate migrates the template's schema in database name.
func migrateTemplate(ctx context.Context, name string) error {
	u, err := databaseURL(name)
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, "CREATE SCHEMA "+templateSchema)
	conn.Close(ctx)
	if err != nil {
		return err
	}
	su, err := db.SchemaURL(u, templateSchema)
	if err != nil {
		return err
	}
	pool, err := db.Open(ctx, su, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := db.Migrate(ctx, pool, db.GrantTo(ServiceRole)); err != nil {
		return fmt.Errorf("migrate the template: %w", err)
	}
	return nil
}

// copyTemplate returns a new copy of template (newCopy) with its schema
// renamed to schema: the copy's database name and URL.
func copyTemplate(ctx context.Context, template, schema string) (name, url string, err error) {
	name, err = newCopy(ctx, template)
	if err != nil {
		return "", "", err
	}
	if url, err = databaseURL(name); err != nil {
		return "", "", err
	}
	// The functions were pinned to the template's schema (0064's
	// pix_secure): pinned to the copy's. The service role's grants are
	// the template's, copied with it.
	s := pgx.Identifier{schema}.Sanitize()
	if err := exec(ctx, url, "ALTER SCHEMA "+templateSchema+" RENAME TO "+s+"; SET search_path = "+s+"; SELECT pix_secure(NULL)"); err != nil {
		return "", "", errors.Join(fmt.Errorf("rename the copy's schema and pin its functions: %w", err), dropDatabase(ctx, name))
	}
	return name, url, nil
}

// dropDatabase drops a test's database, ending the sessions still on it.
func dropDatabase(ctx context.Context, name string) error {
	admin, err := pgx.Connect(ctx, BaseURL())
	if err != nil {
		return err
	}
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	return err
}

// databaseURL is BaseURL on database name.
func databaseURL(name string) (string, error) {
	u, err := neturl.Parse(BaseURL())
	if err != nil {
		return "", fmt.Errorf("parse the test database's URL: %w", err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

// retryInUse runs f again while PostgreSQL answers that a database is in
// use (55006): a session that just closed may not have left yet.
func retryInUse(ctx context.Context, f func() error) error {
	for range 100 {
		err := f()
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "55006" {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
	return f()
}
