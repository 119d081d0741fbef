package db

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migration is one numbered file of migrations/.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations returns the embedded migrations in version order.
func Migrations() ([]Migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, fmt.Errorf("read embedded migrations: %w", err)
	}
	var out []Migration
	for _, e := range entries {
		name := e.Name()
		num, _, ok := strings.Cut(name, "_")
		if !ok || !strings.HasSuffix(name, ".sql") {
			return nil, fmt.Errorf("migration %q: want NNNN_name.sql", name)
		}
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("migration %q: version: %w", name, err)
		}
		body, err := migrationFiles.ReadFile("migrations/" + name)
		if err != nil {
			return nil, fmt.Errorf("read migration %q: %w", name, err)
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("two migrations with version %d", out[i].Version)
		}
	}
	return out, nil
}

// migrateSQL holds the statements of queries/migrate.sql.
var migrateSQL struct{ Lock, Unlock, CreateTable, IsApplied, RecordApplied string }

func init() { bindQueries("migrate.sql", &migrateSQL) }

// migrationLockKey serialises concurrent migrators (several processes
// starting at once) on one advisory lock.
const migrationLockKey = 7_368_237_001

// Migrate applies every embedded migration not yet applied, each in its own
// transaction, into the schema the connection's search_path names. It returns
// the names of the migrations it applied.
func Migrate(ctx context.Context, pool *pgxpool.Pool) ([]string, error) {
	migrations, err := Migrations()
	if err != nil {
		return nil, err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, classify(fmt.Errorf("acquire connection: %w", err))
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, migrateSQL.Lock, migrationLockKey); err != nil {
		return nil, classify(fmt.Errorf("take migration lock: %w", err))
	}
	defer conn.Exec(context.WithoutCancel(ctx), migrateSQL.Unlock, migrationLockKey) //nolint:errcheck // the lock dies with the session anyway

	if _, err := conn.Exec(ctx, migrateSQL.CreateTable); err != nil {
		return nil, classify(fmt.Errorf("create schema_migrations: %w", err))
	}
	var applied []string
	for _, m := range migrations {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			var exists bool
			if err := tx.QueryRow(ctx, migrateSQL.IsApplied, m.Version).Scan(&exists); err != nil {
				return err
			}
			if exists {
				return nil
			}
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, migrateSQL.RecordApplied, m.Version, m.Name); err != nil {
				return err
			}
			applied = append(applied, m.Name)
			return nil
		})
		if err != nil {
			return applied, classify(fmt.Errorf("apply migration %s: %w", m.Name, err))
		}
	}
	return applied, nil
}
