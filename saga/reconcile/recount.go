package reconcile

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/db"
)

// The recount of accounts in full (docs/design.md, "The reconciliation"):
// each run recounts, through the account indexes, the accounts the last
// run found wrong (outside its budget), the accounts the comparison with
// the settled sums flagged (so that an account is reported unbalanced
// only on its whole history, and a settled sum that is not its movements
// as settled_mismatch), then the accounts whose history is not counted
// yet (after migration 0024, a reset, a new account), then the next
// accounts in id order from where the last run's rotation stopped, while
// its limits last, and always one account of the rotation: every account
// is recounted within about movements / RecountMovements + 1 runs (a round
// of the rotation, timed in the checkpoint). The round is the audit, not
// the guarantee: the database refuses a change of a settled movement or
// sum (0024, 0039) and every run checks those fences; what was written
// past them with its balance kept consistent is found when its account's
// turn comes, and by every run after it.

// maxBatch bounds how many accounts one Recount reads.
const maxBatch = 1024

// recountAccounts recounts the run's slice of accounts in full: first the
// accounts the last run found wrong (0039), whatever the budget, so that a
// difference is found again at every run until mended (a settled sum is
// no longer put right, and one that agrees with a balance changed with it
// flags nothing by itself); their movements are counted apart
// (RecountedAgainMovements), not in the rotation's budget: a cost only
// while differences stand, which page someone.
func (run *reconcileRun) recountAccounts(ctx context.Context) error {
	p := &run.r.Progress
	for again := run.was.recountAgain; len(again) > 0; {
		n := min(maxBatch, len(again))
		if err := run.recount(ctx, again[:n]); err != nil {
			return err
		}
		again = again[n:]
	}
	run.again, p.RecountedAgainMovements, p.RecountedMovements = len(run.recounted), p.RecountedMovements, 0
	for _, ids := range [][]string{run.flagged, run.uncounted} {
		ids = slices.DeleteFunc(slices.Clone(ids), func(id string) bool { _, done := run.recounted[id]; return done })
		for len(ids) > 0 && run.budgetLeft() {
			n := min(run.batchSize(), len(ids))
			if err := run.recount(ctx, ids[:n]); err != nil {
				return err
			}
			ids = ids[n:]
		}
	}
	return run.rotate(ctx)
}

// rotate recounts the next accounts in id order from where the last run's
// rotation stopped, around to the first when it reaches the last, while the
// limits last, and at least one; the checkpoint keeps where it stopped
// (unchanged when it went the whole way round), and the round's times.
func (run *reconcileRun) rotate(ctx context.Context) error {
	start := run.was.recountAfter
	after, until := start, (*string)(nil)
	wrapped, first := false, true
	turn := roundMidway
	if start == nil {
		turn = roundBegun
	}
	for first || run.budgetLeft() {
		ids, err := listStrings(ctx, run.tx, reconcileSQL.Accounts, after, until, run.batchSize())
		if err != nil {
			return fmt.Errorf("recount: %w", err)
		}
		if len(ids) == 0 {
			if wrapped || start == nil {
				after, turn = start, roundWhole // the whole way round
				break
			}
			wrapped, after, until, turn = true, nil, start, roundTurned
			continue
		}
		todo := make([]string, 0, len(ids))
		for _, id := range ids {
			if _, done := run.recounted[id]; !done {
				todo = append(todo, id)
			}
		}
		if err := run.recount(ctx, todo); err != nil {
			return err
		}
		after, first = &ids[len(ids)-1], false
	}
	run.next.recountAfter = after
	run.timeRound(turn)
	return nil
}

// roundTurn is what a run's rotation did of its round.
type roundTurn int

const (
	// roundMidway: it went on with the round under way.
	roundMidway roundTurn = iota
	// roundBegun: it began a round at the first account (the first run,
	// or the first after a reset).
	roundBegun
	// roundTurned: it finished the round under way at the last account
	// and began the next at the first.
	roundTurned
	// roundWhole: it went the whole way round: every account recounted.
	roundWhole
)

// timeRound times the rotation's rounds by the runs' clock (migration
// 0036) into the checkpoint and the run's progress: a round runs from the
// run that began it at the first account to the run that reached the
// last. A run that went the whole way round leaves no round under way,
// and writes nothing for it when the run before did the same (I12).
func (run *reconcileRun) timeRound(turn roundTurn) {
	next, now := &run.next, run.now
	switch turn {
	case roundWhole:
		within := time.Duration(0)
		next.roundBegan, next.lastRound = nil, &within
	case roundTurned:
		next.lastRound = nil // began when no run recorded: not timed
		if began := run.was.roundBegan; began != nil {
			took := now.Sub(*began)
			next.lastRound = &took
		}
		next.roundBegan = &now
	case roundBegun:
		next.roundBegan = &now
	default:
		if next.roundBegan == nil {
			// A round whose beginning no run recorded (it began in a run
			// that went the whole way round, or before 0036): timed from
			// here, short by at most a run's interval.
			next.roundBegan = &now
		}
	}
	p := &run.r.Progress
	if next.roundBegan != nil {
		p.RecountRoundSeconds = now.Sub(*next.roundBegan).Seconds()
	}
	if next.lastRound != nil {
		p.LastRecountRoundSeconds = next.lastRound.Seconds()
	}
}

// budgetLeft says whether the run may recount more accounts.
func (run *reconcileRun) budgetLeft() bool {
	return run.r.Progress.RecountedMovements < run.lim.RecountMovements && len(run.recounted)-run.again < run.lim.RecountAccounts
}

// batchSize is how many accounts the next batch recounts: one first (the
// run does not know yet how many movements an account has here), then as
// many as the movements left in the budget hold at the run's mean so far,
// and never more than the run recounted before (a batch of accounts
// larger than the mean goes at most that far beyond the budget).
func (run *reconcileRun) batchSize() int {
	done := int64(len(run.recounted) - run.again)
	if done == 0 {
		return 1
	}
	read := run.r.Progress.RecountedMovements
	n := (run.lim.RecountMovements - read) / (1 + read/done)
	return int(max(1, min(n, done, maxBatch, int64(run.lim.RecountAccounts)-done)))
}

// recount recounts the accounts ids in full (Recount) into run.recounted.
func (run *reconcileRun) recount(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	rows, err := run.tx.Query(ctx, reconcileSQL.Recount, ids, run.xmin, run.was.settledBefore)
	if err != nil {
		return db.Classify(fmt.Errorf("recount: %w", err))
	}
	var id string
	var a recountedAccount
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&id, &a.balanced, &a.below, &a.settled, &a.fresh, &n}, func() error {
		run.recounted[id] = a
		run.r.Progress.RecountedMovements += n
		a.settled = nil // the next row's its own, not this one's reused
		return nil
	})
	if err != nil {
		return db.Classify(fmt.Errorf("recount: %w", err))
	}
	return nil
}
