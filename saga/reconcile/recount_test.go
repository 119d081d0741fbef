package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/saga/reconcile"
	refundsaga "github.com/pixbank/pix/saga/refund"
)

// refusedByTheBooks runs sql and requires the books' triggers (0024,
// 0031) to refuse it.
func refusedByTheBooks(t *testing.T, s *db.Store, sql string, args ...any) {
	t.Helper()
	_, err := s.Pool().Exec(context.Background(), sql, args...)
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "%s: %v", sql, err)
	require.Equal(t, "23000", pgErr.Code, sql)
}

// pastTheTriggers runs statements in one transaction with the triggers
// off (session_replication_role = replica: a pg_restore
// --disable-triggers, a logical replication's apply, scripts/history.sql),
// where no trigger of the books refuses anything: what only a recount
// finds.
func pastTheTriggers(t *testing.T, s *db.Store, statements ...string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, pgx.BeginFunc(ctx, s.Pool(), func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
			return err
		}
		for _, sql := range statements {
			if _, err := tx.Exec(ctx, sql); err != nil {
				return fmt.Errorf("%s: %w", sql, err)
			}
		}
		return nil
	}))
}

// reconcileWithin runs the reconciliation within lim.
func reconcileWithin(t *testing.T, s *db.Store, lim reconcile.Limits) reconcile.Reconciliation {
	t.Helper()
	r, err := reconcile.NewStore(s).ReconcileWithin(context.Background(), lim)
	require.NoError(t, err)
	return r
}

// queryInt64 is sql's one number.
func queryInt64(t *testing.T, s *db.Store, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	require.NoError(t, s.Pool().QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

// settledRight counts the accounts whose settled sum is not their
// movements below the checkpoint (a movement from before 0024 is below
// every one).
const settledWrong = `SELECT count(*) FROM reconcile_settled r
	WHERE r.settled_cents <> COALESCE((SELECT sum(m.amount_cents) FROM account_movements m WHERE m.account_id = r.account_id
		AND (m.xact_id IS NULL OR m.xact_id < (SELECT settled_before FROM reconcile_checkpoint))), 0)`

// oneAccountARun recounts one account in full a run (its one movement is
// the budget), besides those the comparison flags: every account within
// as many runs as there are accounts.
var oneAccountARun = reconcile.Limits{RecountMovements: 1, RecountAccounts: 1_000, DoneRows: 1_000}

// The settled sums are trusted only until the rotating recount comes
// round: a balance changed with its account's settled sum past the guard,
// and a settled movement changed past the append-only trigger, are
// reported within one round of the recount (here one account a run: six
// runs), then at every run until mended. A settled sum that is not its
// account's movements is reported too (settled_mismatch), never put right
// in place (0039): one written alone past the guard at once (the
// comparison flags its account, whose recount in full judges it), one
// written with its balance or under a changed movement when the recount
// comes round; once the books are mended, reconcile_reset() counts them
// again.
func TestReconcileRecountFindsWhatWasWrittenPastTheGuards(t *testing.T) {
	s := dbtest.New(t)
	const accounts = 6
	var credits []string
	for i := 1; i <= accounts; i++ {
		dbtest.OpenAccount(t, s, fmt.Sprintf("acc-%d", i), 100_000)
		credits = append(credits, dbtest.CreditNth(t, s, i, fmt.Sprintf("acc-%d", i), 1_000))
	}
	run := func() reconcile.Reconciliation { return reconcileWithin(t, s, oneAccountARun) }
	for range accounts + 1 {
		require.True(t, run().Balanced())
	}
	// Every credit settled (another test's transaction may hold the
	// snapshots' xmin back a while): a credit changed while still live is
	// no settled movement, and its settled sum no witness of it.
	require.True(t, reconcileSettled(t, s).Balanced())
	require.Zero(t, queryInt64(t, s, settledWrong))

	// The guard refuses any write to the checkpoint but the run's.
	refusedByTheBooks(t, s, `UPDATE reconcile_settled SET settled_cents = settled_cents + 5000 WHERE account_id = 'acc-2'`)
	refusedByTheBooks(t, s, `INSERT INTO reconcile_settled VALUES ('acc-x', 0)`)
	refusedByTheBooks(t, s, `DELETE FROM reconcile_settled`)
	refusedByTheBooks(t, s, `TRUNCATE reconcile_settled`)
	refusedByTheBooks(t, s, `UPDATE reconcile_checkpoint SET settled_before = NULL`)

	pastTheTriggers(t, s,
		// 5,000 centavos in acc-2's balance, with no movement behind them,
		// and in its settled sum.
		`UPDATE accounts SET balance_cents = balance_cents + 5000 WHERE id = 'acc-2'`,
		`UPDATE reconcile_settled SET settled_cents = settled_cents + 5000 WHERE account_id = 'acc-2'`,
		// acc-5's settled credit of 1,000 now says 100.
		`UPDATE pix_credits SET amount_cents = 100 WHERE end_to_end_id = '`+credits[4]+`'`,
		// acc-4's settled sum alone.
		`UPDATE reconcile_settled SET settled_cents = settled_cents - 7 WHERE account_id = 'acc-4'`)
	full, err := reconcile.NewStore(s).UnbalancedAccounts(context.Background(), "")
	require.NoError(t, err)
	require.Equal(t, []string{"acc-2", "acc-5"}, full, "the books are wrong in two accounts")

	found, mismatched := map[string]int{}, map[string]int{}
	for i := 1; i <= accounts; i++ {
		r := run()
		for _, id := range r.UnbalancedAccounts {
			if _, ok := found[id]; !ok {
				found[id] = i
			}
		}
		for _, id := range r.SettledMismatch {
			if _, ok := mismatched[id]; !ok {
				mismatched[id] = i
			}
		}
	}
	t.Logf("found at runs %v, settled sums wrong at runs %v", found, mismatched)
	require.ElementsMatch(t, []string{"acc-2", "acc-5"}, mapKeys(found), "each found within one round of the recount")
	require.ElementsMatch(t, []string{"acc-2", "acc-4", "acc-5"}, mapKeys(mismatched), "each wrong settled sum found within one round")
	require.Equal(t, 1, mismatched["acc-4"], "a settled sum written alone is found at the next run")
	require.Equal(t, int64(3), queryInt64(t, s, settledWrong), "no settled sum put right in place")
	for range 2 {
		r := run()
		require.Equal(t, []string{"acc-2", "acc-5"}, r.UnbalancedAccounts, "and found at every run after")
		require.Equal(t, []string{"acc-2", "acc-4", "acc-5"}, r.SettledMismatch, "and found at every run after")
	}

	pastTheTriggers(t, s, `UPDATE accounts SET balance_cents = balance_cents - 5000 WHERE id = 'acc-2'`,
		`UPDATE pix_credits SET amount_cents = 1000 WHERE end_to_end_id = '`+credits[4]+`'`)
	r := run()
	require.Empty(t, r.UnbalancedAccounts, "the books mended")
	require.Equal(t, []string{"acc-2", "acc-4"}, r.SettledMismatch, "the settled sums written past the guard stay wrong until counted again")
	_, err = s.Pool().Exec(context.Background(), `SELECT reconcile_reset()`)
	require.NoError(t, err)
	for i := 0; !run().Complete(); i++ {
		require.Less(t, i, accounts+1, "counted again within a round")
	}
	for range 2 {
		require.True(t, run().Balanced(), "mended")
	}
	require.Zero(t, queryInt64(t, s, settledWrong))
}

func mapKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// What a check reads of a movement once and trusts after (I3, I9) never
// changes: a credit's and a devolução's end_to_end_id, a devolução's
// status once reversed (0024's triggers). Changed past the triggers, the
// rotating recounts find it: a devolução back from reversed when its
// account is recounted (I9: the devoluções of every PIX of it), a credit
// under another key when the done rows' check comes to its done row (I3).
func TestTheChecksTrustNothingTheTriggersLetChange(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 0)
	dbtest.OpenAccount(t, s, "acc-2", 0)
	e2e := dbtest.CreditNth(t, s, 1, "acc-1", 10_000)
	first, err := refund(t, s, e2e, 6_000, anyone)
	require.NoError(t, err)
	_, err = refundsaga.NewStore(s).ReverseRefund(ctx, first.ID, "psp refused", false)
	require.NoError(t, err)
	second, err := refund(t, s, e2e, 6_000, anyone)
	require.NoError(t, err)
	moved := dbtest.CreditNth(t, s, 2, "acc-2", 3_000)
	for n := 3; n <= 5; n++ {
		dbtest.CreditNth(t, s, n, "acc-2", 100)
	}
	// One account and one done row a run.
	lim := reconcile.Limits{RecountMovements: 1, RecountAccounts: 1_000, DoneRows: 1}
	run := func() reconcile.Reconciliation { return reconcileWithin(t, s, lim) }
	for range 6 {
		require.True(t, run().Balanced())
	}

	refusedByTheBooks(t, s, `UPDATE pix_refunds SET status = 'returned' WHERE id = $1`, first.ID)
	refusedByTheBooks(t, s, `UPDATE pix_refunds SET status = 'debited', dispatch_due_at = now() WHERE id = $1`, first.ID)
	refusedByTheBooks(t, s, `UPDATE pix_refunds SET end_to_end_id = $2 WHERE id = $1`, second.ID, dbtest.E2EID(98))
	refusedByTheBooks(t, s, `UPDATE pix_credits SET end_to_end_id = $2 WHERE end_to_end_id = $1`, moved, dbtest.E2EID(99))
	_, err = s.Pool().Exec(ctx, `UPDATE pix_refunds SET status = 'reversed' WHERE id = $1`, first.ID)
	require.NoError(t, err, "reversed to reversed changes nothing")

	pastTheTriggers(t, s, `UPDATE pix_refunds SET status = 'returned' WHERE id = '`+first.ID+`'`,
		`UPDATE pix_credits SET end_to_end_id = '`+dbtest.E2EID(99)+`' WHERE end_to_end_id = '`+moved+`'`)
	over, doneWithout := 0, 0
	for i := 1; i <= 6 && (over == 0 || doneWithout == 0); i++ {
		r := run()
		if over == 0 && slices.Contains(r.RefundsOverCredit, e2e) {
			over = i
		}
		if doneWithout == 0 && slices.Contains(r.DoneWithoutCredit, moved) {
			doneWithout = i
		}
	}
	t.Logf("the devolução back from reversed found at run %d, the done row whose credit moved at run %d", over, doneWithout)
	require.NotZero(t, over, "the PIX over its credit is found within a round of the accounts' recount")
	require.NotZero(t, doneWithout, "the done row without its credit is found within a round of the done rows' check")
	r := run()
	require.Equal(t, []string{e2e}, r.RefundsOverCredit, "and again at every run")
	require.Equal(t, []string{moved}, r.DoneWithoutCredit)
}

// The done rows are read from the last run's snapshot xmin on, by the
// transaction that made them done (0031's done_xact), never by a clock: a
// row made done with a processed_at an hour behind (a server whose clock
// is behind), a done row moved to another key, and a row whose done_xact
// a script wrote are all read by the next run.
func TestReconcileReadsTheDoneRowsByTransaction(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 100_000)
	credited := dbtest.CreditNth(t, s, 1, "acc-1", 1_000)
	for n := 2; n <= 3; n++ {
		_, err := s.Receive(ctx, dbtest.Notice(dbtest.E2EID(n), "acc-1", 2_000))
		require.NoError(t, err)
	}
	// The done rows' rotating check reads one row a run, and has gone
	// round once: only the reading by transaction finds the rows below.
	lim := reconcile.Limits{RecountMovements: 1_000, RecountAccounts: 1_000, DoneRows: 1}
	for range 3 {
		require.True(t, reconcileWithin(t, s, lim).Balanced())
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := s.Pool().Exec(ctx, sql, args...)
		require.NoError(t, err)
	}
	exec(`UPDATE inbox_messages SET status = 'done', dispatch_due_at = NULL, processed_at = clock_timestamp() - interval '1 hour'
		WHERE end_to_end_id = $1`, dbtest.E2EID(2))
	require.Equal(t, []string{dbtest.E2EID(2)}, reconcileWithin(t, s, lim).DoneWithoutCredit)

	exec(`UPDATE inbox_messages SET status = 'done', dispatch_due_at = NULL, processed_at = now(), done_xact = '1'
		WHERE end_to_end_id = $1`, dbtest.E2EID(3))
	var stamped string
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT done_xact::text FROM inbox_messages WHERE end_to_end_id = $1`, dbtest.E2EID(3)).Scan(&stamped))
	require.NotEqual(t, "1", stamped, "the trigger stamps the transaction that made it done, whatever was written")
	require.Equal(t, []string{dbtest.E2EID(2), dbtest.E2EID(3)}, reconcileWithin(t, s, lim).DoneWithoutCredit)

	exec(`UPDATE inbox_messages SET end_to_end_id = $2 WHERE end_to_end_id = $1`, credited, dbtest.E2EID(77))
	require.Equal(t, []string{dbtest.E2EID(2), dbtest.E2EID(3), dbtest.E2EID(77)}, reconcileWithin(t, s, lim).DoneWithoutCredit)
}

// The first run after migration 0024 (or after reconcile_reset) reads the
// books' history in bounded parts: each run recounts about its budget of
// movements (accounts whose history is not counted yet first) and checks
// its part of the done rows; an account not counted yet is not compared
// (unchecked), never judged on part of its movements, though credits come
// in meanwhile; an account whose balance is wrong is reported from the run
// that counts it on; the round ends when every account is counted and
// every done row checked.
func TestReconcileCountsTheHistoryPartByPart(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	const accounts, perAccount = 20, 3
	// The history as 0024 and 0031 find it: credits from before them
	// (xact_id NULL) with their done inbox rows (done_xact NULL), written
	// as scripts/history.sql writes it; acc-17's balance is 1 centavo off
	// and one done row, of acc-4, has no credit.
	pastTheTriggers(t, s,
		fmt.Sprintf(`INSERT INTO accounts (id, owner_name, opening_balance_cents, balance_cents)
			SELECT 'acc-' || lpad(a::text, 2, '0'), 'x', 1000, 1000 + %d * 100 + (a = 17)::int FROM generate_series(1, %d) a`, perAccount, accounts),
		fmt.Sprintf(`CREATE TEMP TABLE h ON COMMIT DROP AS SELECT 'acc-' || lpad((1 + i %% %d)::text, 2, '0') AS account_id,
			'E12345678202611291200' || lpad(i::text, 11, '0') AS e2e FROM generate_series(1, %d) i`, accounts, accounts*perAccount),
		`INSERT INTO pix_credits (end_to_end_id, account_id, amount_cents, balance_after_cents, xact_id)
			SELECT e2e, account_id, 100, 0, NULL FROM h`,
		`INSERT INTO inbox_messages (end_to_end_id, account_id, amount_cents, payload, status, processed_at)
			SELECT e2e, account_id, 100, '{}'::jsonb, 'done', now() FROM h
			UNION ALL SELECT 'E12345678202611291200' || lpad('9999', 11, '0'), 'acc-04', 100, '{}', 'done', now()`)
	lost := "E12345678202611291200" + fmt.Sprintf("%011d", 9999)
	lim := reconcile.Limits{RecountMovements: 10, RecountAccounts: 1_000, DoneRows: 8}

	counted := func(id string) bool {
		return queryInt64(t, s, `SELECT count(*) FROM reconcile_settled WHERE account_id = $1`, id) == 1
	}
	var r reconcile.Reconciliation
	runs := 0
	for n := 100; ; n++ {
		runs++
		require.LessOrEqual(t, runs, 20, "the history is counted within its bound")
		dbtest.CreditNth(t, s, n, fmt.Sprintf("acc-%02d", 1+n%accounts), 10) // the books move on meanwhile
		wasCounted := counted("acc-17")
		r = reconcileWithin(t, s, lim)
		t.Logf("run %d: %d accounts (%d movements) recounted, %d unchecked, done rows' first round over: %v; unbalanced %v, done without credit %v",
			runs, r.Progress.RecountedAccounts, r.Progress.RecountedMovements, r.Progress.UncheckedAccounts, !r.Progress.DoneHistoryPending,
			r.UnbalancedAccounts, r.DoneWithoutCredit)
		require.LessOrEqual(t, r.Progress.RecountedMovements, lim.RecountMovements+2*(perAccount+1),
			"a run reads its budget of movements, at most one account beyond it, and one account of the rotation")
		if wasCounted || counted("acc-17") {
			require.Equal(t, []string{"acc-17"}, r.UnbalancedAccounts, "reported from the run that counts it")
		} else {
			require.Empty(t, r.UnbalancedAccounts, "an account not counted is never judged on part of its movements")
		}
		if r.Complete() {
			break
		}
	}
	require.GreaterOrEqual(t, runs, accounts*perAccount/int(lim.RecountMovements), "in parts, not in one run")
	require.Equal(t, []string{lost}, r.DoneWithoutCredit)
	require.Zero(t, queryInt64(t, s, settledWrong))
	require.Zero(t, queryInt64(t, s, `SELECT count(*) FROM accounts a WHERE NOT EXISTS (SELECT 1 FROM reconcile_settled r WHERE r.account_id = a.id)`))

	// The documented reset, one transaction: every account counted again.
	_, err := s.Pool().Exec(ctx, `SELECT reconcile_reset()`)
	require.NoError(t, err)
	r = reconcileWithin(t, s, lim)
	require.False(t, r.Complete())
	require.Greater(t, r.Progress.UncheckedAccounts, accounts/2)
	for i := 0; !r.Complete(); i++ {
		require.Less(t, i, 20)
		r = reconcileWithin(t, s, lim)
	}
	require.Equal(t, []string{"acc-17"}, r.UnbalancedAccounts)
	require.Equal(t, []string{lost}, r.DoneWithoutCredit)
	require.Zero(t, queryInt64(t, s, settledWrong))
}

// A run that finds nothing new, and whose recount finds every settled sum
// right, writes nothing (I12): not the checkpoint, not a settled sum.
// (With more accounts than one run recounts, a run writes where its
// rotation stopped: its progress.)
func TestReconcileThatFindsNothingNewWritesNothing(t *testing.T) {
	s := dbtest.NewWithAccount(t, "acc-1", 100_000)
	dbtest.OpenAccount(t, s, "acc-2", 100_000)
	dbtest.CreditNth(t, s, 1, "acc-1", 1_000)
	dbtest.CreditNth(t, s, 2, "acc-2", 2_000)
	for range 3 {
		require.True(t, reconcileOK(t, s).Balanced())
	}
	versions := func() (v string) {
		require.NoError(t, s.Pool().QueryRow(context.Background(),
			`SELECT (SELECT xmin::text FROM reconcile_checkpoint) || ' ' || (SELECT string_agg(xmin::text, ' ' ORDER BY account_id) FROM reconcile_settled)`).Scan(&v))
		return v
	}
	reconcileSettled(t, s)
	before := versions()
	for range 3 {
		r := reconcileOK(t, s)
		require.True(t, r.Balanced())
		require.True(t, r.Complete())
		require.Equal(t, 2, r.Progress.RecountedAccounts, "every account recounted, and found right")
	}
	require.Equal(t, before, versions(), "idle runs rewrote the checkpoint or a settled sum")
	dbtest.CreditNth(t, s, 3, "acc-1", 1)
	reconcileSettled(t, s)
	require.NotEqual(t, before, versions(), "a run that settles something writes it")
}

// Runs at once (the Schedule's, pixctl reconcile's, GET /admin/reconcile's)
// while credits commit take turns (0024's lock, before their snapshot): none
// fails on contention, each starts from the checkpoint the one before it
// left, and every movement below the checkpoint is settled exactly once.
func TestConcurrentRunsTakeTurns(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	for _, a := range []string{"acc-1", "acc-2", "acc-3"} {
		dbtest.OpenAccount(t, s, a, 100_000)
	}
	stop := make(chan struct{})
	var writer sync.WaitGroup
	writer.Add(1)
	go func() {
		defer writer.Done()
		for n := 1; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			dbtest.CreditNth(t, s, n, []string{"acc-1", "acc-2", "acc-3"}[n%3], int64(n))
		}
	}()
	var runs sync.WaitGroup
	errs := make(chan error, 40)
	for range 4 {
		runs.Add(1)
		go func() {
			defer runs.Done()
			for range 10 {
				r, err := reconcile.NewStore(s).Reconcile(ctx)
				if err == nil && !r.Balanced() {
					err = fmt.Errorf("a run found differences in balanced books: %+v", r)
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	runs.Wait()
	close(stop)
	writer.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	require.Zero(t, queryInt64(t, s, settledWrong), "settled sums equal the movements below the checkpoint")
	require.True(t, reconcileOK(t, s).Balanced())
}
