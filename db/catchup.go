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
	CoveredUntil, StartCovering, AdvanceCovered string
}

func init() { bindQueries("catchup.sql", &catchUpSQL) }

// CatchUpCoveredUntil is the end of the last window the scheduled PSP
// catch-up covered: every PIX the PSP created before it was listed and
// stored. ok is false when no window was ever covered.
func (s *Store) CatchUpCoveredUntil(ctx context.Context) (until time.Time, ok bool, err error) {
	err = s.pool.QueryRow(ctx, catchUpSQL.CoveredUntil).Scan(&until)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return time.Time{}, false, nil
	case err != nil:
		return time.Time{}, false, classify(fmt.Errorf("read the psp catch-up's covered window: %w", err))
	}
	return until, true, nil
}

// AdvanceCatchUp records that the PSP catch-up covered its window up to
// to, once every page of it was stored. from is the covered end the run
// started from, as CatchUpCoveredUntil read it (nil: none was covered
// then). The end moves only from that value, and only forwards: a run
// that is late (another run advanced the end meanwhile) changes nothing,
// and moved is false. (I7: a stale actor changes nothing.)
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
		return false, classify(fmt.Errorf("advance the psp catch-up's covered window: %w", err))
	}
	return true, nil
}
