package plans_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	// Every saga binds its statements and declares its queue when its
	// package is initialised: the registry links in every saga there is,
	// so that theirs are planned too.
	_ "github.com/pixbank/pix/saga/registry"
)

// The rule: every statement a PIX or a periodic run executes finds its rows
// through an index, never by reading a growing table whole. At 1,000 PIX/s
// the inbox keeps days of rows and the credits, transfers, devoluções,
// events and keys grow by the hundreds of millions: a plan that scans one is
// a statement that slows down with the books until it stops the service.
// TestStatementsAreBoundedByAnIndex plans every statement the code binds
// (db.Statements: BindQueries and DeclareQueue, of package db and of
// every saga) on tables filled in production's shape
// (testdata/fixture.sql), and fails on a plan that reads a growing
// table whole. A statement added anywhere is in the registry, and fails
// here until it is classified below.

// runner is who runs a statement, and so how often.
type runner string

const (
	// perPIX: on the way of every PIX, transfer, devolução or scheduled PIX
	// (webhooks, API writes, activities, the dispatchers' records).
	perPIX runner = "per PIX"
	// periodic: on a timer (the dispatchers' claims, the relay's claims,
	// the metrics at every scrape, the retention, the catch-up, the
	// reconciliation).
	periodic runner = "periodic"
	// onRequest: on a customer's or an operator's request (reads of one
	// PIX, transfer or devolução; re-drives; listings).
	onRequest runner = "on request"
	// atMigration: only by the migration runner, at start, on its own
	// bookkeeping tables: never planned here.
	atMigration runner = "at migration"
)

// statementPlan is how a statement is checked.
type statementPlan struct {
	runs runner
	// cases are argument lists (SQL literals) of a statement whose plan
	// depends on which arguments are NULL or empty (an optional filter):
	// each is planned as PostgreSQL plans it for those values (a custom
	// plan, which it keeps choosing over a generic plan that costs more).
	// None: the generic plan, the one for any values.
	cases [][]string
	// wholeTables are the growing tables the statement reads whole on
	// purpose, why says why; any other growing table still needs an index.
	wholeTables []string
	// why: the reason for wholeTables, or for not planning it at all.
	why string
	// notPlanned: exempt, for why.
	notPlanned bool
}

func checked(r runner) statementPlan { return statementPlan{runs: r} }

// withArgs is a statement planned for each argument list of cases.
func withArgs(r runner, cases ...[]string) statementPlan { return statementPlan{runs: r, cases: cases} }

// readsWhole is a statement that reads tables whole on purpose.
func readsWhole(r runner, why string, tables ...string) statementPlan {
	return statementPlan{runs: r, why: why, wholeTables: tables}
}

// exempt is a statement not planned here.
func exempt(r runner, why string) statementPlan {
	return statementPlan{runs: r, why: why, notPlanned: true}
}

func args(a ...string) []string { return a }

// migrationOnly is why the migration runner's statements are not planned.
const migrationOnly = "the migration runner's bookkeeping, at start only, on its own tables (one row per migration)"

// The reconciliation (saga/reconcile, the pix-reconcile Schedule every
// RECONCILE_INTERVAL) checks every account's balance: it reads the accounts
// whole on purpose, every movement, inbox row and devolução since its
// checkpoint through an index, and the history in bounded parts (accounts
// recounted through their account indexes, the done rows' pass through the
// primary key). AccountsOfPrefix lists some accounts (the load tool's
// books, by the prefix of their ids), which Recount sums whole.
const (
	reconcileAccounts = "the reconciliation checks every account's balance (I2) against its settled sum; the movements since come from their xact_id indexes"
	prefixAccounts    = "the accounts of an id prefix (the load tool's books); each account's movements come from their account indexes"
	reconcileHolds    = "the reconciliation checks every account's held amount (I11) against its active holds, which come from their partial index"
)

// statementPlans classifies every bound statement, by its name in traces
// ("queries." is the statements of saga/scheduled/queries.sql).
var statementPlans = map[string]statementPlan{
	// The database's clock (db.Now), no table: read in the transaction of
	// each deadline's decision (a block's expiry and return, a MED's
	// deadlines) and by the listers' runs (their covered windows).
	"clock.Now": checked(perPIX),

	"accounts.ChargeStatus":  checked(onRequest),
	"accounts.CloseAccount":  checked(onRequest),
	"accounts.CreateAccount": checked(onRequest),
	"accounts.CreateCharge":  checked(onRequest),
	"accounts.CreatePixKey":  checked(onRequest),
	"accounts.Debit":         checked(perPIX),
	"accounts.GetAccount":    checked(onRequest),
	"accounts.LockForDebit":  checked(perPIX),

	"credits.ClaimDue":               checked(periodic),
	"credits.Credit":                 checked(perPIX),
	"credits.CreditDone":             checked(perPIX),
	"credits.DeferDispatch":          checked(perPIX),
	"credits.FailedCredits":          checked(onRequest),
	"credits.FailedCreditsOfAccount": checked(onRequest),
	"credits.GetCredit":              checked(onRequest),
	"credits.IsCredited":             checked(perPIX),
	"credits.LockAccountForCredit":   checked(perPIX),
	"credits.LockForCredit":          checked(perPIX),
	"credits.LockForFail":            checked(perPIX),
	"credits.MarkCreditedBefore":     checked(perPIX),
	"credits.MarkDispatched":         checked(perPIX),
	"credits.MarkFailed":             checked(perPIX),
	"credits.OldestPendingAge":       checked(periodic),
	"credits.Receive":                checked(perPIX),
	"credits.RecordAttemptFailure":   checked(perPIX),
	// One PIX ($1), or the failed PIX of an account ($2): the other NULL.
	"credits.RedriveFailed": withArgs(onRequest,
		args("'E0000000000000000000000000180160'", "NULL"), args("NULL", "'acc-000001'")),
	"credits.ResetLockTimeout": exempt(perPIX, "a session setting, no table: RESET can't be prepared, nor planned"),
	"credits.SetLockTimeout":   checked(perPIX),

	// The MED lister's quarantine holds only the items not cleared yet (a
	// later listing that takes one in clears it, an operator too): its
	// gauge counts them whole at each scrape.
	"quarantine.RefundsFrom": readsWhole(perPIX, "a MED report's expiry reads the refund requests quarantined and not cleared, a handful paged until cleared", "pix_med_quarantine"),
	"quarantine.Count":       readsWhole(periodic, "the gauge of the MED items quarantined and not cleared, a handful paged until cleared", "pix_med_quarantine"),

	"holds.AccountLacking": checked(perPIX), // a new hold, when money is available
	"holds.ByRef":          checked(perPIX),
	"holds.Capture":        checked(perPIX),
	"holds.Fill":           checked(perPIX),    // a credit to an account with a hold filling
	"holds.Get":            checked(perPIX),    // a release's and a capture's first read
	"holds.GetMany":        checked(onRequest), // MED reports' holds at once (med.Store.Get, OfPIX, List)
	"holds.Hold":           checked(perPIX),
	"holds.LockHold":       checked(perPIX),
	"holds.Release":        checked(perPIX),
	"holds.Shrink":         checked(perPIX), // a MED's return of less than it holds
	"holds.CapturePart":    checked(perPIX), // a MED's return, its hold kept
	"holds.MakeFilling":    checked(perPIX), // a MED's return of a hold made before holds filled
	"holds.Restore":        checked(perPIX), // a devolução's reversal: pix_hold_parts' key
	"holds.RaiseFillTo":    checked(perPIX), // a release, shrink or reversal of a PIX's: pix_holds_active_pix_idx
	"holds.SetFillUntil":   checked(perPIX), // a stopped MED report's hold made without a fill-until: the key

	"idempotency.ReadKey":        checked(perPIX),
	"idempotency.RecordResponse": checked(perPIX),
	"idempotency.Release":        checked(perPIX),
	"idempotency.Reserve":        checked(perPIX),

	"listed.Insert":      checked(periodic),
	"listed.NoteRefunds": checked(periodic),
	"listed.Stored":      checked(perPIX), // the catch-up's pages, and a webhook delivery Receive did not store

	"maintenance.CreditWithoutDone":     checked(periodic),
	"maintenance.DeleteDoneInboxRows":   checked(periodic),
	"maintenance.DeleteExpiredKeys":     checked(periodic),
	"maintenance.DeletePublishedEvents": checked(periodic),

	"migrate.AdoptLegacy":         exempt(atMigration, migrationOnly),
	"migrate.Applied":             exempt(atMigration, migrationOnly),
	"migrate.CreateChecksumTable": exempt(atMigration, migrationOnly),
	"migrate.InvalidIndexes":      exempt(atMigration, migrationOnly),
	"migrate.LegacyApplied":       exempt(atMigration, migrationOnly),
	"migrate.LockKey":             exempt(atMigration, migrationOnly),
	"migrate.RecordChecksum":      exempt(atMigration, migrationOnly),
	"migrate.RecordLegacy":        exempt(atMigration, migrationOnly),
	"migrate.CanSecure":           exempt(atMigration, migrationOnly),
	"migrate.Secure":              exempt(atMigration, migrationOnly),
	"migrate.TableExists":         exempt(atMigration, migrationOnly),

	"outbox.ClaimEvents":          checked(periodic),
	"outbox.Lag":                  checked(periodic),
	"outbox.MarkPublished":        checked(perPIX),
	"outbox.RecordPublishFailure": checked(perPIX),

	"roles.Owner": checked(periodic), // the catalog, at the api's and the worker's start

	"queries.AccountStatus":       checked(perPIX),
	"queries.AddCancelWake":       checked(perPIX),
	"queries.Conclude":            checked(perPIX),
	"queries.CountPending":        checked(perPIX),
	"queries.Create":              checked(perPIX),
	"queries.EndCancelWake":       checked(perPIX),
	"queries.Get":                 checked(onRequest),
	"queries.ListByAccount":       checked(onRequest),
	"queries.ListByAccountStatus": checked(onRequest),
	"queries.Lock":                checked(perPIX),
	"queries.Pending":             checked(periodic),

	"reconcile.Accounts":          checked(periodic),
	"reconcile.AccountsOfPrefix":  readsWhole(onRequest, prefixAccounts, "accounts"),
	"reconcile.Advance":           checked(periodic),
	"reconcile.Checkpoint":        checked(periodic),
	"reconcile.DoneRecount":       withArgs(periodic, args("'E0000000000000000000000000150000'", "200000"), args("NULL", "200000")),
	"reconcile.DoneWithoutCredit": withArgs(periodic, args("pg_snapshot_xmin(pg_current_snapshot())", "'{E0000000000000000000000000180160}'")),
	"reconcile.Fences":            checked(periodic), // the catalog's triggers of the books
	"reconcile.Guard":             checked(periodic),
	"reconcile.History":           checked(periodic), // the catalog's estimates of the books' size
	"reconcile.Lock":              exempt(periodic, "a table lock, no rows: LOCK can't be planned"),
	"reconcile.New":               withArgs(periodic, args("pg_snapshot_xmin(pg_current_snapshot())", "pg_current_xact_id()")),
	"reconcile.OverCredit": withArgs(periodic, args("pg_snapshot_xmin(pg_current_snapshot())", "'{E0000000000000000000000000180160}'",
		"'{acc-000001,acc-000002}'")),
	"reconcile.Recount": withArgs(periodic, args("'{acc-000001,acc-000002}'", "pg_current_xact_id()",
		"pg_snapshot_xmin(pg_current_snapshot())")),
	"reconcile.RepeatableRead": exempt(periodic, "a transaction's setting, no table: SET TRANSACTION can't be planned"),
	"reconcile.SetSettled":     checked(periodic),
	"reconcile.Settle":         withArgs(periodic, args("pg_snapshot_xmin(pg_current_snapshot())", "pg_current_xact_id()")),
	"reconcile.Snapshot":       checked(periodic),
	"reconcile.Unbalanced": {runs: periodic, cases: [][]string{args("pg_snapshot_xmin(pg_current_snapshot())")},
		why: reconcileAccounts, wholeTables: []string{"accounts", "reconcile_settled"}},
	"reconcile.UnbalancedHolds": readsWhole(periodic, reconcileHolds, "accounts"),

	"refunds.ClaimDue":        checked(periodic),
	"refunds.Contradictions":  checked(periodic),
	"refunds.CreditAccount":   checked(perPIX),
	"refunds.DeferDispatch":   checked(perPIX),
	"refunds.GetRefund":       checked(onRequest),
	"refunds.LockCredit":      checked(perPIX),
	"refunds.LockRefund":      checked(perPIX),
	"refunds.MarkAsked":       checked(perPIX),
	"refunds.MarkDispatched":  checked(perPIX),
	"refunds.MarkRefused":     checked(perPIX),
	"refunds.MarkRequested":   checked(perPIX),
	"refunds.MarkReturned":    checked(perPIX),
	"refunds.NoteOutcomes":    checked(perPIX),
	"refunds.OldestOpenAge":   checked(periodic),
	"refunds.RecordDebited":   checked(perPIX),
	"refunds.RefundsOf":       checked(onRequest),
	"refunds.RefusalStands":   checked(perPIX),
	"refunds.Reverse":         checked(perPIX),
	"refunds.StandingRefusal": checked(perPIX),
	"refunds.TakenCents":      checked(perPIX),

	"scheduled.ClaimDue":       checked(periodic),
	"scheduled.DeferDispatch":  checked(perPIX),
	"scheduled.MarkDispatched": checked(perPIX),

	"scheduled_cancel_wake.ClaimDue":       checked(periodic),
	"scheduled_cancel_wake.DeferDispatch":  checked(perPIX),
	"scheduled_cancel_wake.MarkDispatched": checked(perPIX),

	"transfers.ClaimDue":                checked(periodic),
	"transfers.DeferDispatch":           checked(perPIX),
	"transfers.GetTransfer":             checked(onRequest),
	"transfers.GetTransferByEndToEndID": checked(onRequest),
	"transfers.LockTransfer":            checked(perPIX),
	"transfers.MarkDispatched":          checked(perPIX),
	"transfers.MarkSubmitted":           checked(perPIX),
	"transfers.OldestOpenAge":           checked(periodic),
	"transfers.RecordDebited":           checked(perPIX),
	"transfers.Refund":                  checked(perPIX),
	"transfers.Settle":                  checked(perPIX),
}

// sagaRoot is the folder of the saga packages, whose statements each
// package classifies itself (sagaPlans) and whose tables it fills for the
// plans (planFixture): a new saga adds its own files, and edits none here.
const sagaRoot = "../../saga"

// allPlans are statementPlans and every saga package's own classes.
func allPlans(t *testing.T) map[string]statementPlan {
	t.Helper()
	own, err := sagaPlans(os.DirFS(sagaRoot))
	require.NoError(t, err)
	all := maps.Clone(statementPlans)
	for name, p := range own {
		_, twice := all[name]
		require.False(t, twice, "%s is classified in plans_test.go and by its saga's testdata/plans.txt", name)
		all[name] = p
	}
	return all
}

// sagaPlans reads the classes a saga package gives its statements, in its
// testdata/plans.txt: a line per statement, its name in traces and who
// runs it (per-pix, periodic or on-request); # starts a comment. Only
// checked statements: one read whole on purpose, or exempt, is classified
// in statementPlans, with its reason.
func sagaPlans(fsys fs.FS) (map[string]statementPlan, error) {
	files, err := fs.Glob(fsys, "*/testdata/plans.txt")
	if err != nil {
		return nil, err
	}
	runners := map[string]runner{"per-pix": perPIX, "periodic": periodic, "on-request": onRequest}
	out := map[string]statementPlan{}
	for _, file := range files {
		text, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, err
		}
		for i, line := range strings.Split(string(text), "\n") {
			line, _, _ = strings.Cut(line, "#")
			f := strings.Fields(line)
			if len(f) == 0 {
				continue
			}
			r, ok := runners[f[len(f)-1]]
			_, twice := out[f[0]]
			switch {
			case len(f) != 2 || !ok:
				return nil, fmt.Errorf("%s:%d: want a statement's name and per-pix, periodic or on-request, got %q", file, i+1, line)
			case twice:
				return nil, fmt.Errorf("%s:%d: %s is classified twice", file, i+1, f[0])
			}
			out[f[0]] = checked(r)
		}
	}
	return out, nil
}

// boundedTables are the tables that do not grow with the PIX, and why: a
// scan of one is as cheap as an index. Every other table of the schema is
// growing.
var boundedTables = map[string]string{
	"psp_catchup":          "one row: the catch-up's covered end before 0045",
	"covered_windows":      "a row per scheduled lister: its covered end",
	"reconcile_checkpoint": "one row: the reconciliation's checkpoint",
	"pix_scheduled_cancel_wakes": "a row per cancelled scheduled PIX whose run was not woken yet, deleted once it is: " +
		"none but while Temporal is away (the cancels of the outage)",
	"goose_db_version":    "one row per migration",
	"migration_checksums": "one row per migration",
}

// liveEdge is the largest share of its table's rows a partial index may
// hold and still bound a scan of the whole index: an index of the rows
// still pending, open or unpublished, the live edge of a table that is
// otherwise history.
const liveEdge = 0.05

// schemaFacts are what the check knows of the fixture's schema.
type schemaFacts struct {
	// growing: the growing tables.
	growing map[string]bool
	// indexTable: each index's table.
	indexTable map[string]string
	// partialShare: each partial index's share of its table's rows.
	partialShare map[string]float64
}

func TestStatementsAreBoundedByAnIndex(t *testing.T) {
	statements := db.Statements()
	bound := map[string]bool{}
	for _, s := range statements {
		bound[s.Name] = true
	}
	statementPlans := allPlans(t)
	for name, p := range statementPlans {
		require.True(t, bound[name], "statementPlans classifies %s, which no code binds any more: remove it", name)
		require.True(t, p.why != "" || (len(p.wholeTables) == 0 && !p.notPlanned), "%s: say why", name)
		require.True(t, p.notPlanned || p.runs != atMigration, "%s runs at migration only: exempt it", name)
	}

	for name := range namedInFiles(t) {
		require.True(t, bound[name], "%s is written in a queries file but bound by no package linked in here: "+
			"list its saga in saga/registry, or the file in unlinked", name)
	}

	ctx := context.Background()
	conn := planFixture(t)
	facts := readSchemaFacts(t, conn)
	for name, p := range statementPlans {
		for _, table := range p.wholeTables {
			require.True(t, facts.growing[table], "%s reads %s whole on purpose, which is no growing table", name, table)
		}
	}

	for _, s := range statements {
		t.Run(s.Name, func(t *testing.T) {
			p, classified := statementPlans[s.Name]
			if !classified {
				t.Errorf("%s is not classified: add it to statementPlans (plans_test.go), or its saga's testdata/plans.txt, checked, or exempt with the reason", s.Name)
				p = checked(perPIX)
			}
			if p.notPlanned {
				return
			}
			cases := p.cases
			if len(cases) == 0 {
				cases = [][]string{nil}
			}
			for _, c := range cases {
				findings, text, err := checkPlan(ctx, conn, facts, s.SQL, c, p.wholeTables, nil)
				require.NoError(t, err, "plan %s (%v): a statement PostgreSQL can't plan here is exempt, with the reason", s.Name, c)
				if len(findings) > 0 {
					t.Errorf("%s, %s, arguments %v, reads a growing table whole:\n  %s\n%s\n%s",
						s.Name, p.runs, describeArgs(c), strings.Join(findings, "\n  "), text, s.SQL)
				}
			}
		})
	}

	// The check fails on a missing index: without the index of a PIX's
	// devoluções, their list reads every devolução.
	t.Run("control: a dropped index", func(t *testing.T) {
		i := slices.IndexFunc(statements, func(s db.NamedStatement) bool { return s.Name == "refunds.RefundsOf" })
		require.GreaterOrEqual(t, i, 0)
		findings, text, err := checkPlan(ctx, conn, facts, statements[i].SQL, nil, nil, []string{"DROP INDEX pix_refunds_pix_idx"})
		require.NoError(t, err)
		require.Contains(t, findings, "Seq Scan on pix_refunds", text)
	})
}

// unlinked are the files of named statements no package of the service
// binds, and why.
var unlinked = map[string]string{
	"db/internal/sagaexample/queries.sql": "the toy saga of package db's tests (db/internal/sagaexample), in no binary",
}

// namedInFiles is the name in traces (BindQueries: the file's base name, a
// dot, the statement's) of every statement written in a file of the
// module, but for the files of unlinked: what the registry must hold.
func namedInFiles(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", ".bin", ".data", "node_modules", "migrations", "testdata", "tooling":
				return filepath.SkipDir
			}
			return nil
		}
		if filepath.Ext(path) != ".sql" || unlinked[filepath.ToSlash(rel)] != "" {
			return nil
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		prefix := strings.TrimSuffix(filepath.Base(path), ".sql")
		for line := range strings.Lines(string(body)) {
			if name, ok := strings.CutPrefix(strings.TrimSpace(line), "-- name:"); ok {
				out[prefix+"."+strings.TrimSpace(name)] = true
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, out)
	return out
}

func describeArgs(c []string) string {
	if c == nil {
		return "any (the generic plan)"
	}
	return "(" + strings.Join(c, ", ") + ")"
}

// planFixture is a connection to a schema of its own, migrated and filled
// as testdata/fixture.sql says, its statistics gathered.
func planFixture(t *testing.T) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	u := dbtest.URL(t)
	conn, err := pgx.Connect(ctx, u)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	rows, err := conn.Query(ctx, `SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema()`)
	require.NoError(t, err)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	// The statistics are the test's own, the same at every run: no
	// autovacuum replaces them with another sample while it plans.
	for _, table := range tables {
		_, err := conn.Exec(ctx, "ALTER TABLE "+pgx.Identifier{table}.Sanitize()+" SET (autovacuum_enabled = off)")
		require.NoError(t, err)
	}
	fixture, err := os.ReadFile("testdata/fixture.sql")
	require.NoError(t, err)
	// One simple-protocol round trip: the whole file in one transaction.
	_, err = conn.PgConn().Exec(ctx, string(fixture)).ReadAll()
	require.NoError(t, err, "fill the fixture")
	// Then each saga package's rows (saga/<name>/testdata/plans_fixture.sql),
	// in the same session: its tables filled as the core's are, with the
	// fixture's helpers (pg_temp.acc, pg_temp.e) and rows to refer to.
	sagaFixtures, err := fs.Glob(os.DirFS(sagaRoot), "*/testdata/plans_fixture.sql")
	require.NoError(t, err)
	for _, file := range sagaFixtures {
		sql, err := os.ReadFile(filepath.Join(sagaRoot, file))
		require.NoError(t, err)
		_, err = conn.PgConn().Exec(ctx, string(sql)).ReadAll()
		require.NoError(t, err, "fill saga/%s", file)
	}
	// Vacuumed, as production's tables are (the visibility map prices an
	// index-only scan), and analysed from a sample that holds every row
	// (the largest table has 180,000; the default target samples 30,000 at
	// random): the planner's estimates, and so its plans, are the same at
	// every run.
	_, err = conn.Exec(ctx, "SET default_statistics_target = 1000")
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "VACUUM (ANALYZE) "+strings.Join(quoteAll(tables), ", "))
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "RESET default_statistics_target")
	require.NoError(t, err)
	return conn
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = pgx.Identifier{n}.Sanitize()
	}
	return out
}

// readSchemaFacts reads the growing tables, the indexes and the share of
// its table's rows each partial index holds, counted.
func readSchemaFacts(t *testing.T, conn *pgx.Conn) schemaFacts {
	t.Helper()
	ctx := context.Background()
	f := schemaFacts{growing: map[string]bool{}, indexTable: map[string]string{}, partialShare: map[string]float64{}}
	rows, err := conn.Query(ctx, `SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema()`)
	require.NoError(t, err)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	for _, table := range tables {
		if _, ok := boundedTables[table]; !ok {
			f.growing[table] = true
		}
	}
	rows, err = conn.Query(ctx, `SELECT c.relname::text, t.relname::text, COALESCE(pg_get_expr(i.indpred, i.indrelid), '')
		FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid
		JOIN pg_namespace n ON n.oid = t.relnamespace WHERE n.nspname = current_schema()`)
	require.NoError(t, err)
	type index struct{ Name, Table, Predicate string }
	indexes, err := pgx.CollectRows(rows, pgx.RowToStructByPos[index])
	require.NoError(t, err)
	for _, i := range indexes {
		f.indexTable[i.Name] = i.Table
		if i.Predicate == "" {
			continue
		}
		var share float64
		require.NoError(t, conn.QueryRow(ctx, fmt.Sprintf(`SELECT (count(*) FILTER (WHERE %s))::float8 / greatest(count(*), 1) FROM %s`,
			i.Predicate, pgx.Identifier{i.Table}.Sanitize())).Scan(&share))
		f.partialShare[i.Name] = share
	}
	return f
}

// checkPlan plans sql in a transaction rolled back after it (first running
// before, such as dropping an index): as PostgreSQL plans it for args (SQL
// literals), or for any arguments (args nil: the generic plan). Nothing is
// executed (EXPLAIN without ANALYZE). It returns what in the plan reads a
// growing table whole, but for the tables of whole, and the plan as text.
func checkPlan(ctx context.Context, conn *pgx.Conn, f schemaFacts, sql string, args, whole, before []string) ([]string, string, error) {
	pg := conn.PgConn()
	exec := func(q string) ([][][]byte, error) {
		results, err := pg.Exec(ctx, q).ReadAll()
		if err != nil || len(results) == 0 {
			return nil, err
		}
		return results[len(results)-1].Rows, nil
	}
	mode := "force_generic_plan"
	if args != nil {
		mode = "force_custom_plan"
	}
	if _, err := exec("BEGIN; SET LOCAL plan_cache_mode = " + mode + "; SET LOCAL jit = off"); err != nil {
		return nil, "", err
	}
	defer func() {
		_, _ = exec("ROLLBACK")
		_, _ = exec("DEALLOCATE plan_check") // prepared statements outlive a rollback
	}()
	for _, q := range before {
		if _, err := exec(q); err != nil {
			return nil, "", fmt.Errorf("%s: %w", q, err)
		}
	}
	if _, err := exec("PREPARE plan_check AS " + sql); err != nil {
		return nil, "", err
	}
	if args == nil {
		n, err := exec(`SELECT cardinality(parameter_types) FROM pg_prepared_statements WHERE name = 'plan_check'`)
		if err != nil {
			return nil, "", err
		}
		var count int
		if _, err := fmt.Sscan(string(n[0][0]), &count); err != nil {
			return nil, "", err
		}
		for range count {
			args = append(args, "NULL")
		}
	}
	execute := "EXECUTE plan_check"
	if len(args) > 0 {
		execute += "(" + strings.Join(args, ", ") + ")"
	}
	out, err := exec("EXPLAIN (FORMAT JSON) " + execute)
	if err != nil {
		return nil, "", err
	}
	var plans []struct{ Plan planNode }
	if err := json.Unmarshal(out[0][0], &plans); err != nil {
		return nil, "", err
	}
	lines, err := exec("EXPLAIN " + execute)
	if err != nil {
		return nil, "", err
	}
	var text strings.Builder
	for _, l := range lines {
		text.WriteString(string(l[0]) + "\n")
	}
	return f.wholeReads(plans[0].Plan, whole), text.String(), nil
}

// planNode is a node of EXPLAIN (FORMAT JSON)'s plan.
type planNode struct {
	NodeType     string     `json:"Node Type"`
	RelationName string     `json:"Relation Name"`
	IndexName    string     `json:"Index Name"`
	IndexCond    string     `json:"Index Cond"`
	Plans        []planNode `json:"Plans"`
}

// wholeReads is what in the plan rooted at n reads a growing table, other
// than those of whole, whole: a sequential scan of it, or a scan of one of
// its indexes with no index condition (every entry), unless the index is
// partial and holds only the table's live edge. A sort, a hash or an
// aggregate of a whole table always stands on such a read: the read is
// where it is caught.
func (f schemaFacts) wholeReads(n planNode, whole []string) []string {
	var out []string
	switch n.NodeType {
	case "Seq Scan":
		if f.growing[n.RelationName] && !slices.Contains(whole, n.RelationName) {
			out = append(out, "Seq Scan on "+n.RelationName)
		}
	case "Index Scan", "Index Only Scan", "Bitmap Index Scan":
		table := f.indexTable[n.IndexName]
		share, partial := f.partialShare[n.IndexName]
		if n.IndexCond == "" && f.growing[table] && !slices.Contains(whole, table) && (!partial || share > liveEdge) {
			what := "every entry"
			if partial {
				what = fmt.Sprintf("a partial index holding %.0f%% of the table", 100*share)
			}
			out = append(out, fmt.Sprintf("%s of %s on %s with no index condition: %s", n.NodeType, n.IndexName, table, what))
		}
	}
	for _, c := range n.Plans {
		out = append(out, f.wholeReads(c, whole)...)
	}
	return out
}

// What wholeReads finds in plans as EXPLAIN (FORMAT JSON) writes them
// (unit tier).
func TestWholeReadsOfAPlan(t *testing.T) {
	f := schemaFacts{
		growing: map[string]bool{"inbox_messages": true, "pix_credits": true},
		indexTable: map[string]string{"inbox_messages_pkey": "inbox_messages", "inbox_messages_due_idx": "inbox_messages",
			"inbox_messages_done_idx": "inbox_messages", "psp_catchup_pkey": "psp_catchup"},
		partialShare: map[string]float64{"inbox_messages_due_idx": 0.001, "inbox_messages_done_idx": 0.99},
	}
	for name, c := range map[string]struct {
		plan  string
		whole []string
		want  []string
	}{
		"a key's row": {plan: `{"Node Type": "Index Scan", "Relation Name": "inbox_messages", "Index Name": "inbox_messages_pkey",
			"Index Cond": "(end_to_end_id = $1)"}`},
		"a growing table scanned": {plan: `{"Node Type": "Seq Scan", "Relation Name": "inbox_messages"}`,
			want: []string{"Seq Scan on inbox_messages"}},
		"a growing table scanned on purpose": {plan: `{"Node Type": "Seq Scan", "Relation Name": "inbox_messages"}`,
			whole: []string{"inbox_messages"}},
		"a bounded table scanned": {plan: `{"Node Type": "Seq Scan", "Relation Name": "psp_catchup"}`},
		"deep in a subplan": {plan: `{"Node Type": "Sort", "Plans": [{"Node Type": "Nested Loop", "Plans": [
			{"Node Type": "Index Scan", "Index Name": "inbox_messages_pkey", "Index Cond": "(end_to_end_id = $1)"},
			{"Node Type": "Aggregate", "Parent Relationship": "SubPlan", "Plans": [
				{"Node Type": "Seq Scan", "Relation Name": "pix_credits", "Parallel Aware": true}]}]}]}`,
			want: []string{"Seq Scan on pix_credits"}},
		"every entry of an index": {plan: `{"Node Type": "Index Only Scan", "Relation Name": "inbox_messages", "Index Name": "inbox_messages_pkey"}`,
			want: []string{"Index Only Scan of inbox_messages_pkey on inbox_messages with no index condition: every entry"}},
		"the live edge's partial index": {plan: `{"Node Type": "Bitmap Heap Scan", "Relation Name": "inbox_messages", "Plans": [
			{"Node Type": "Bitmap Index Scan", "Index Name": "inbox_messages_due_idx"}]}`},
		"the history's partial index": {plan: `{"Node Type": "Bitmap Heap Scan", "Relation Name": "inbox_messages", "Plans": [
			{"Node Type": "Bitmap Index Scan", "Index Name": "inbox_messages_done_idx"}]}`,
			want: []string{"Bitmap Index Scan of inbox_messages_done_idx on inbox_messages with no index condition: a partial index holding 99% of the table"}},
		"a range of the history's partial index": {plan: `{"Node Type": "Index Scan", "Relation Name": "inbox_messages",
			"Index Name": "inbox_messages_done_idx", "Index Cond": "(processed_at < (now() - $1))"}`},
	} {
		var n planNode
		require.NoError(t, json.Unmarshal([]byte(c.plan), &n), name)
		require.Equal(t, c.want, f.wholeReads(n, c.whole), name)
	}
}

// A saga package's classes are read from its testdata/plans.txt; a line
// that names no runner, or a statement twice, is refused.
func TestSagaPlans(t *testing.T) {
	got, err := sagaPlans(fstest.MapFS{
		"one/testdata/plans.txt": {Data: []byte("# the one saga\none.Get  on-request\none.Claim periodic # its dispatcher\n\n")},
		"two/testdata/plans.txt": {Data: []byte("two.Lock per-pix\n")},
		"two/other.txt":          {Data: []byte("not read")},
	})
	require.NoError(t, err)
	require.Equal(t, map[string]statementPlan{"one.Get": checked(onRequest), "one.Claim": checked(periodic), "two.Lock": checked(perPIX)}, got)
	for _, bad := range []string{"one.Get sometimes\n", "one.Get\n", "one.Get per-pix\none.Get periodic\n"} {
		_, err := sagaPlans(fstest.MapFS{"one/testdata/plans.txt": {Data: []byte(bad)}})
		require.Error(t, err, "%q", bad)
	}
}
