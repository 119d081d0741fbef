package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// catchUpSQL holds the statements of queries/catchup.sql.
var catchUpSQL struct {
	Now, CoveredUntil, StartCovering, AdvanceCovered string
}

func init() { bindQueries("catchup.sql", &catchUpSQL) }

// CatchUpNow is the database's clock, by which every worker's catch-up
// window ends: the workers' own clocks may disagree, and a covered end
// taken from a clock that runs ahead would skip what the PSP receives
// meanwhile. AdvanceCatchUp refuses an end past this clock.
func (s *Store) CatchUpNow(ctx context.Context) (time.Time, error) {
	var now time.Time
	if err := s.pool.QueryRow(ctx, catchUpSQL.Now).Scan(&now); err != nil {
		return time.Time{}, Classify(fmt.Errorf("read the database's clock: %w", err))
	}
	return now, nil
}

// CatchUpCoveredUntil is the end of the last window the scheduled PSP
// catch-up covered: every PIX the PSP created before it was listed and
// stored. ok is false when no window was ever covered.
func (s *Store) CatchUpCoveredUntil(ctx context.Context) (until time.Time, ok bool, err error) {
	err = s.pool.QueryRow(ctx, catchUpSQL.CoveredUntil).Scan(&until)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return time.Time{}, false, nil
	case err != nil:
		return time.Time{}, false, Classify(fmt.Errorf("read the psp catch-up's covered window: %w", err))
	}
	return until, true, nil
}

// AdvanceCatchUp records that the PSP catch-up covered its window up to
// to, once every page of it was stored. from is the covered end the run
// started from, as CatchUpCoveredUntil read it (nil: none was covered
// then). The end moves only from that value, only forwards, and never
// past the database's clock (CatchUpNow): a run that is late (another run
// advanced the end meanwhile) or whose end is in the future changes
// nothing, and moved is false. (I7: a stale actor changes nothing.) An end
// at to already is moved: a retry whose first try committed.
func (s *Store) AdvanceCatchUp(ctx context.Context, from *time.Time, to time.Time) (moved bool, err error) {
	var row pgx.Row
	if from == nil {
		row = s.pool.QueryRow(ctx, catchUpSQL.StartCovering, to)
	} else {
		row = s.pool.QueryRow(ctx, catchUpSQL.AdvanceCovered, *from, to)
	}
	var until time.Time
	err = row.Scan(&until)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, Classify(fmt.Errorf("advance the psp catch-up's covered window: %w", err))
	}
	return true, nil
}
