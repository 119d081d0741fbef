package reconcile

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/db"
)

// reconcileCheckpoint is reconcile_checkpoint's row (migration 0024).
// xid8 values travel as their text: pgx has no type of its own for them.
type reconcileCheckpoint struct {
	settledBefore, recountAfter, doneRecountAfter *string
	doneHistoryChecked                            bool
	doneWithoutCredit, refundsOverCredit          []string
	// recountAgain: the accounts the run found wrong (0039), recounted in
	// full first by the next.
	recountAgain []string
	// fencesSeen: the digest of the fences the run read (0041; nil: none
	// yet).
	fencesSeen *string
	// roundBegan, lastRound time the accounts' rotation (0036): when the
	// round under way began (nil: none spans runs), how long the last
	// whole round took (nil: none timed yet).
	roundBegan *time.Time
	lastRound  *time.Duration
}

// equal says whether c and o are the same row.
func (c reconcileCheckpoint) equal(o reconcileCheckpoint) bool {
	same := func(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	sameTime := (c.roundBegan == nil) == (o.roundBegan == nil) && (c.roundBegan == nil || c.roundBegan.Equal(*o.roundBegan))
	sameRound := (c.lastRound == nil) == (o.lastRound == nil) && (c.lastRound == nil || *c.lastRound == *o.lastRound)
	return same(c.settledBefore, o.settledBefore) && same(c.recountAfter, o.recountAfter) &&
		same(c.doneRecountAfter, o.doneRecountAfter) && c.doneHistoryChecked == o.doneHistoryChecked && slices.Equal(c.doneWithoutCredit, o.doneWithoutCredit) &&
		slices.Equal(c.refundsOverCredit, o.refundsOverCredit) && slices.Equal(c.recountAgain, o.recountAgain) && sameTime && sameRound &&
		same(c.fencesSeen, o.fencesSeen)
}

// recountedAccount is what the recount of one account in full found.
type recountedAccount struct {
	balanced bool
	// below: its movements below the run's xmin; settled: its settled sum
	// as it stands (nil: not counted yet); fresh: what Settle adds to it.
	below   int64
	settled *int64
	fresh   int64
}

// reconcileRun is one run of the reconciliation, in its transaction.
type reconcileRun struct {
	tx  pgx.Tx
	lim Limits
	// xmin is the run's snapshot xmin X; was and next the checkpoint as
	// the run found it and as it leaves it; now the run's time, the
	// database's clock.
	xmin      string
	was, next reconcileCheckpoint
	now       time.Time
	// settle: the movements of [was.settledBefore, xmin) are added to the
	// settled sums (there are some, and sums to add them to).
	settle bool
	// flagged: the counted accounts the comparison with their settled sums
	// found unbalanced; uncounted: the first accounts not counted yet,
	// as many as a run may recount.
	flagged, uncounted []string
	recounted          map[string]recountedAccount
	// again: how many of recounted are the last run's findings, recounted
	// again outside the budget (recountAgain).
	again int
	r     Reconciliation
}

// startRun begins a run in tx: one at a time, its snapshot taken after the
// run before it committed, the checkpoint read, what is new found.
func startRun(ctx context.Context, tx pgx.Tx, lim Limits) (*reconcileRun, error) {
	run := &reconcileRun{tx: tx, lim: lim, recounted: map[string]recountedAccount{}}
	for _, statement := range []string{reconcileSQL.RepeatableRead, reconcileSQL.Lock} {
		if _, err := tx.Exec(ctx, statement); err != nil {
			return nil, err
		}
	}
	if err := tx.QueryRow(ctx, reconcileSQL.Snapshot).Scan(&run.xmin, &run.r.Progress.XminAge); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	was := &run.was
	if err := tx.QueryRow(ctx, reconcileSQL.Checkpoint).Scan(&was.settledBefore, &was.recountAfter, &was.doneRecountAfter,
		&was.doneHistoryChecked, &was.doneWithoutCredit, &was.refundsOverCredit, &was.roundBegan, &was.lastRound, &was.recountAgain, &was.fencesSeen, &run.now); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	run.next = run.was
	var anyNew bool
	if err := tx.QueryRow(ctx, reconcileSQL.New, was.settledBefore, run.xmin).Scan(&run.r.Progress.LiveMovements, &anyNew); err != nil {
		return nil, fmt.Errorf("what is new: %w", err)
	}
	// With nothing new below xmin, the checkpoint stays where it is: the
	// sums below it are the sums below xmin.
	if was.settledBefore == nil || anyNew {
		run.next.settledBefore = &run.xmin
	}
	run.settle = was.settledBefore != nil && anyNew
	if err := run.readFences(ctx); err != nil {
		return nil, err
	}
	var movements, accounts int64
	if err := tx.QueryRow(ctx, reconcileSQL.History).Scan(&movements, &accounts); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	run.r.Progress.ExpectedRecountRoundSeconds = lim.expectedRound(movements, accounts).Seconds()
	return run, nil
}

// fencesChanged is what a run reports when the fences' rows were written
// since the last run, whatever their state now.
const fencesChanged = "changed since the last run: a trigger of the books or its function was written (disabled and enabled again, replaced, or a migration)"

// readFences reads which fences of the books are not in force, and
// whether any was written since the last run read them (0041): reported
// once, by the first run that reads the change, which keeps the new
// digest.
func (run *reconcileRun) readFences(ctx context.Context) error {
	var seen string
	if err := run.tx.QueryRow(ctx, reconcileSQL.Fences).Scan(&run.r.FencesDown, &seen); err != nil {
		return db.Classify(fmt.Errorf("fences: %w", err))
	}
	if run.r.FencesDown == nil {
		run.r.FencesDown = []string{}
	}
	if was := run.was.fencesSeen; was != nil && *was != seen {
		run.r.FencesDown = append(run.r.FencesDown, fencesChanged)
	}
	run.next.fencesSeen = &seen
	return nil
}

// expectedRound is how long a round of the rotating recount takes at lim
// on books of movements and accounts: as many runs as the larger of the
// two budgets needs, and the run the round ends in, one Interval each.
func (lim Limits) expectedRound(movements, accounts int64) time.Duration {
	runs := 1.0
	if lim.RecountMovements > 0 && lim.RecountAccounts > 0 {
		runs += max(float64(movements)/float64(lim.RecountMovements), float64(accounts)/float64(lim.RecountAccounts))
	}
	interval := lim.Interval
	if interval <= 0 {
		interval = defaultInterval
	}
	return time.Duration(runs * float64(interval))
}

// defaultInterval is the Schedule's interval unless
// RECONCILE_INTERVAL says otherwise (config's default).
const defaultInterval = 15 * time.Minute

// check runs every check of the run, the recount of accounts in full and
// the part of the done rows, into run.r.
func (run *reconcileRun) check(ctx context.Context) error {
	if err := run.compareBalances(ctx); err != nil {
		return err
	}
	if err := run.recountAccounts(ctx); err != nil {
		return err
	}
	recounted := make([]string, 0, len(run.recounted))
	for id := range run.recounted {
		recounted = append(recounted, id)
	}
	slices.Sort(recounted)
	r, was := &run.r, run.was
	checks := []struct {
		out   *[]string
		query string
		args  []any
	}{
		{&r.UnbalancedHolds, reconcileSQL.UnbalancedHolds, nil},
		{&r.DoneWithoutCredit, reconcileSQL.DoneWithoutCredit, []any{was.settledBefore, was.doneWithoutCredit}},
		{&r.CreditWithoutDone, maintenanceSQL.CreditWithoutDone, nil},
		{&r.RefundsOverCredit, reconcileSQL.OverCredit, []any{was.settledBefore, was.refundsOverCredit, recounted}},
		{&r.RefundContradictions, refundSQL.Contradictions, nil},
	}
	for _, c := range checks {
		var err error
		if *c.out, err = listStrings(ctx, run.tx, c.query, c.args...); err != nil {
			return err
		}
	}
	if err := run.recountDone(ctx); err != nil {
		return err
	}
	run.judgeBalances()
	run.next.doneWithoutCredit, run.next.refundsOverCredit = r.DoneWithoutCredit, r.RefundsOverCredit
	run.next.recountAgain = slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(r.UnbalancedAccounts), r.SettledMismatch...))))
	if run.next.recountAgain == nil {
		run.next.recountAgain = []string{} // the column's NOT NULL
	}
	return nil
}

// compareBalances compares every counted account's balance with its
// settled sum and its movements since (flagged), and finds the accounts
// not counted yet.
func (run *reconcileRun) compareBalances(ctx context.Context) error {
	rows, err := run.tx.Query(ctx, reconcileSQL.Unbalanced, run.was.settledBefore)
	if err != nil {
		return db.Classify(fmt.Errorf("compare balances: %w", err))
	}
	var id string
	var uncounted bool
	_, err = pgx.ForEachRow(rows, []any{&id, &uncounted}, func() error {
		switch {
		case !uncounted:
			run.flagged = append(run.flagged, id)
		case len(run.uncounted) < run.lim.RecountAccounts:
			run.uncounted = append(run.uncounted, id)
		}
		if uncounted {
			run.r.Progress.UncheckedAccounts++
		}
		return nil
	})
	if err != nil {
		return db.Classify(fmt.Errorf("compare balances: %w", err))
	}
	return nil
}

// judgeBalances is the run's list of unbalanced accounts: those recounted
// in full that are, and those the comparison flagged that the run had no
// budget left to recount; and of the accounts recounted whose history was
// counted before, those whose settled sum (with what this run settles) is
// not their movements below the run's xmin: a settled movement or the
// settled sum changed past the fences, reported, never put right. An
// account not counted yet and not recounted stays unchecked: never judged
// on part of its movements.
func (run *reconcileRun) judgeBalances() {
	r := &run.r
	r.UnbalancedAccounts, r.SettledMismatch = []string{}, []string{}
	for _, id := range run.flagged {
		if _, ok := run.recounted[id]; !ok {
			r.UnbalancedAccounts = append(r.UnbalancedAccounts, id)
		}
	}
	for id, a := range run.recounted {
		if !a.balanced {
			r.UnbalancedAccounts = append(r.UnbalancedAccounts, id)
		}
		if a.settled == nil {
			r.Progress.UncheckedAccounts--
			continue
		}
		settled := *a.settled
		if run.settle {
			settled += a.fresh
		}
		if settled != a.below {
			r.SettledMismatch = append(r.SettledMismatch, id)
		}
	}
	slices.Sort(r.UnbalancedAccounts)
	slices.Sort(r.SettledMismatch)
	r.Progress.RecountedAccounts = len(run.recounted)
}

// recountDone checks the next part of the done inbox rows against their
// credits, whenever they were made done, and adds the rows it finds
// without a credit to the run's (checked again by every run after).
func (run *reconcileRun) recountDone(ctx context.Context) error {
	next := &run.next
	var read int
	var last *string
	var found []string
	if err := run.tx.QueryRow(ctx, reconcileSQL.DoneRecount, next.doneRecountAfter, run.lim.DoneRows).Scan(&read, &last, &found); err != nil {
		return db.Classify(fmt.Errorf("done rows: %w", err))
	}
	if read < run.lim.DoneRows { // the last part: the next run starts a round again
		next.doneRecountAfter, next.doneHistoryChecked = nil, true
	} else {
		next.doneRecountAfter = last
	}
	run.r.Progress.DoneHistoryPending = !next.doneHistoryChecked
	if len(found) > 0 {
		run.r.DoneWithoutCredit = append(run.r.DoneWithoutCredit, found...)
		slices.Sort(run.r.DoneWithoutCredit)
		run.r.DoneWithoutCredit = slices.Compact(run.r.DoneWithoutCredit)
	}
	return nil
}

// write writes what the run changed, and nothing when it changed nothing
// (I12): the movements settled (before the checkpoint moves: 0039's fence
// settles from the checkpoint as it stands), the settled sums of the
// accounts counted first, and the checkpoint.
func (run *reconcileRun) write(ctx context.Context) error {
	var ids []string
	var sums []int64
	for id, a := range run.recounted {
		if a.settled == nil {
			ids, sums = append(ids, id), append(sums, a.below)
		}
	}
	moved := !run.next.equal(run.was)
	if !run.settle && len(ids) == 0 && !moved {
		return nil
	}
	if _, err := run.tx.Exec(ctx, reconcileSQL.Guard); err != nil {
		return fmt.Errorf("guard: %w", err)
	}
	if run.settle {
		if _, err := run.tx.Exec(ctx, reconcileSQL.Settle, run.was.settledBefore, run.xmin); err != nil {
			return fmt.Errorf("settle: %w", err)
		}
	}
	if len(ids) > 0 {
		if _, err := run.tx.Exec(ctx, reconcileSQL.SetSettled, ids, sums); err != nil {
			return fmt.Errorf("settled sums: %w", err)
		}
	}
	if moved {
		n := run.next
		if _, err := run.tx.Exec(ctx, reconcileSQL.Advance, n.settledBefore, n.recountAfter, n.doneRecountAfter, n.doneHistoryChecked,
			n.doneWithoutCredit, n.refundsOverCredit, n.roundBegan, n.lastRound, n.recountAgain, n.fencesSeen); err != nil {
			return fmt.Errorf("advance: %w", err)
		}
	}
	return nil
}
