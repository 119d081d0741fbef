package activities

import (
	"context"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/metrics"
)

// ErrTypeBooksUnbalanced is the type of the error a reconciliation run
// ends with when the books don't balance: the run shows failed in the
// Temporal UI, next to the metric and the log line.
const ErrTypeBooksUnbalanced = "BooksUnbalanced"

// ReconcileBooks checks the books (db.Store.Reconcile), publishes what it
// found as the worker's reconciliation gauges, and logs any difference as
// an error. It reports; it never fixes money.
func (a *Activities) ReconcileBooks(ctx context.Context) (db.Reconciliation, error) {
	r, err := a.Store.Reconcile(ctx)
	if err != nil {
		return db.Reconciliation{}, TechnicalFailure(err)
	}
	a.Metrics.Reconciled(reconcileGauges(r))
	if !r.Fenced() {
		a.Logger.ErrorContext(ctx, "reconciliation: A FENCE OF THE BOOKS IS DOWN; what it refuses may happen unseen until the rotating recount comes round, see docs/runbooks.md \"PixReconcileFenceDown\"",
			"fences_down", r.FencesDown)
	}
	switch {
	case r.Balanced() && r.Complete():
		a.Logger.InfoContext(ctx, "reconciliation: the books balance", "progress", r.Progress)
	case r.Balanced():
		a.Logger.InfoContext(ctx, "reconciliation: no difference in what was checked; the history is still being counted, part by part at every run",
			"progress", r.Progress)
	default:
		a.Logger.ErrorContext(ctx, "reconciliation: THE BOOKS DO NOT BALANCE; money is not fixed automatically, see docs/operations.md \"On call\"",
			"unbalanced_accounts", r.UnbalancedAccounts, "unbalanced_holds", r.UnbalancedHolds, "done_without_credit", r.DoneWithoutCredit, "credit_without_done", r.CreditWithoutDone, "settled_mismatch", r.SettledMismatch)
	}
	return r, nil
}

// reconcileGauges is what the reconciliation's gauges show of r.
func reconcileGauges(r db.Reconciliation) metrics.Reconciliation {
	p := r.Progress
	return metrics.Reconciliation{
		UnbalancedAccounts:          len(r.UnbalancedAccounts),
		UnbalancedHolds:             len(r.UnbalancedHolds),
		DoneWithoutCredit:           len(r.DoneWithoutCredit),
		CreditWithoutDone:           len(r.CreditWithoutDone),
		RefundsOverCredit:           len(r.RefundsOverCredit),
		RefundContradictions:        len(r.RefundContradictions),
		SettledMismatch:             len(r.SettledMismatch),
		FencesDown:                  len(r.FencesDown),
		UncheckedAccounts:           p.UncheckedAccounts,
		DoneHistoryPending:          p.DoneHistoryPending,
		LiveMovements:               p.LiveMovements,
		XminAge:                     p.XminAge,
		RecountRoundSeconds:         p.RecountRoundSeconds,
		LastRecountRoundSeconds:     p.LastRecountRoundSeconds,
		ExpectedRecountRoundSeconds: p.ExpectedRecountRoundSeconds,
	}
}
