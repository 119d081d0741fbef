package reconcile

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pixbank/pix/saga"
)

// Metrics are the reconciliation's gauges: what the last run found wrong,
// the fences it found down, what it left unchecked, its rotation's rounds
// and when it ran. Registered in every process (the descriptor's
// Collectors), as when they were the worker's; set by the runs of the
// worker's activity. A nil *Metrics publishes nothing.
type Metrics struct {
	differences *prometheus.GaugeVec
	behind      *prometheus.GaugeVec
	round       *prometheus.GaugeVec
	expected    prometheus.Gauge
	fencesDown  prometheus.Gauge
	reconciled  prometheus.Gauge
}

// metricsKey keeps the reconciliation's metrics in a saga.Process.
type metricsKey struct{}

// metricsOf are env's process's metrics: what the descriptor's activity
// publishes into, and its Collectors register (once per process, on its
// registry).
func metricsOf(env saga.Env) *Metrics { return saga.Kept(env.Process, metricsKey{}, newMetrics) }

// newMetrics are the reconciliation's gauges, registered nowhere yet.
func newMetrics() *Metrics {
	return &Metrics{
		differences: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "pix_reconcile_differences",
			Help: "What the last reconciliation found wrong, by kind (unbalanced_accounts, unbalanced_holds, done_without_credit, credit_without_done, refunds_over_credit, refund_contradictions, settled_mismatch: a settled sum not its account's movements, changed past the database's fences); anything but 0 needs a human.",
		}, []string{"kind"}),
		behind: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "pix_reconcile_behind",
			Help: "What the last reconciliation left unchecked and how far behind its checkpoint is, by what: unchecked_accounts (accounts whose history is not counted yet, after migration 0024 or a reset: not compared), done_history_pending (1 while done rows from before 0031 are not all checked), live_movements (movements read above the checkpoint: it grows while a transaction holds the snapshots' xmin back), xmin_age (transaction ids from the run's snapshot xmin to its xmax: the oldest running transaction's age).",
		}, []string{"what"}),
		round: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "pix_reconcile_recount_round_seconds",
			Help: "The last reconciliation's rotating recount of accounts in full, which goes round every account at a constant budget of movements a run (RECONCILE_RECOUNT_MOVEMENTS): by round, current (how long the round under way had gone at that run; 0: the run recounted every account) and last (how long the last whole round took; 0: within one run, or none timed yet). A balance changed past the books' guards is found within about a round; the round grows with the books' history.",
		}, []string{"round"}),
		expected: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pix_reconcile_recount_expected_round_seconds",
			Help: "How long a round of the last reconciliation's rotating recount takes at its budget on books of their size: (the larger of movements / RECONCILE_RECOUNT_MOVEMENTS and accounts / RECONCILE_RECOUNT_ACCOUNTS, from the planner's estimates, + 1) x RECONCILE_INTERVAL. It grows with the books; a round under way well past it is a rotation that does not progress at its budget.",
		}),
		fencesDown: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pix_reconcile_fences_down",
			Help: "The database's fences of the books (append-only triggers of the movements, the settled sums' and the checkpoint's guards and fences, the done rows' stamp) that the last reconciliation found missing, disabled or calling another function, and 1 more when their catalog rows were written since the run before (disabled and enabled again, replaced; a migration); anything but 0 needs a human.",
		}),
		reconciled: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pix_reconcile_last_run_timestamp_seconds",
			Help: "When the last reconciliation finished (Unix time); alert when it grows old.",
		}),
	}
}

// collectors are the gauges, to register.
func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.differences, m.behind, m.round, m.expected, m.fencesDown, m.reconciled}
}

// Reconciled publishes what a run found: each list of r by its length,
// under its own label, and its progress as it is.
func (m *Metrics) Reconciled(r Reconciliation) {
	if m == nil {
		return
	}
	for _, d := range []struct {
		kind string
		ids  []string
	}{
		{"unbalanced_accounts", r.UnbalancedAccounts}, {"unbalanced_holds", r.UnbalancedHolds},
		{"done_without_credit", r.DoneWithoutCredit}, {"credit_without_done", r.CreditWithoutDone},
		{"refunds_over_credit", r.RefundsOverCredit}, {"refund_contradictions", r.RefundContradictions},
		{"settled_mismatch", r.SettledMismatch},
	} {
		m.differences.WithLabelValues(d.kind).Set(float64(len(d.ids)))
	}
	m.fencesDown.Set(float64(len(r.FencesDown)))
	p := r.Progress
	m.behind.WithLabelValues("unchecked_accounts").Set(float64(p.UncheckedAccounts))
	m.behind.WithLabelValues("done_history_pending").Set(map[bool]float64{true: 1}[p.DoneHistoryPending])
	m.behind.WithLabelValues("live_movements").Set(float64(p.LiveMovements))
	m.behind.WithLabelValues("xmin_age").Set(float64(p.XminAge))
	m.round.WithLabelValues("current").Set(p.RecountRoundSeconds)
	m.round.WithLabelValues("last").Set(p.LastRecountRoundSeconds)
	m.expected.Set(p.ExpectedRecountRoundSeconds)
	m.reconciled.SetToCurrentTime()
}
