package reconcile

import (
	"context"
	"embed"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/db"
)

// Reconciliation is what the books say about themselves: every list empty
// means no difference was found; Progress says what was not checked yet.
type Reconciliation struct {
	// UnbalancedAccounts: balance != opening + movements (account_movements, I2).
	UnbalancedAccounts []string `json:"unbalanced_accounts"`
	// UnbalancedHolds: held != the sum of the account's active holds (I11).
	UnbalancedHolds []string `json:"unbalanced_holds"`
	// DoneWithoutCredit: inbox rows done with no pix_credits row (I3).
	DoneWithoutCredit []string `json:"done_without_credit"`
	// CreditWithoutDone: credits whose inbox row exists and is not done (I3).
	CreditWithoutDone []string `json:"credit_without_done"`
	// RefundsOverCredit: PIX whose refunds (but the reversed) and active
	// holds sum to more than their credit (I9, I11).
	RefundsOverCredit []string `json:"refunds_over_credit"`
	// RefundContradictions: final refunds the PSP's latest notice
	// contradicts (returned but NAO_REALIZADO, reversed but DEVOLVIDO).
	RefundContradictions []string `json:"refund_contradictions"`
	// SettledMismatch: accounts recounted in full whose settled sum is not
	// their movements below the checkpoint: a movement already settled, or
	// the settled sum, was changed past the database's fences (0024,
	// 0039). Never put right in place; found again at every run until
	// mended (then reconcile_reset()).
	SettledMismatch []string `json:"settled_mismatch"`
	// FencesDown: the database's fences of the books not in force at this
	// run (a trigger missing, disabled, or calling another function): what
	// they refuse may then happen, and only the rotating recount finds it.
	// Not a difference of the books by itself.
	FencesDown []string `json:"fences_down"`
	// Progress: what this run did not check yet, what it read of the
	// history, and how far behind its checkpoint is.
	Progress Progress `json:"progress"`
}

// Progress is what a run of the reconciliation left unchecked,
// what it read of the history, and how far behind its checkpoint is
// (docs/design.md, "The reconciliation").
type Progress struct {
	// UncheckedAccounts: accounts whose history no run has counted yet
	// (after migration 0024, a reset, or a new account), so not compared
	// by this run; each run counts some, within its limits. Never
	// compared on part of their movements.
	UncheckedAccounts int `json:"unchecked_accounts"`
	// DoneHistoryPending: the first round of the rotating check of the done
	// inbox rows (after migration 0024, or a reset) is not over: the rows
	// made done before the checks by transaction id (0031) that it has not
	// read yet are not checked (I3).
	DoneHistoryPending bool `json:"done_history_pending"`
	// RecountedAccounts, RecountedMovements: the accounts this run
	// recounted in full (I2, and the devoluções of their PIX, I9), and the
	// movements it read for them.
	RecountedAccounts  int   `json:"recounted_accounts"`
	RecountedMovements int64 `json:"recounted_movements"`
	// RecountedAgainMovements: the movements read to recount again, in
	// full and outside the budget, the accounts the last run found wrong
	// (counted in RecountedAccounts, not in RecountedMovements).
	RecountedAgainMovements int64 `json:"recounted_again_movements"`
	// LiveMovements: the movements read above the checkpoint, which no run
	// could settle yet; it grows while a transaction holds the snapshots'
	// xmin back.
	LiveMovements int64 `json:"live_movements"`
	// XminAge: how many transaction ids the run's snapshot xmin is behind
	// its xmax: the age of the oldest transaction still running, which
	// holds the checkpoint back (idle_in_transaction_session_timeout
	// bounds a forgotten one: docs/operations.md).
	XminAge int64 `json:"xmin_age"`
	// RecountRoundSeconds: how long the round under way of the rotating
	// recount of accounts in full had gone at this run (0: this run
	// recounted every account); LastRecountRoundSeconds: how long the last
	// whole round took, from the run that began it to the run that
	// finished it (0: within one run, or none timed yet). Every account
	// is recounted in full once a round, so a balance or a movement
	// changed past the books' guards is found within about a round; with
	// a run's budget constant (Limits), a round grows with the
	// books' history (docs/operations.md, "The reconciliation's rotation").
	RecountRoundSeconds     float64 `json:"recount_round_seconds"`
	LastRecountRoundSeconds float64 `json:"last_recount_round_seconds"`
	// ExpectedRecountRoundSeconds: how long a round of the rotation takes
	// at the run's budget on books of this size (the planner's estimate of
	// the movements and accounts, Limits.Interval a run): the
	// larger of movements / RecountMovements and accounts /
	// RecountAccounts, in runs, plus the one a round ends in. A round
	// under way well past it is a rotation that does not progress at its
	// budget; the books' growth only lengthens it.
	ExpectedRecountRoundSeconds float64 `json:"expected_recount_round_seconds"`
}

// Balanced reports whether nothing was found.
func (r Reconciliation) Balanced() bool {
	return len(r.UnbalancedAccounts) == 0 && len(r.UnbalancedHolds) == 0 && len(r.DoneWithoutCredit) == 0 && len(r.CreditWithoutDone) == 0 &&
		len(r.RefundsOverCredit) == 0 && len(r.RefundContradictions) == 0 && len(r.SettledMismatch) == 0
}

// Fenced reports whether every fence of the books was in force at the run.
func (r Reconciliation) Fenced() bool { return len(r.FencesDown) == 0 }

// Complete reports whether the run checked everything: no account whose
// history is not counted yet, no done row from before the checks by
// transaction id left to read.
func (r Reconciliation) Complete() bool {
	return r.Progress.UncheckedAccounts == 0 && !r.Progress.DoneHistoryPending
}

// Limits bound what one run reads of the books' history, so that
// a run's cost stays the same whatever their size: after migration 0024
// (or a reset) the history is counted part by part, over as many runs as
// it takes, and in steady state every account is recounted in full within
// about (movements / RecountMovements) + 1 runs: a round of the rotation,
// the audit under the database's fences, which grows with the history
// (Progress.RecountRoundSeconds says how long it takes,
// ExpectedRecountRoundSeconds how long it should at these limits).
type Limits struct {
	// RecountMovements: the movements a run's recount of accounts in full
	// reads, at most, but for its last batch, read whole (an account is
	// always recounted whole, in the run's snapshot), and for the one
	// account of the rotation every run recounts whatever its size.
	RecountMovements int64
	// RecountAccounts: the accounts a run recounts, at most (but for that
	// one).
	RecountAccounts int
	// DoneRows: the done inbox rows a run's rotating check reads (every
	// done row is checked within inbox's done rows / DoneRows + 1 runs).
	DoneRows int
	// Interval: how often the runs come (RECONCILE_INTERVAL; 0: the
	// Schedule's default, 15 minutes): not a limit of a run, the time its
	// expected round is told in.
	Interval time.Duration
}

// DefaultLimits are the limits of Reconcile unless the store is given
// others (RECONCILE_RECOUNT_MOVEMENTS, RECONCILE_RECOUNT_ACCOUNTS,
// RECONCILE_DONE_ROWS): a run's recount reads 200,000 movements, as many
// as the growth benchmark's empty tables hold, and its done rows' check
// as many rows, so that a run costs the same on those as on any larger
// books (docs/benchmarks.md, "Growth"); a million made a run 4x slower
// with 10 million PIX of history than on them. What a smaller budget
// costs instead is a longer rotation: 134 million movements take a week
// of 15-minute runs.
var DefaultLimits = Limits{RecountMovements: 200_000, RecountAccounts: 50_000, DoneRows: 200_000}

//go:embed reconcile.sql maintenance.sql refunds.sql
var queryFiles embed.FS

// reconcileSQL holds the statements of reconcile.sql: the reconciliation,
// from its checkpoint. maintenanceSQL and refundSQL hold its checks of the
// inbox's live edge and of the devoluções' notices, each file's name kept
// from db/queries, where they were, so that traces name them as before
// (maintenance.CreditWithoutDone, refunds.Contradictions).
var (
	reconcileSQL struct {
		RepeatableRead, Lock, Snapshot, Checkpoint, Guard, Unbalanced, UnbalancedHolds, New, Settle, Accounts, AccountsOfPrefix,
		Recount, SetSettled, Fences, History, DoneWithoutCredit, DoneRecount, OverCredit, Advance string
	}
	maintenanceSQL struct{ CreditWithoutDone string }
	refundSQL      struct{ Contradictions string }
)

func init() {
	db.BindQueries(queryFiles, "reconcile.sql", &reconcileSQL)
	db.BindQueries(queryFiles, "maintenance.sql", &maintenanceSQL)
	db.BindQueries(queryFiles, "refunds.sql", &refundSQL)
}

// Store is the reconciliation's store: the core's books, read by its own
// statements, and its checkpoint (reconcile_checkpoint, reconcile_settled:
// migrations 0024 on), within its limits.
type Store struct {
	*db.Store
	limits Limits
}

// NewStore returns the reconciliation's store over s, within
// DefaultLimits.
func NewStore(s *db.Store) *Store { return &Store{Store: s, limits: DefaultLimits} }

// WithLimits is the store over the same database within lim (the
// settings': Settings.Limits).
func (s *Store) WithLimits(lim Limits) *Store { return &Store{Store: s.Store, limits: lim} }

// Limits are the limits of s's Reconcile.
func (s *Store) Limits() Limits { return s.limits }

// Reconcile checks the books, from the checkpoint the last run left
// (docs/design.md, "The reconciliation"), within the store's limits
// (DefaultLimits unless WithLimits):
// every counted account's balance against its opening balance, its settled
// sum and its movements since; a slice of the accounts recounted in full
// (those whose history is not counted yet first, then in turn); every
// account's held amount against its active holds; the done inbox rows
// since (and a rotating part of them all), and every pending or failed
// one, against the credits; the devoluções since, those of the accounts
// recounted, and the active holds, against their PIX's credit; the
// contradicted devoluções; the differences the last run found, again; and
// the database's fences of the books (their triggers) in force and
// unchanged since the last run. Its cost follows the accounts, what is new
// and its limits, never the books' history. One REPEATABLE READ transaction, one run at a time (a
// run waits for the one before to commit, then starts from its
// checkpoint); a run that finds nothing new writes nothing. It reports;
// it never fixes money.
func (s *Store) Reconcile(ctx context.Context) (Reconciliation, error) {
	return s.ReconcileWithin(ctx, s.limits)
}

// ReconcileWithin is Reconcile within lim.
func (s *Store) ReconcileWithin(ctx context.Context, lim Limits) (Reconciliation, error) {
	var r Reconciliation
	err := db.InTx(ctx, s.Pool(), func(tx pgx.Tx) error {
		run, err := startRun(ctx, tx, lim)
		if err != nil {
			return fmt.Errorf("reconcile: %w", err)
		}
		if err := run.check(ctx); err != nil {
			return fmt.Errorf("reconcile: %w", err)
		}
		if err := run.write(ctx); err != nil {
			return fmt.Errorf("reconcile: %w", err)
		}
		r = run.r
		return nil
	})
	return r, err
}

// rowsQuerier runs a query of many rows: the pool, or a transaction.
type rowsQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// listStrings is query's one text column, every row ([] for none).
func listStrings(ctx context.Context, q rowsQuerier, query string, args ...any) ([]string, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, db.Classify(fmt.Errorf("query: %w", err))
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, db.Classify(fmt.Errorf("query: %w", err))
	}
	if out == nil {
		out = []string{}
	}
	return out, nil
}

// UnbalancedAccounts returns the accounts (of those whose id starts with
// idPrefix; "" for all) whose balance is not what their movements say:
// opening balance + the sum of its movements (the view account_movements,
// to which every saga that moves money adds its tables; invariant I2),
// each recounted in full as the reconciliation's recount does: the load
// tool's books (tooling/load), whatever the checkpoint.
func (s *Store) UnbalancedAccounts(ctx context.Context, idPrefix string) ([]string, error) {
	var out []string
	err := db.InTx(ctx, s.Pool(), func(tx pgx.Tx) error {
		out = []string{}
		ids, err := listStrings(ctx, tx, reconcileSQL.AccountsOfPrefix, idPrefix)
		if err != nil || len(ids) == 0 {
			return err
		}
		rows, err := tx.Query(ctx, reconcileSQL.Recount, ids, nil, nil)
		if err != nil {
			return fmt.Errorf("recount: %w", err)
		}
		var id string
		var balanced bool
		_, err = pgx.ForEachRow(rows, []any{&id, &balanced, nil, nil, nil, nil}, func() error {
			if !balanced {
				out = append(out, id)
			}
			return nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("check balances: %w", err)
	}
	return out, nil
}
