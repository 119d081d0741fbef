package db_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
)

// --- The committed migrations' checksums (unit tier). ---

// recordedChecksums reads migrations/SHA256SUMS: file name -> sha256.
func recordedChecksums(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open("migrations/SHA256SUMS")
	require.NoError(t, err)
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sum, name, ok := strings.Cut(line, "  ")
		require.True(t, ok, "SHA256SUMS line %q: want <sha256>  <file>", line)
		_, dup := out[name]
		require.False(t, dup, "SHA256SUMS names %s twice", name)
		out[name] = sum
	}
	require.NoError(t, sc.Err())
	return out
}

// checksumProblems compares the migrations with the recorded checksums.
func checksumProblems(files []db.Migration, recorded map[string]string) []string {
	var out []string
	seen := map[string]bool{}
	for _, f := range files {
		seen[f.Name] = true
		sum, ok := recorded[f.Name]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("migrations/%s has no line in migrations/SHA256SUMS: add the line %q", f.Name, f.Checksum+"  "+f.Name))
		case sum != f.Checksum:
			out = append(out, fmt.Sprintf("migrations/%s changed since it was committed (sha256 %s, recorded %s): "+
				"a committed migration is never edited (only the inert annotations -- +goose Up, StatementBegin and StatementEnd may be added); add a new one", f.Name, f.Checksum, sum))
		}
	}
	for name := range recorded {
		if !seen[name] {
			out = append(out, fmt.Sprintf("migrations/SHA256SUMS records %s, which migrations/ no longer has: a committed migration is never removed", name))
		}
	}
	slices.Sort(out)
	return out
}

func TestCommittedMigrationsAreUnchanged(t *testing.T) {
	files, err := db.Migrations()
	require.NoError(t, err)
	require.Empty(t, checksumProblems(files, recordedChecksums(t)))
}

// migrationFS is a build whose migrations are files.
func migrationFS(files []db.Migration) fstest.MapFS {
	fsys := fstest.MapFS{}
	for _, f := range files {
		fsys[f.Name] = &fstest.MapFile{Data: []byte(f.SQL)}
	}
	return fsys
}

// relisted is files as Migrate reads them (checksums of their SQL now).
func relisted(t *testing.T, files []db.Migration) []db.Migration {
	t.Helper()
	out, err := db.MigrationsIn(migrationFS(files))
	require.NoError(t, err)
	return out
}

// edited is a copy of the build's migrations with fn applied to the one named name.
func edited(t *testing.T, name string, fn func(sql string) string) []db.Migration {
	t.Helper()
	files, err := db.Migrations()
	require.NoError(t, err)
	files = slices.Clone(files)
	i := slices.IndexFunc(files, func(m db.Migration) bool { return m.Name == name })
	require.GreaterOrEqual(t, i, 0, name)
	files[i].SQL = fn(files[i].SQL)
	return relisted(t, files)
}

// The check above fails on an edited, a new or a removed migration, and
// does not on an annotation added to a committed file.
func TestChecksumCheckCatchesChanges(t *testing.T) {
	recorded := recordedChecksums(t)

	changed := edited(t, "0003_transfers.sql", func(sql string) string { return strings.Replace(sql, "uuid PRIMARY KEY", "uuid  PRIMARY KEY", 1) })
	problems := checksumProblems(changed, recorded)
	require.Len(t, problems, 1)
	require.Contains(t, problems[0], "0003_transfers.sql changed since it was committed")

	annotated := edited(t, "0005_inbox_retention.sql", func(sql string) string {
		return strings.Replace(sql, "CREATE INDEX", "-- +goose StatementBegin\nCREATE INDEX", 1) + "-- +goose StatementEnd\n"
	})
	require.Empty(t, checksumProblems(annotated, recorded))

	files, err := db.Migrations()
	require.NoError(t, err)
	added := relisted(t, append(slices.Clone(files), db.Migration{Name: "9000_later.sql", SQL: "-- +goose Up\nSELECT 1;\n"}))
	problems = checksumProblems(added, recorded)
	require.Len(t, problems, 1)
	require.Contains(t, problems[0], "migrations/9000_later.sql has no line")

	problems = checksumProblems(files[1:], recorded)
	require.Len(t, problems, 1)
	require.Contains(t, problems[0], "no longer has")
}

// Goose reads every migration of the build: each starts with its Up
// annotation, and plpgsql bodies are single statements.
func TestEveryMigrationHasItsUpAnnotation(t *testing.T) {
	files, err := db.Migrations()
	require.NoError(t, err)
	for _, f := range files {
		require.True(t, strings.HasPrefix(f.SQL, "-- +goose Up\n"), "%s must start with the line -- +goose Up", f.Name)
		if strings.Contains(f.SQL, "$$") {
			require.Contains(t, f.SQL, "-- +goose StatementBegin", "%s: a body with semicolons inside is one statement for goose", f.Name)
		}
	}
}

// --- The earlier runner, kept as it ran, to build the databases it left. ---

// Its statements (queries/migrate.sql before goose), verbatim.
const (
	legacyLock        = `SELECT pg_advisory_lock($1)`
	legacyUnlock      = `SELECT pg_advisory_unlock($1)`
	legacyCreateTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer PRIMARY KEY,
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now())`
	legacyIsApplied     = `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`
	legacyRecordApplied = `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`
)

// legacyLockKey is the advisory lock the earlier runner waited on.
const legacyLockKey = 7_368_237_001

// legacyLastVersion is the newest migration the earlier runner shipped with.
const legacyLastVersion = 11

// legacyMigrate is the earlier runner's Migrate, limited to the migrations
// up to upTo: each file (the SQL it ran: the file without goose's
// annotation lines) in its own transaction, recorded in schema_migrations.
func legacyMigrate(t *testing.T, pool *pgxpool.Pool, upTo int64) {
	t.Helper()
	require.LessOrEqual(t, upTo, int64(legacyLastVersion))
	ctx := context.Background()
	migrations, err := db.Migrations()
	require.NoError(t, err)
	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(ctx, legacyLock, legacyLockKey)
	require.NoError(t, err)
	defer conn.Exec(ctx, legacyUnlock, legacyLockKey) //nolint:errcheck // the lock dies with the session anyway
	_, err = conn.Exec(ctx, legacyCreateTable)
	require.NoError(t, err)
	for _, m := range migrations {
		if m.Version > upTo {
			break
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			var exists bool
			if err := tx.QueryRow(ctx, legacyIsApplied, m.Version).Scan(&exists); err != nil || exists {
				return err
			}
			if _, err := tx.Exec(ctx, db.WithoutAnnotations(m.SQL)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, legacyRecordApplied, m.Version, m.Name)
			return err
		})
		require.NoError(t, err, "legacy migration %s", m.Name)
	}
}

// --- Databases and their catalogs. ---

func openPool(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := db.Open(context.Background(), url, 4)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

func currentSchema(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	var schema string
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT current_schema()`).Scan(&schema))
	return schema
}

// catalog describes the schema pool works in: its tables, columns,
// constraints, indexes, views, functions, triggers and sequences, one line
// each, the schema's name replaced by "S". The earlier runner's
// schema_migrations is left out (it is kept on a database taken over).
func catalog(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	ctx := context.Background()
	schema := currentSchema(t, pool)
	queries := []string{
		`SELECT 'table ' || tablename FROM pg_tables WHERE schemaname = current_schema()`,
		`SELECT format('column %s.%s #%s %s %s default %s', table_name, column_name, ordinal_position, data_type, is_nullable, column_default)
		 FROM information_schema.columns WHERE table_schema = current_schema()`,
		`SELECT format('constraint %s %s %s validated=%s', conrelid::regclass, conname, pg_get_constraintdef(c.oid), convalidated)
		 FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = current_schema()`,
		`SELECT format('index %s %s valid=%s', c.relname, pg_get_indexdef(i.indexrelid), i.indisvalid)
		 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema()`,
		`SELECT format('view %s %s', viewname, definition) FROM pg_views WHERE schemaname = current_schema()`,
		`SELECT format('function %s', pg_get_functiondef(p.oid))
		 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = current_schema()`,
		`SELECT format('trigger %s', pg_get_triggerdef(t.oid))
		 FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		 WHERE NOT t.tgisinternal AND n.nspname = current_schema()`,
		`SELECT format('sequence %s %s %s %s', sequencename, data_type, increment_by, cycle) FROM pg_sequences WHERE schemaname = current_schema()`,
	}
	var out []string
	for _, q := range queries {
		rows, err := pool.Query(ctx, q)
		require.NoError(t, err, q)
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err, q)
		for _, l := range lines {
			if !strings.Contains(l, "schema_migrations") {
				out = append(out, strings.ReplaceAll(l, schema, "S"))
			}
		}
	}
	slices.Sort(out)
	return out
}

// freshCatalog is the catalog of a schema the current runner migrated from
// nothing.
func freshCatalog(t *testing.T) []string {
	t.Helper()
	return catalog(t, openPool(t, dbtest.URL(t)))
}

// someRows writes rows that every schema from migration 7 on accepts: an
// account, a credited PIX and a pending one.
func someRows(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `
		INSERT INTO accounts (id, owner_name, opening_balance_cents, balance_cents) VALUES ('acc-legacy', 'Legacy', 1000, 1500);
		INSERT INTO inbox_messages (end_to_end_id, account_id, amount_cents, payload, status, processed_at, dispatch_due_at)
		VALUES ('E1234567820261129120000000000001', 'acc-legacy', 500, '{"a": 1}', 'done', now(), NULL),
		       ('E1234567820261129120000000000002', 'acc-legacy', 700, '{"a": 2}', 'pending', NULL, now());
		INSERT INTO pix_credits (end_to_end_id, account_id, amount_cents, balance_after_cents)
		VALUES ('E1234567820261129120000000000001', 'acc-legacy', 500, 1500)`)
	require.NoError(t, err)
}

// rowsOf reads what someRows wrote, in the columns it wrote.
func rowsOf(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	var out string
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT concat_ws(' | ',
		(SELECT json_agg(t ORDER BY id) FROM (SELECT id, owner_name, opening_balance_cents, balance_cents, created_at FROM accounts) t),
		(SELECT json_agg(t ORDER BY end_to_end_id) FROM (SELECT end_to_end_id, account_id, amount_cents, payload, status, received_at, processed_at, dispatch_due_at FROM inbox_messages) t),
		(SELECT json_agg(t ORDER BY end_to_end_id) FROM (SELECT end_to_end_id, account_id, amount_cents, balance_after_cents, credited_at FROM pix_credits) t))`).Scan(&out))
	return out
}

type legacyRow struct {
	Version   int64
	Name      string
	AppliedAt time.Time
}

func legacyRows(t *testing.T, pool *pgxpool.Pool) []legacyRow {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT version::bigint, name, applied_at FROM schema_migrations ORDER BY version`)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[legacyRow])
	require.NoError(t, err)
	return out
}

// gooseRows reads goose's table (version 0 left out) with the checksums
// recorded, as legacyRows reads the earlier runner's.
func gooseRows(t *testing.T, pool *pgxpool.Pool) []legacyRow {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		SELECT v.version_id, COALESCE(c.name, ''), v.tstamp AT TIME ZONE 'UTC' FROM goose_db_version v
		LEFT JOIN migration_checksums c ON c.version = v.version_id WHERE v.version_id > 0 ORDER BY v.id`)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[legacyRow])
	require.NoError(t, err)
	return out
}

// namesAbove are the build's migrations above version v.
func namesAbove(t *testing.T, v int64) []string {
	t.Helper()
	files, err := db.Migrations()
	require.NoError(t, err)
	var out []string
	for _, f := range files {
		if f.Version > v {
			out = append(out, f.Name)
		}
	}
	return out
}

// --- Upgrading a database the earlier runner migrated. ---

// takeOver migrates, with the current runner, a schema the earlier runner
// migrated up to upTo, and checks that nothing ran again: only the
// migrations above upTo were applied, goose's table holds each of the
// earlier runner's once with the time it was applied then, the rows are
// intact, schema_migrations keeps its rows and gains those of the
// migrations goose applied (a binary of before goose, a rollback, finds them
// applied), and the schema is the one a fresh migration makes.
func takeOver(t *testing.T, upTo int64) {
	ctx := context.Background()
	pool := openPool(t, dbtest.EmptyURL(t))
	legacyMigrate(t, pool, upTo)
	someRows(t, pool)
	rowsBefore := rowsOf(t, pool)
	legacyBefore := legacyRows(t, pool)
	require.Len(t, legacyBefore, int(upTo))

	applied, err := db.Migrate(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, namesAbove(t, upTo), applied, "only the migrations the earlier runner had not applied run")

	seeded := gooseRows(t, pool)
	require.Len(t, seeded, len(legacyBefore)+len(applied), "one row per migration in goose's table")
	require.Equal(t, legacyBefore, seeded[:len(legacyBefore)], "goose's table holds the earlier runner's migrations, as and when they were applied")
	legacyAfter := legacyRows(t, pool)
	require.Equal(t, legacyBefore, legacyAfter[:len(legacyBefore)], "schema_migrations keeps the earlier runner's rows")
	var mirrored []string
	for _, r := range legacyAfter[len(legacyBefore):] {
		mirrored = append(mirrored, r.Name)
	}
	require.Equal(t, applied, mirrored, "and records what goose applied, for a binary of before goose")
	require.Equal(t, rowsBefore, rowsOf(t, pool))
	require.Equal(t, freshCatalog(t), catalog(t, pool))

	// Once: the next run takes nothing over again, and applies nothing.
	again, err := db.Migrate(ctx, pool)
	require.NoError(t, err)
	require.Empty(t, again)
	require.Equal(t, seeded, gooseRows(t, pool))

	report, err := db.MigrationStatus(ctx, pool)
	require.NoError(t, err)
	require.Empty(t, report.Problems())
	require.Empty(t, report.Pending())
	require.False(t, report.Legacy)
	for _, m := range report.Migrations {
		require.Equal(t, m.Checksum, m.RecordedChecksum, "%s: the checksum recorded at the takeover is the build's", m.Name)
	}
}

func TestMigrateTakesOverTheEarlierRunnersDatabase(t *testing.T) {
	takeOver(t, legacyLastVersion)
}

func TestMigrateContinuesADatabaseTheEarlierRunnerMigratedHalfWay(t *testing.T) {
	takeOver(t, 7)
}

// A binary from before goose that starts after the takeover, on a database
// still behind it, applies what it has (it does not know goose's table):
// the next run adopts those too, and runs none of them again.
func TestMigrateAdoptsWhatTheEarlierRunnerAppliedAfterTheTakeover(t *testing.T) {
	ctx := context.Background()
	pool := openPool(t, dbtest.EmptyURL(t))
	legacyMigrate(t, pool, 7)
	files, err := db.Migrations()
	require.NoError(t, err)
	applied, err := db.MigrateFS(ctx, pool, migrationFS(files[:7]))
	require.NoError(t, err)
	require.Empty(t, applied)
	legacyMigrate(t, pool, legacyLastVersion)
	report, err := db.MigrationStatus(ctx, pool)
	require.NoError(t, err)
	require.True(t, report.Legacy)

	applied, err = db.Migrate(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, namesAbove(t, legacyLastVersion), applied)
	require.Equal(t, legacyRows(t, pool)[:legacyLastVersion], gooseRows(t, pool)[:legacyLastVersion])
	require.Equal(t, freshCatalog(t), catalog(t, pool))
}

// The catalog comparison sees a migration that was recorded but never ran.
func TestCatalogComparisonSeesAMissingMigration(t *testing.T) {
	ctx := context.Background()
	pool := openPool(t, dbtest.EmptyURL(t))
	legacyMigrate(t, pool, legacyLastVersion-1)
	files, err := db.Migrations()
	require.NoError(t, err)
	last := files[slices.IndexFunc(files, func(m db.Migration) bool { return m.Version == legacyLastVersion })]
	_, err = pool.Exec(ctx, legacyRecordApplied, last.Version, last.Name)
	require.NoError(t, err)
	_, err = db.Migrate(ctx, pool)
	require.NoError(t, err)
	require.NotEqual(t, freshCatalog(t), catalog(t, pool))
}

// Processes that start at once migrate one after the other: each migration
// is applied once, by one of them, whether the schema is new or the earlier
// runner's.
func TestConcurrentMigratorsApplyEachMigrationOnce(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(fmt.Sprintf("legacy=%v", legacy), func(t *testing.T) {
			ctx := context.Background()
			url := dbtest.EmptyURL(t)
			want := namesAbove(t, 0)
			if legacy {
				legacyMigrate(t, openPool(t, url), legacyLastVersion)
				want = namesAbove(t, legacyLastVersion)
			}
			const migrators = 4
			var wg sync.WaitGroup
			applied := make([][]string, migrators)
			errs := make([]error, migrators)
			for i := range migrators {
				pool := openPool(t, url)
				wg.Go(func() { applied[i], errs[i] = db.Migrate(ctx, pool) })
			}
			wg.Wait()
			var all []string
			for i := range migrators {
				require.NoError(t, errs[i])
				all = append(all, applied[i]...)
			}
			slices.Sort(all)
			require.Equal(t, want, all)
			var duplicates int
			require.NoError(t, openPool(t, url).QueryRow(ctx,
				`SELECT count(*) FROM (SELECT version_id FROM goose_db_version GROUP BY 1 HAVING count(*) > 1) d`).Scan(&duplicates))
			require.Zero(t, duplicates)
		})
	}
}

// goose's table and the checksums land in the test's schema, not in a
// schema further down the search_path.
func TestMigrationsBookkeepingIsInTheSchemaMigrated(t *testing.T) {
	pool := openPool(t, dbtest.URL(t))
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_tables
		WHERE schemaname = current_schema() AND tablename IN ('goose_db_version', 'migration_checksums')`).Scan(&n))
	require.Equal(t, 2, n)
}

// --- Status. ---

func TestMigrationStatus(t *testing.T) {
	ctx := context.Background()
	url := dbtest.EmptyURL(t)
	pool := openPool(t, url)
	all := namesAbove(t, 0)

	// Nothing applied: all pending, and status created nothing.
	report, err := db.MigrationStatus(ctx, pool)
	require.NoError(t, err)
	require.Len(t, report.Pending(), len(all))
	require.Empty(t, report.Problems())
	require.Empty(t, catalog(t, pool), "status only reads")

	// The earlier runner's: what it applied, without checksums.
	legacyMigrate(t, pool, legacyLastVersion)
	legacy := legacyRows(t, pool)
	report, err = db.MigrationStatus(ctx, pool)
	require.NoError(t, err)
	require.True(t, report.Legacy)
	require.Len(t, report.Pending(), len(namesAbove(t, legacyLastVersion)))
	for i, l := range legacy {
		m := report.Migrations[i]
		require.Equal(t, l.Name, m.Name)
		require.True(t, m.Applied)
		require.True(t, l.AppliedAt.Equal(m.AppliedAt))
		require.Empty(t, m.RecordedChecksum)
	}
	require.Empty(t, report.Problems())

	// Migrated: all applied, each with its checksum.
	_, err = db.Migrate(ctx, pool)
	require.NoError(t, err)
	report, err = db.MigrationStatus(ctx, pool)
	require.NoError(t, err)
	require.False(t, report.Legacy)
	require.Empty(t, report.Pending())
	require.Empty(t, report.Problems())
	require.Len(t, report.Migrations, len(all))

	// A build whose 0003 was edited: status flags it, and migrate refuses
	// before applying anything (the build has a new migration too).
	changed := edited(t, "0003_transfers.sql", func(sql string) string { return sql + "-- an edit\n" })
	changed = relisted(t, append(changed, db.Migration{Name: "9000_later.sql", SQL: "-- +goose Up\nCREATE TABLE later (id int);\n"}))
	report, err = db.MigrationStatusFS(ctx, pool, migrationFS(changed))
	require.NoError(t, err)
	problems := report.Problems()
	require.Len(t, problems, 1)
	require.Contains(t, problems[0], "0003_transfers.sql changed since it was applied")
	applied, err := db.MigrateFS(ctx, pool, migrationFS(changed))
	require.ErrorContains(t, err, "migrations changed since they were applied: 0003_transfers.sql")
	require.Empty(t, applied)
	report, err = db.MigrationStatusFS(ctx, pool, migrationFS(changed))
	require.NoError(t, err)
	require.Len(t, report.Pending(), 1, "9000_later.sql was not applied")

	// A newer build migrated the database: this build's status names the
	// version it does not have, and its migrate applies nothing.
	newer := relisted(t, append(edited(t, "0001_inbox.sql", func(s string) string { return s }),
		db.Migration{Name: "9000_later.sql", SQL: "-- +goose Up\nCREATE TABLE later (id int);\n"}))
	applied, err = db.MigrateFS(ctx, pool, migrationFS(newer))
	require.NoError(t, err)
	require.Equal(t, []string{"9000_later.sql"}, applied)
	report, err = db.MigrationStatus(ctx, pool)
	require.NoError(t, err)
	problems = report.Problems()
	require.Len(t, problems, 1)
	require.Contains(t, problems[0], "9000_later.sql (version 9000) is applied but not in this build")
	applied, err = db.Migrate(ctx, pool)
	require.NoError(t, err)
	require.Empty(t, applied)
}

// --- Migrations without a transaction: an index built concurrently. ---

const pendingReceivedIndex = "inbox_messages_pending_received_idx"

// indexMigration is the build's migration that builds pendingReceivedIndex,
// and the migrations before it.
func indexMigration(t *testing.T) (db.Migration, []db.Migration) {
	t.Helper()
	files, err := db.Migrations()
	require.NoError(t, err)
	i := slices.IndexFunc(files, func(m db.Migration) bool {
		return strings.Contains(m.SQL, "CREATE INDEX CONCURRENTLY "+pendingReceivedIndex)
	})
	require.GreaterOrEqual(t, i, 0)
	return files[i], files[:i]
}

// failedConcurrentBuild leaves what a concurrent build that failed leaves:
// an INVALID index named name (here a unique index that two pending rows
// break).
func failedConcurrentBuild(t *testing.T, pool *pgxpool.Pool, name string) {
	t.Helper()
	_, err := pool.Exec(context.Background(), fmt.Sprintf(`CREATE UNIQUE INDEX CONCURRENTLY %s ON inbox_messages (status) WHERE status = 'pending'`, name))
	require.ErrorContains(t, err, "could not create unique index")
	var valid bool
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT indisvalid FROM pg_index WHERE indexrelid = $1::regclass`, name).Scan(&valid))
	require.False(t, valid)
}

func TestIndexOnTheInboxIsBuiltConcurrentlyAgainAfterAFailedBuild(t *testing.T) {
	ctx := context.Background()
	pool := openPool(t, dbtest.EmptyURL(t))
	index, before := indexMigration(t)
	require.Contains(t, index.SQL, "-- +goose NO TRANSACTION\n")
	_, err := db.MigrateFS(ctx, pool, migrationFS(before))
	require.NoError(t, err)
	someRows(t, pool)
	_, err = pool.Exec(ctx, `INSERT INTO inbox_messages (end_to_end_id, account_id, amount_cents, payload, dispatch_due_at)
		VALUES ('E1234567820261129120000000000003', 'acc-legacy', 900, '{}', now())`)
	require.NoError(t, err)
	failedConcurrentBuild(t, pool, pendingReceivedIndex)
	report, err := db.MigrationStatusFS(ctx, pool, migrationFS(before))
	require.NoError(t, err)
	require.Equal(t, []string{pendingReceivedIndex}, report.InvalidIndexes)

	applied, err := db.Migrate(ctx, pool)
	require.NoError(t, err)
	require.Contains(t, applied, index.Name)
	var def string
	var valid bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT pg_get_indexdef(indexrelid), indisvalid FROM pg_index WHERE indexrelid = $1::regclass`,
		pendingReceivedIndex).Scan(&def, &valid))
	require.True(t, valid)
	require.Contains(t, def, "(received_at) WHERE (status = 'pending'::text)")
	report, err = db.MigrationStatus(ctx, pool)
	require.NoError(t, err)
	require.Empty(t, report.Problems())

	// The gauge's statement reads the index (sequential scans off: the
	// table is too small for the planner to bother otherwise).
	var plan []string
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "EXPLAIN "+db.OldestPendingAgeSQL())
		if err != nil {
			return err
		}
		plan, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	require.NoError(t, err)
	require.Contains(t, strings.Join(plan, "\n"), pendingReceivedIndex)
}

// The runner honours NO TRANSACTION: without it, the same file fails.
func TestConcurrentIndexNeedsNoTransaction(t *testing.T) {
	ctx := context.Background()
	pool := openPool(t, dbtest.EmptyURL(t))
	index, before := indexMigration(t)
	files := relisted(t, append(slices.Clone(before), db.Migration{Name: index.Name, SQL: strings.Replace(index.SQL, "-- +goose NO TRANSACTION\n", "", 1)}))
	applied, err := db.MigrateFS(ctx, pool, migrationFS(files))
	require.ErrorContains(t, err, "cannot run inside a transaction block")
	var names []string
	for _, m := range before {
		names = append(names, m.Name)
	}
	require.Equal(t, names, applied, "the migrations before it were applied")
}

// A migration that leaves an INVALID index (one that trusts IF NOT EXISTS
// after a failed build, say) fails pixd migrate instead of passing for done.
func TestMigrateFailsOnAnInvalidIndex(t *testing.T) {
	ctx := context.Background()
	pool := openPool(t, dbtest.URL(t))
	someRows(t, pool)
	_, err := pool.Exec(ctx, `INSERT INTO inbox_messages (end_to_end_id, account_id, amount_cents, payload, dispatch_due_at)
		VALUES ('E1234567820261129120000000000003', 'acc-legacy', 900, '{}', now())`)
	require.NoError(t, err)
	failedConcurrentBuild(t, pool, "inbox_messages_broken_idx")
	_, err = db.Migrate(ctx, pool)
	require.ErrorContains(t, err, "INVALID indexes, which no query uses (a concurrent build failed, or one is running): inbox_messages_broken_idx")
	report, err := db.MigrationStatus(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, []string{"index inbox_messages_broken_idx is INVALID: a concurrent build failed (or is running); no query uses it"}, report.Problems())
}
