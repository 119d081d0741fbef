package reconcile_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/saga/reconcile"
)

// history writes the books' history as scripts/history.sql does (past the
// triggers, from before 0024: xact_id NULL): accounts acc-001… with
// perAccount credits of 100 each, the account numbered big with extra
// more. It returns the accounts and the movements.
func history(t *testing.T, s *db.Store, accounts, perAccount, big, extra int) ([]string, int64) {
	t.Helper()
	movements := func(a string) string {
		return fmt.Sprintf("%d + CASE WHEN %s = %d THEN %d ELSE 0 END", perAccount, a, big, extra)
	}
	pastTheTriggers(t, s,
		fmt.Sprintf(`INSERT INTO accounts (id, owner_name, opening_balance_cents, balance_cents)
			SELECT 'acc-' || lpad(a::text, 3, '0'), 'x', 1000, 1000 + 100 * (%s) FROM generate_series(1, %d) a`, movements("a"), accounts),
		fmt.Sprintf(`INSERT INTO pix_credits (end_to_end_id, account_id, amount_cents, balance_after_cents, xact_id)
			SELECT 'E12345678202611291200' || lpad((row_number() OVER ())::text, 11, '0'), 'acc-' || lpad(a::text, 3, '0'), 100, 0, NULL
			FROM generate_series(1, %d) a CROSS JOIN LATERAL generate_series(1, %s) m`, accounts, movements("a")))
	ids := make([]string, accounts)
	for i := range ids {
		ids[i] = fmt.Sprintf("acc-%03d", i+1)
	}
	return ids, int64(accounts*perAccount + extra)
}

// A run of the reconciliation recounts its budget of movements whatever
// the size of the books' history: at least the budget (the history holds
// more), at most the budget and the largest account (an account is
// recounted whole, the one the budget ran out on included), so its cost is
// flat as the history grows. What grows instead is the rotation: every
// account is recounted in full within ceil(movements / budget) + 1 runs,
// so balances changed past the books' guards in every account at once
// (each with its settled sum, which only a recount in full finds) are all
// found within that many runs, each mended (its balance and its settled
// sum, which no run puts right) as soon as it is reported.
func TestReconcileRunReadsItsBudgetWhateverTheHistory(t *testing.T) {
	const budget = 60
	lim := reconcile.Limits{RecountMovements: budget, RecountAccounts: 1_000, DoneRows: 1_000}
	for _, c := range []struct {
		name                             string
		accounts, perAccount, big, extra int
	}{
		{"3x the budget", 36, 5, 0, 0},
		{"an account over the budget", 40, 5, 17, 3 * budget},
		{"10x the budget", 150, 4, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := dbtest.New(t)
			accounts, movements := history(t, s, c.accounts, c.perAccount, c.big, c.extra)
			largest := int64(c.perAccount + c.extra)
			require.Greater(t, movements, int64(budget))
			run := func() reconcile.Reconciliation {
				t.Helper()
				r := reconcileWithin(t, s, lim)
				read := r.Progress.RecountedMovements
				require.GreaterOrEqual(t, read, int64(budget), "a run recounts its budget when the history holds more")
				require.LessOrEqual(t, read, budget+largest, "a run recounts its budget, and at most the account it ran out on beyond it")
				return r
			}
			for i := 0; !run().Complete(); i++ {
				require.Less(t, i, int(movements/budget)+2, "the history is counted within its bound")
			}
			pastTheTriggers(t, s, `UPDATE accounts SET balance_cents = balance_cents + 1`,
				`UPDATE reconcile_settled SET settled_cents = settled_cents + 1`)
			bound := int((movements+budget-1)/budget) + 1
			found := map[string]int{}
			for i := 1; i <= bound && len(found) < len(accounts); i++ {
				var mend []string
				r := run()
				for _, id := range r.UnbalancedAccounts {
					if _, ok := found[id]; !ok {
						found[id] = i
						mend = append(mend, "'"+id+"'")
					}
				}
				require.ElementsMatch(t, r.UnbalancedAccounts, r.SettledMismatch, "each with its settled sum")
				if len(mend) > 0 {
					in := ` IN (` + strings.Join(mend, ", ") + `)`
					pastTheTriggers(t, s, `UPDATE accounts SET balance_cents = balance_cents - 1 WHERE id`+in,
						`UPDATE reconcile_settled SET settled_cents = settled_cents - 1 WHERE account_id`+in)
				}
			}
			t.Logf("%d movements, %d accounts: every account recounted within %d runs (the bound %d)",
				movements, len(accounts), max(mapValuesMax(found), 0), bound)
			require.ElementsMatch(t, accounts, mapKeys(found), "every account recounted within ceil(movements / budget) + 1 runs")
			require.True(t, run().Balanced(), "mended")
			require.Zero(t, queryInt64(t, s, settledWrong))
		})
	}
}

func mapValuesMax(m map[string]int) int {
	most := 0
	for _, v := range m {
		most = max(most, v)
	}
	return most
}

// The rotation's rounds are timed by the runs (0036): a run reports how
// long the round under way has gone and how long the last whole one took;
// a run that recounts every account leaves no round under way. A round
// that began 8 days ago (its start moved back past the guard) is reported
// as such until a run finishes it, which reports it as the last round.
func TestReconcileTimesTheRotationsRounds(t *testing.T) {
	s := dbtest.New(t)
	const accounts = 6
	history(t, s, accounts, 1, 0, 0)
	run := func() reconcile.Reconciliation { return reconcileWithin(t, s, oneAccountARun) }
	for i := 0; !run().Complete(); i++ {
		require.Less(t, i, accounts+1)
	}
	const week = 7 * 24 * time.Hour
	pastTheTriggers(t, s, `UPDATE reconcile_checkpoint SET recount_round_began = now() - interval '8 days', recount_last_round = NULL`)
	var r reconcile.Reconciliation
	turned := 0
	for i := 1; i <= accounts+1 && turned == 0; i++ {
		r = run()
		if r.Progress.LastRecountRoundSeconds > 0 {
			turned = i
			break
		}
		require.Greater(t, r.Progress.RecountRoundSeconds, week.Seconds(), "the round under way began 8 days ago")
	}
	require.NotZero(t, turned, "a round of %d accounts, one a run, ends within %d runs", accounts, accounts+1)
	require.Greater(t, r.Progress.LastRecountRoundSeconds, week.Seconds(), "the round that ended took 8 days")
	require.Less(t, r.Progress.RecountRoundSeconds, time.Hour.Seconds(), "the next began at this run")
	for i := 0; ; i++ {
		require.Less(t, i, accounts+1, "the next round ends within %d runs", accounts+1)
		if r = run(); r.Progress.LastRecountRoundSeconds < week.Seconds() {
			break
		}
	}
	require.Greater(t, r.Progress.LastRecountRoundSeconds, 0.0, "a round of several runs took some time")
	require.Less(t, r.Progress.LastRecountRoundSeconds, time.Hour.Seconds())

	r = reconcileWithin(t, s, reconcile.DefaultLimits)
	require.Equal(t, accounts, r.Progress.RecountedAccounts, "every account recounted by one run")
	require.Zero(t, r.Progress.RecountRoundSeconds, "no round under way")
	require.Zero(t, r.Progress.LastRecountRoundSeconds, "the last round took one run")
}
