package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// The database's roles (docs/operations.md, "The database's roles"): a
// migrator that owns the schema and runs pixd migrate, and the service
// role the api and the worker connect as, which owns nothing. The fences
// of the books (docs/design.md, "The reconciliation") are triggers: a lock
// against a writer that does not own them, not against their owner, who
// can turn them off. Migration 0064 makes the service's grants
// (pix_secure), which Migrate applies after every migration (GrantTo).

// MigrateOption is an option of Migrate.
type MigrateOption func(*migrateOptions)

type migrateOptions struct {
	// service: the service role granted, "" none.
	service string
}

// GrantTo names the service role the migrations grant to: what the api
// and the worker need of the schema, no more (pix_secure, migration 0064).
// A role that is the migrating one, or "", is granted nothing: the one
// role owns everything (ServiceRole says so at start).
func GrantTo(role string) MigrateOption {
	return func(o *migrateOptions) { o.service = role }
}

// secure pins the schema's functions and grants the service role its
// privileges, under the migration lock (concurrent GRANTs of one object
// fail: "tuple concurrently updated"), when the migrations made
// pix_secure.
func (r runner) secure(ctx context.Context, service string) error {
	var role *string
	if service != "" {
		role = &service
	}
	return r.locked(ctx, func(conn *sql.Conn) error {
		var can bool
		if err := conn.QueryRowContext(ctx, migrateSQL.CanSecure).Scan(&can); err != nil || !can {
			return err
		}
		if _, err := conn.ExecContext(ctx, migrateSQL.Secure, role); err != nil {
			return fmt.Errorf("secure the schema for the service role %q: %w", service, err)
		}
		return nil
	})
}

// Roles is a role (a session's, or the one the migrations grant to) and
// whether it owns the books (a superuser, or a member of the tables'
// owner), or holds what else takes their fences down.
type Roles struct {
	// User is the role's name: the session's current_user, or the one
	// asked of RoleOf.
	User string
	// Owner: it may ALTER the tables, turn their triggers off, replace
	// their functions: the fences are not a lock against it.
	Owner bool
	// Migrated: the schema has the books (else Owner says only whether
	// it is a superuser).
	Migrated bool
	// Powers: what else it holds that takes the fences down, said as
	// "owns the schema public (a member of pg_database_owner)": the
	// schema's or the database's owner (it drops any function of the
	// schema, the fences' too), CREATEROLE (it grants itself the
	// migrator), CREATE in the schema. Empty for a service role as
	// docs/operations.md makes it.
	Powers []string
}

// Fenced says whether the fences of the books are a lock against the
// role: it neither owns them nor holds any of Powers.
func (r Roles) Fenced() bool { return !r.Owner && len(r.Powers) == 0 }

var rolesSQL struct{ Owner string }

func init() { bindQueries("roles.sql", &rolesSQL) }

// ServiceRole says which role the store's sessions are, and whether it
// owns the books: the service's role should not (docs/operations.md, "The
// database's roles").
func (s *Store) ServiceRole(ctx context.Context) (Roles, error) {
	return s.roleOf(ctx, nil)
}

// RoleOf says of role what ServiceRole says of the session's: pixd
// migrate asks it of the service role it grants to.
func (s *Store) RoleOf(ctx context.Context, role string) (Roles, error) {
	return s.roleOf(ctx, &role)
}

func (s *Store) roleOf(ctx context.Context, role *string) (Roles, error) {
	var r Roles
	if err := s.pool.QueryRow(ctx, rolesSQL.Owner, role).Scan(&r.User, &r.Owner, &r.Migrated, &r.Powers); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			if role != nil {
				return r, fmt.Errorf("the database role %q: no such role", *role)
			}
			return r, errors.New("the session's role: current_user is no role of pg_roles")
		}
		return r, Classify(fmt.Errorf("the session's role: %w", err))
	}
	return r, nil
}
