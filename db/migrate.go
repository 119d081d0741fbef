package db

import (
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
	"github.com/pressly/goose/v3/lock"
)

// The migrations are run by goose (github.com/pressly/goose/v3, its
// Provider): each file in a transaction unless it says
// "-- +goose NO TRANSACTION", the applied versions in goose's table
// goose_db_version. Around goose, this file adds what it lacks: the
// checksum of each migration recorded when it is applied (a file that
// changed since is refused, and shown by MigrationStatus), the takeover of a
// database the earlier runner migrated (its schema_migrations), and the
// check that no concurrent index build left an INVALID index behind.

// migrationFiles hold migrations/: goose reads them from the binary.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// embeddedMigrations is migrations/ as goose reads it, the files at its
// root.
func embeddedMigrations() fs.FS {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(fmt.Sprintf("db: embedded migrations: %v", err)) // a constant, valid path
	}
	return sub
}

// Migration is one numbered file of migrations/.
type Migration struct {
	Version int64
	// Name is the file's name, NNNN_what.sql.
	Name string
	// SQL is the file as committed, goose's annotations included.
	SQL string
	// Checksum is the hex SHA-256 of the file's SQL without its
	// annotations (checksumOf).
	Checksum string
}

// Migrations returns the embedded migrations in version order.
func Migrations() ([]Migration, error) { return migrationsIn(embeddedMigrations()) }

// migrationsIn lists the migrations of fsys as goose numbers them, but
// strictly: a .sql file whose name has no version is an error here, where
// goose would skip it.
func migrationsIn(fsys fs.FS) ([]Migration, error) {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var out []Migration
	for _, name := range names {
		v, err := goose.NumericComponent(name)
		if err != nil {
			return nil, fmt.Errorf("migration %q: want NNNN_name.sql: %w", name, err)
		}
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("read migration %q: %w", name, err)
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(body), Checksum: checksumOf(string(body))})
	}
	slices.SortFunc(out, func(a, b Migration) int { return cmp.Compare(a.Version, b.Version) })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("two migrations with version %d: %s and %s", out[i].Version, out[i-1].Name, out[i].Name)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no migrations")
	}
	return out, nil
}

// isInertAnnotation reports whether line is one of the goose annotations
// that change nothing a migration does: "-- +goose Up" (the whole file is
// the Up part) and StatementBegin/End (one statement however goose would
// split it). Only these may be added to a committed file; any other (Down,
// NO TRANSACTION, ENVSUB, ...) changes what runs, or how, and counts in
// its checksum like its SQL.
func isInertAnnotation(line string) bool {
	switch strings.TrimSpace(line) {
	case "-- +goose Up", "-- +goose StatementBegin", "-- +goose StatementEnd":
		return true
	}
	return false
}

// withoutAnnotations is a migration file less its inert goose annotation
// lines: the SQL the earlier runner ran, byte for byte, for the files it
// ran.
func withoutAnnotations(file string) string {
	var b strings.Builder
	for line := range strings.Lines(file) {
		if !isInertAnnotation(line) {
			b.WriteString(line)
		}
	}
	return b.String()
}

// checksumOf is the hex SHA-256 of a migration's file, its inert
// annotations left out: annotating a committed file with them does not
// change what it does, nor its checksum.
func checksumOf(file string) string {
	sum := sha256.Sum256([]byte(withoutAnnotations(file)))
	return hex.EncodeToString(sum[:])
}

// ErrMigrationsRefused is what Migrate answers when the database and the
// build disagree about what was applied (a file changed since, a version
// the earlier runner recorded otherwise): nothing is applied, and only a
// human can mend it. pixd migrate status names the disagreement.
var ErrMigrationsRefused = errors.New("migrations refused")

// migrationLockKey is the seed of the advisory lock concurrent migrators
// of a schema take turns on: hashed with the schema's name (see LockKey in
// queries/migrate.sql). It was the key of the runner before goose.
const migrationLockKey = 7_368_237_001

// migrationLockWait bounds how long a migrator waits for the lock while
// another applies migrations (an index built concurrently on a large table
// can take minutes). A migrator that gives up fails, and is started again
// by whatever started it. goose's locker asks for the lock again every
// second (its finest period) until then.
const migrationLockWait = 15 * time.Minute

// Migrate applies every embedded migration not yet applied, into the
// schema the connection's search_path names (goose's table and the
// checksums' land there too), under the migration lock. It returns the
// names of the migrations it applied. It refuses to run when an applied
// migration's file changed since it was applied, and fails when the schema
// holds an INVALID index once it is done.
//
// Once they are applied, still under the lock, the schema is secured
// (roles.go, migration 0064's pix_secure): its functions pinned to it, and
// the service role's grants made what the service needs, no more, when
// opts name a service role (GrantTo) other than the migrating one.
func Migrate(ctx context.Context, pool *pgxpool.Pool, opts ...MigrateOption) ([]string, error) {
	return migrate(ctx, pool, embeddedMigrations(), migrationLockWait, opts...)
}

// migrate applies the migrations of fsys, waiting at most wait for the
// migration lock, and secures the schema (when fsys made pix_secure).
func migrate(ctx context.Context, pool *pgxpool.Pool, fsys fs.FS, wait time.Duration, opts ...MigrateOption) ([]string, error) {
	var o migrateOptions
	for _, opt := range opts {
		opt(&o)
	}
	files, err := migrationsIn(fsys)
	if err != nil {
		return nil, err
	}
	sqlDB := stdlib.OpenDBFromPool(pool)
	defer sqlDB.Close() // returns the connections to the pool, which stays open
	versions, err := database.NewStore(database.DialectPostgres, goose.DefaultTablename)
	if err != nil {
		return nil, fmt.Errorf("goose store: %w", err)
	}
	extended, ok := versions.(database.StoreExtender)
	if !ok {
		return nil, errors.New("goose's postgres store can't tell whether its table exists")
	}
	locker, err := newMigrationLocker(ctx, sqlDB, wait)
	if err != nil {
		return nil, Classify(err)
	}
	r := runner{db: sqlDB, versions: extended, files: files, locker: locker}
	if err := r.prepare(ctx); err != nil {
		if errors.Is(err, ErrMigrationsRefused) {
			return nil, err // a human's to mend: no retry helps
		}
		return nil, Classify(err)
	}
	provider, err := goose.NewProvider(goose.DialectCustom, sqlDB, fsys,
		goose.WithStore(checksummedStore{StoreExtender: extended, files: r.byVersion()}),
		goose.WithSessionLocker(r.locker),
		goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return nil, fmt.Errorf("goose provider: %w", err)
	}
	results, err := provider.Up(ctx)
	if partial, ok := errors.AsType[*goose.PartialError](err); ok {
		return appliedNames(partial.Applied), Classify(fmt.Errorf("apply migration %s: %w", path.Base(partial.Failed.Source.Path), partial.Err))
	}
	if err != nil {
		return nil, Classify(fmt.Errorf("migrate: %w", err))
	}
	applied := appliedNames(results)
	if err := r.secure(ctx, o.service); err != nil {
		return applied, Classify(err)
	}
	invalid, err := invalidIndexes(ctx, sqlDB)
	if err != nil {
		return applied, Classify(err)
	}
	if len(invalid) > 0 {
		return applied, fmt.Errorf("migrated, but the schema holds INVALID indexes, which no query uses (a concurrent build failed, or one is running): %s; "+
			"drop each with DROP INDEX CONCURRENTLY and run pixd migrate again (docs/extending.md)", strings.Join(invalid, ", "))
	}
	return applied, nil
}

func appliedNames(results []*goose.MigrationResult) []string {
	var names []string
	for _, r := range results {
		names = append(names, path.Base(r.Source.Path))
	}
	return names
}

// runner is one migrator's view of the database and of its build's files.
type runner struct {
	db       *sql.DB
	versions database.StoreExtender
	files    []Migration
	locker   lock.SessionLocker
}

func (r runner) byVersion() map[int64]Migration {
	m := make(map[int64]Migration, len(r.files))
	for _, f := range r.files {
		m[f.Version] = f
	}
	return m
}

// prepare does, in one transaction under the migration lock, what goose
// does not: the checksums' table; goose's table, when missing (as goose
// would create it, with its row of version 0); the takeover of a database
// the earlier runner migrated; and the refusal of a changed migration.
// goose's own Up then takes the lock again.
func (r runner) prepare(ctx context.Context) error {
	return r.locked(ctx, func(conn *sql.Conn) error { return r.prepareOn(ctx, conn) })
}

// locked runs fn on a connection of its own, holding the migration lock.
func (r runner) locked(ctx context.Context, fn func(*sql.Conn) error) (err error) {
	conn, err := r.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close()
	if err := r.locker.SessionLock(ctx, conn); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, r.locker.SessionUnlock(context.WithoutCancel(ctx), conn)) }()
	return fn(conn)
}

// prepareOn is prepare's transaction on conn, which holds the lock.
func (r runner) prepareOn(ctx context.Context, conn *sql.Conn) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // after commit this is a no-op
	if _, err := tx.ExecContext(ctx, migrateSQL.CreateChecksumTable); err != nil {
		return fmt.Errorf("create migration_checksums: %w", err)
	}
	exists, err := r.versions.TableExists(ctx, tx)
	if err != nil {
		return fmt.Errorf("look for %s: %w", r.versions.Tablename(), err)
	}
	if !exists {
		if err := r.versions.CreateVersionTable(ctx, tx); err != nil {
			return err
		}
		if err := r.versions.Insert(ctx, tx, database.InsertRequest{Version: 0}); err != nil {
			return fmt.Errorf("goose's version 0: %w", err)
		}
	}
	if err := r.adoptLegacy(ctx, tx); err != nil {
		return err
	}
	if err := r.refuseChanged(ctx, tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// adoptLegacy takes over a database the runner before goose migrated:
// each migration its schema_migrations records that goose's table lacks
// (all of them, the first time) is entered in goose's table with the time
// it was applied, and its checksum recorded (that of this build's file,
// the SQL the earlier runner ran: migrations/SHA256SUMS pins the files).
// Nothing runs again. schema_migrations is kept as it was: a binary of
// before goose that starts after the takeover finds its migrations applied
// and does nothing; one that applied a migration meanwhile (a database
// still behind it, which an orderly deploy never leaves) has it adopted by
// the next run.
func (r runner) adoptLegacy(ctx context.Context, tx *sql.Tx) error {
	var legacy bool
	if err := tx.QueryRowContext(ctx, migrateSQL.TableExists, "schema_migrations").Scan(&legacy); err != nil {
		return fmt.Errorf("look for schema_migrations: %w", err)
	}
	if !legacy {
		return nil
	}
	earlier, err := legacyApplied(ctx, tx)
	if err != nil {
		return err
	}
	tracked, err := appliedMigrations(ctx, tx)
	if err != nil {
		return err
	}
	files := r.byVersion()
	for _, m := range earlier {
		if slices.ContainsFunc(tracked, func(s MigrationState) bool { return s.Version == m.Version }) {
			continue
		}
		f, ok := files[m.Version]
		if !ok || f.Name != m.Name {
			return fmt.Errorf("%w: take over schema_migrations: it records migration %d as %s, which this build does not have", ErrMigrationsRefused, m.Version, m.Name)
		}
		if _, err := tx.ExecContext(ctx, migrateSQL.RecordChecksum, f.Version, f.Name, f.Checksum); err != nil {
			return fmt.Errorf("take over schema_migrations: checksum of %s: %w", f.Name, err)
		}
		if _, err := tx.ExecContext(ctx, migrateSQL.AdoptLegacy, m.Version, m.AppliedAt); err != nil {
			return fmt.Errorf("take over schema_migrations: %s: %w", f.Name, err)
		}
	}
	return nil
}

// refuseChanged fails when a migration's file in this build differs from
// the one that was applied: goose would not run it again, and the schema
// would not be what the file says.
func (r runner) refuseChanged(ctx context.Context, tx *sql.Tx) error {
	states, err := appliedMigrations(ctx, tx)
	if err != nil {
		return err
	}
	files := r.byVersion()
	var changed []string
	for _, s := range states {
		if f, ok := files[s.Version]; ok && s.RecordedChecksum != "" && s.RecordedChecksum != f.Checksum {
			changed = append(changed, f.Name)
		}
	}
	if len(changed) > 0 {
		return fmt.Errorf("%w: migrations changed since they were applied: %s (a committed migration is never edited; see pixd migrate status and docs/operations.md)",
			ErrMigrationsRefused, strings.Join(changed, ", "))
	}
	return nil
}

// checksummedStore is goose's store of applied versions, which also
// records the migration's checksum, on the same connection and just before
// goose records the version: in the migration's transaction, or, for one
// without, first (a crash in between leaves a checksum whose version is
// not applied, which the next run records again).
type checksummedStore struct {
	database.StoreExtender
	files map[int64]Migration
}

func (s checksummedStore) Insert(ctx context.Context, db database.DBTxConn, req database.InsertRequest) error {
	if f, ok := s.files[req.Version]; ok {
		if _, err := db.ExecContext(ctx, migrateSQL.RecordChecksum, f.Version, f.Name, f.Checksum); err != nil {
			return fmt.Errorf("record the checksum of %s: %w", f.Name, err)
		}
		// A database the earlier runner migrated keeps its schema_migrations
		// in step: a binary of before goose (a rollback) finds every
		// migration it has applied, and runs none of them again.
		var legacy bool
		if err := db.QueryRowContext(ctx, migrateSQL.TableExists, "schema_migrations").Scan(&legacy); err != nil {
			return fmt.Errorf("look for schema_migrations: %w", err)
		}
		if legacy {
			if _, err := db.ExecContext(ctx, migrateSQL.RecordLegacy, f.Version, f.Name); err != nil {
				return fmt.Errorf("record %s in schema_migrations: %w", f.Name, err)
			}
		}
	}
	return s.StoreExtender.Insert(ctx, db, req)
}

// migrationLocker is goose's PostgreSQL session locker on the schema's
// migration lock (LockKey), asking every second for at most wait; what it
// adds is said here: its failure to take the lock in our words, and a
// session that could not give the lock back closed rather than returned
// to the pool holding it (every other migrator would wait for it).
type migrationLocker struct {
	lock.SessionLocker
	wait time.Duration
}

func newMigrationLocker(ctx context.Context, db *sql.DB, wait time.Duration) (migrationLocker, error) {
	var key int64
	if err := db.QueryRowContext(ctx, migrateSQL.LockKey, migrationLockKey).Scan(&key); err != nil {
		return migrationLocker{}, fmt.Errorf("the migration lock's key: %w", err)
	}
	retries := max(1, uint64((wait+time.Second-1)/time.Second)) // a try, then one a second
	l, err := lock.NewPostgresSessionLocker(lock.WithLockID(key), lock.WithLockTimeout(1, retries), lock.WithUnlockTimeout(1, 1))
	if err != nil {
		return migrationLocker{}, fmt.Errorf("the migration lock: %w", err)
	}
	return migrationLocker{SessionLocker: l, wait: wait}, nil
}

func (l migrationLocker) SessionLock(ctx context.Context, conn *sql.Conn) error {
	if err := l.SessionLocker.SessionLock(ctx, conn); err != nil {
		return fmt.Errorf("take the migration lock, which another migrator holds while it migrates (waited at most %s): %w", l.wait, err)
	}
	return nil
}

func (l migrationLocker) SessionUnlock(ctx context.Context, conn *sql.Conn) error {
	err := l.SessionLocker.SessionUnlock(ctx, conn)
	if err == nil {
		return nil
	}
	closeErr := conn.Raw(func(driverConn any) error {
		c, ok := driverConn.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("unexpected driver connection %T", driverConn)
		}
		return c.Conn().Close(ctx)
	})
	if closeErr != nil {
		return fmt.Errorf("release the migration lock (%v): close the session: %w", err, closeErr)
	}
	return nil
}

// migrateSQL holds the statements of queries/migrate.sql.
var migrateSQL struct {
	LockKey, TableExists, CreateChecksumTable, RecordChecksum, LegacyApplied, AdoptLegacy, RecordLegacy, Applied, InvalidIndexes,
	CanSecure, Secure string
}

func init() { bindQueries("migrate.sql", &migrateSQL) }

// MigrationState is one migration as the database and the running build
// see it.
type MigrationState struct {
	Version int64
	// Name is the build's file, else (a version the build does not have)
	// the name recorded when it was applied.
	Name string
	// InBuild is whether the running build has the migration's file.
	InBuild   bool
	Applied   bool
	AppliedAt time.Time
	// Checksum is that of the build's file; RecordedChecksum that recorded
	// when the migration was applied, "" when none was (the database was
	// not taken over from the earlier runner yet).
	Checksum, RecordedChecksum string
	// LegacyName is the name the earlier runner's schema_migrations records
	// for a migration still to be taken over: pixd migrate refuses one that
	// is not the build's file's.
	LegacyName string
}

// Changed is whether the build's file differs from the one applied.
func (m MigrationState) Changed() bool {
	return m.Applied && m.InBuild && m.RecordedChecksum != "" && m.RecordedChecksum != m.Checksum
}

// MigrationReport is what MigrationStatus found.
type MigrationReport struct {
	// Migrations are the build's and those the database applied that the
	// build does not have, in version order.
	Migrations []MigrationState
	// Legacy is whether the earlier runner's schema_migrations records
	// migrations goose's table lacks: pixd migrate takes them over.
	Legacy bool
	// InvalidIndexes are the schema's indexes no query uses: left by a
	// concurrent build that failed, or being built right now.
	InvalidIndexes []string
}

// Pending are the build's migrations not applied.
func (r MigrationReport) Pending() []MigrationState {
	var out []MigrationState
	for _, m := range r.Migrations {
		if !m.Applied {
			out = append(out, m)
		}
	}
	return out
}

// Problems are what pixd migrate can't mend, each said in a sentence: a
// migration changed since it was applied, one applied that the build does
// not have (a newer build migrated the database), one pending below the
// newest applied (goose applies none out of order), an INVALID index.
func (r MigrationReport) Problems() []string {
	var out []string
	var newest int64
	for _, m := range r.Migrations {
		if m.Applied {
			newest = max(newest, m.Version)
		}
	}
	for _, m := range r.Migrations {
		switch {
		case m.Changed():
			out = append(out, fmt.Sprintf("%s changed since it was applied (sha256 %s then, %s in this build)", m.Name, m.RecordedChecksum, m.Checksum))
		case m.Applied && !m.InBuild:
			out = append(out, fmt.Sprintf("%s (version %d) is applied but not in this build: a newer build migrated the database", m.Name, m.Version))
		case m.LegacyName != "" && m.InBuild && m.LegacyName != m.Name:
			out = append(out, fmt.Sprintf("schema_migrations records version %d as %s, but this build's file is %s: pixd migrate refuses to take the database over", m.Version, m.LegacyName, m.Name))
		case !m.Applied && m.Version < newest:
			out = append(out, fmt.Sprintf("%s is pending below the newest applied version %d: goose applies no migration out of order", m.Name, newest))
		}
	}
	for _, ix := range r.InvalidIndexes {
		out = append(out, fmt.Sprintf("index %s is INVALID: a concurrent build failed (or is running); no query uses it", ix))
	}
	return out
}

// MigrationStatus reports each migration of the build, applied or pending,
// when it was applied and whether its file changed since, and the
// database's applied migrations the build does not have. It only reads:
// it neither takes the migration lock nor creates a table, so it answers
// while a migration runs.
func MigrationStatus(ctx context.Context, pool *pgxpool.Pool) (MigrationReport, error) {
	return migrationStatus(ctx, pool, embeddedMigrations())
}

func migrationStatus(ctx context.Context, pool *pgxpool.Pool, fsys fs.FS) (MigrationReport, error) {
	files, err := migrationsIn(fsys)
	if err != nil {
		return MigrationReport{}, err
	}
	sqlDB := stdlib.OpenDBFromPool(pool)
	defer sqlDB.Close()
	report, err := readStatus(ctx, sqlDB, files)
	return report, Classify(err)
}

func readStatus(ctx context.Context, q database.DBTxConn, files []Migration) (MigrationReport, error) {
	var report MigrationReport
	var gooseTable, legacy bool
	if err := q.QueryRowContext(ctx, migrateSQL.TableExists, goose.DefaultTablename).Scan(&gooseTable); err != nil {
		return report, fmt.Errorf("look for %s: %w", goose.DefaultTablename, err)
	}
	if err := q.QueryRowContext(ctx, migrateSQL.TableExists, "schema_migrations").Scan(&legacy); err != nil {
		return report, fmt.Errorf("look for schema_migrations: %w", err)
	}
	var applied []MigrationState
	var err error
	if gooseTable {
		if applied, err = appliedMigrations(ctx, q); err != nil {
			return report, err
		}
	}
	if legacy {
		// What the runner before goose applied and goose's table lacks:
		// the takeover (adoptLegacy) is still to come.
		earlier, err := legacyApplied(ctx, q)
		if err != nil {
			return report, err
		}
		for _, m := range earlier {
			if !slices.ContainsFunc(applied, func(s MigrationState) bool { return s.Version == m.Version }) {
				m.LegacyName = m.Name
				applied, report.Legacy = append(applied, m), true
			}
		}
	}
	if report.InvalidIndexes, err = invalidIndexes(ctx, q); err != nil {
		return report, err
	}
	byVersion := map[int64]MigrationState{}
	for _, f := range files {
		byVersion[f.Version] = MigrationState{Version: f.Version, Name: f.Name, InBuild: true, Checksum: f.Checksum}
	}
	for _, a := range applied {
		s, ok := byVersion[a.Version]
		if !ok {
			s = MigrationState{Version: a.Version, Name: a.Name}
		}
		s.Applied, s.AppliedAt, s.RecordedChecksum, s.LegacyName = true, a.AppliedAt, a.RecordedChecksum, a.LegacyName
		byVersion[a.Version] = s
	}
	for _, s := range byVersion {
		report.Migrations = append(report.Migrations, s)
	}
	slices.SortFunc(report.Migrations, func(a, b MigrationState) int { return cmp.Compare(a.Version, b.Version) })
	return report, nil
}

// appliedMigrations reads goose's applied versions with their checksums
// (Version, Name, AppliedAt and RecordedChecksum set).
func appliedMigrations(ctx context.Context, q database.DBTxConn) ([]MigrationState, error) {
	rows, err := q.QueryContext(ctx, migrateSQL.Applied)
	if err != nil {
		return nil, fmt.Errorf("read the applied migrations: %w", err)
	}
	defer rows.Close()
	var out []MigrationState
	for rows.Next() {
		var s MigrationState
		var name, sum sql.NullString
		if err := rows.Scan(&s.Version, &s.AppliedAt, &name, &sum); err != nil {
			return nil, fmt.Errorf("read the applied migrations: %w", err)
		}
		s.Name, s.RecordedChecksum = cmp.Or(name.String, fmt.Sprintf("version %d", s.Version)), sum.String
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the applied migrations: %w", err)
	}
	return out, nil
}

// legacyApplied reads what the earlier runner applied (no checksums: it
// recorded none).
func legacyApplied(ctx context.Context, q database.DBTxConn) ([]MigrationState, error) {
	rows, err := q.QueryContext(ctx, migrateSQL.LegacyApplied)
	if err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	defer rows.Close()
	var out []MigrationState
	for rows.Next() {
		var s MigrationState
		if err := rows.Scan(&s.Version, &s.Name, &s.AppliedAt); err != nil {
			return nil, fmt.Errorf("read schema_migrations: %w", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	return out, nil
}

func invalidIndexes(ctx context.Context, q database.DBTxConn) ([]string, error) {
	rows, err := q.QueryContext(ctx, migrateSQL.InvalidIndexes)
	if err != nil {
		return nil, fmt.Errorf("look for INVALID indexes: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, fmt.Errorf("look for INVALID indexes: %w", err)
		}
		out = append(out, name)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("look for INVALID indexes: %w", err)
	}
	return out, nil
}
