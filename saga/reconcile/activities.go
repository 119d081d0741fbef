package reconcile

import (
	"context"
	"log/slog"

	"github.com/pixbank/pix/activities"
)

// ErrTypeBooksUnbalanced is the type of the error a reconciliation run
// ends with when the books don't balance: the run shows failed in the
// Temporal UI, next to the metric and the log line.
const ErrTypeBooksUnbalanced = "BooksUnbalanced"

// Activities are the reconciliation's activity and its dependencies. Its
// method name is the activity's recorded name: never rename it.
type Activities struct {
	Store  *Store
	Logger *slog.Logger
	// Metrics are the reconciliation's gauges (nil: none).
	Metrics *Metrics
}

// ReconcileBooks checks the books (Store.Reconcile), publishes what it
// found as the reconciliation's gauges, and logs any difference as an
// error. It reports; it never fixes money.
func (a *Activities) ReconcileBooks(ctx context.Context) (Reconciliation, error) {
	r, err := a.Store.Reconcile(ctx)
	if err != nil {
		return Reconciliation{}, activities.TechnicalFailure(err)
	}
	a.Metrics.Reconciled(r)
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
