package reconcile

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/metrics"
)

// The reconciliation's gauges show each list of a run's result by its
// length, under its own label, and its progress as it is, on the
// process's registry (metrics.New), as when they were the worker's.
func TestReconcileGaugesShowTheRunsFindings(t *testing.T) {
	ids := func(n int) []string { return make([]string, n) }
	r := Reconciliation{
		UnbalancedAccounts: ids(1), UnbalancedHolds: ids(2), DoneWithoutCredit: ids(3), CreditWithoutDone: ids(4),
		RefundsOverCredit: ids(5), RefundContradictions: ids(6), SettledMismatch: ids(7), FencesDown: ids(8),
		Progress: Progress{UncheckedAccounts: 9, DoneHistoryPending: true, LiveMovements: 10, XminAge: 11,
			RecountRoundSeconds: 12.5, LastRecountRoundSeconds: 13.5, ExpectedRecountRoundSeconds: 14.5},
	}
	reg := metrics.New()
	m := newMetrics()
	reg.MustRegister(m.collectors()...)
	m.Reconciled(r)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP pix_reconcile_differences What the last reconciliation found wrong, by kind (unbalanced_accounts, unbalanced_holds, done_without_credit, credit_without_done, refunds_over_credit, refund_contradictions, settled_mismatch: a settled sum not its account's movements, changed past the database's fences); anything but 0 needs a human.
# TYPE pix_reconcile_differences gauge
pix_reconcile_differences{kind="credit_without_done"} 4
pix_reconcile_differences{kind="done_without_credit"} 3
pix_reconcile_differences{kind="refund_contradictions"} 6
pix_reconcile_differences{kind="refunds_over_credit"} 5
pix_reconcile_differences{kind="settled_mismatch"} 7
pix_reconcile_differences{kind="unbalanced_accounts"} 1
pix_reconcile_differences{kind="unbalanced_holds"} 2
`), "pix_reconcile_differences"))
	rec := httptest.NewRecorder()
	metrics.Handler(reg).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, line := range []string{
		`pix_reconcile_fences_down 8`,
		`pix_reconcile_behind{what="unchecked_accounts"} 9`,
		`pix_reconcile_behind{what="done_history_pending"} 1`,
		`pix_reconcile_behind{what="live_movements"} 10`,
		`pix_reconcile_behind{what="xmin_age"} 11`,
		`pix_reconcile_recount_round_seconds{round="current"} 12.5`,
		`pix_reconcile_recount_round_seconds{round="last"} 13.5`,
		`pix_reconcile_recount_expected_round_seconds 14.5`,
	} {
		require.Contains(t, rec.Body.String(), "\n"+line+"\n")
	}
}
