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
// where migrating a schema took about 1 s, most of it the migrations' DDL)
// and renames the copy's schema to the test's. The template is named by
// what made it (templateName), so a changed or new migration makes a new
// one, and checkouts and test processes with the same
// migrations share it; it is built once, under an advisory lock, under a
// temporary name and renamed when complete, so nobody copies half of one.
// The migrations' own tests (EmptyURL, db.Migrate over it) still run them.

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
}

// migratedTemplate is the name of the migrated template database, built
// by the first test of the process that needs it unless it exists.
func migratedTemplate(ctx context.Context) (string, error) {
	template.once.Do(func() { template.name, template.err = ensureTemplate(ctx) })
	return template.name, template.err
}

// templateName names the template by what makes it: the embedded
// migrations (their names and SQL), the runner's own statements
// (migrate.sql: its bookkeeping) and goose's version.
func templateName() (string, error) {
	ms, err := db.Migrations()
	if err != nil {
		return "", err
	}
	h := sha256.New()
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

func ensureTemplate(ctx context.Context) (string, error) {
	name, err := templateName()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, BaseURL())
	if err != nil {
		return "", fmt.Errorf("connect to the test database %s: %w", BaseURL(), err)
	}
	defer admin.Close(context.WithoutCancel(ctx))
	// pg_try_advisory_lock, polled: a session waiting inside
	// pg_advisory_lock holds a snapshot, which a concurrent index build in
	// the test database would wait for.
	for {
		var locked bool
		if err := admin.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, templateLockKey).Scan(&locked); err != nil {
			return "", fmt.Errorf("the template's lock: %w", err)
		}
		if locked {
			break
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("the template's lock: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	defer admin.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, templateLockKey) //nolint:errcheck // the session closes just after
	var exists bool
	if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	building := name + "_building"
	// An interrupted build's leftover.
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{building}.Sanitize()+" WITH (FORCE)"); err != nil {
		return "", err
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{building}.Sanitize()); err != nil {
		return "", err
	}
	if err := migrateTemplate(ctx, building); err != nil {
		return "", err
	}
	// No connection to it but a copy's (autovacuum's aside, which a copy
	// stops): nothing writes into the template.
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{building}.Sanitize()+" WITH ALLOW_CONNECTIONS false"); err != nil {
		return "", err
	}
	err = retryInUse(ctx, func() error {
		_, err := admin.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{building}.Sanitize()+" RENAME TO "+pgx.Identifier{name}.Sanitize())
		return err
	})
	return name, err
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
	if _, err := db.Migrate(ctx, pool); err != nil {
		return fmt.Errorf("migrate the template: %w", err)
	}
	return nil
}

// copyTemplate creates database name as a copy of template, its schema
// renamed to name; it returns the new database's URL.
func copyTemplate(ctx context.Context, template, name string) (string, error) {
	admin, err := pgx.Connect(ctx, BaseURL())
	if err != nil {
		return "", fmt.Errorf("connect to the test database %s: %w", BaseURL(), err)
	}
	err = retryInUse(ctx, func() error {
		_, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE "+pgx.Identifier{template}.Sanitize())
		return err
	})
	admin.Close(ctx)
	if err != nil {
		return "", err
	}
	u, err := databaseURL(name)
	if err != nil {
		return "", err
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "ALTER SCHEMA "+templateSchema+" RENAME TO "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", err
	}
	return u, nil
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
