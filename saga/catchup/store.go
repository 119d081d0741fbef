package catchup

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/db"
)

//go:embed catchup.sql
var queryFiles embed.FS

// catchUpSQL holds the statements of catchup.sql (named catchup.* in
// traces, as they always were).
var catchUpSQL struct {
	Now, CoveredUntil, StartCovering, AdvanceCovered string
}

func init() { db.BindQueries(queryFiles, "catchup.sql", &catchUpSQL) }

// Store is the catch-up's store: the core's (its listing path into the
// inbox, db.Store.StoreListed, and the devoluções' notices,
// NoteRefundOutcomes), and the covered window's own statements.
type Store struct{ *db.Store }

// NewStore returns the catch-up's store over s.
func NewStore(s *db.Store) *Store { return &Store{s} }

// Now is the database's clock, by which every worker's catch-up window
// ends: the workers' own clocks may disagree, and a covered end taken from
// a clock that runs ahead would skip what the PSP receives meanwhile.
// Advance refuses an end past this clock.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	var now time.Time
	if err := s.Pool().QueryRow(ctx, catchUpSQL.Now).Scan(&now); err != nil {
		return time.Time{}, db.Classify(fmt.Errorf("read the database's clock: %w", err))
	}
	return now, nil
}

// CoveredUntil is the end of the last window the scheduled PSP catch-up
// covered: every PIX the PSP created before it was listed and stored. ok
// is false when no window was ever covered.
func (s *Store) CoveredUntil(ctx context.Context) (until time.Time, ok bool, err error) {
	err = s.Pool().QueryRow(ctx, catchUpSQL.CoveredUntil).Scan(&until)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return time.Time{}, false, nil
	case err != nil:
		return time.Time{}, false, db.Classify(fmt.Errorf("read the psp catch-up's covered window: %w", err))
	}
	return until, true, nil
}

// Advance records that the PSP catch-up covered its window up to to, once
// every page of it was stored. from is the covered end the run started
// from, as CoveredUntil read it (nil: none was covered then). The end
// moves only from that value, only forwards, and never past the
// database's clock (Now): a run that is late (another run advanced the
// end meanwhile) or whose end is in the future changes nothing, and moved
// is false. (I7: a stale actor changes nothing.) An end at to already is
// moved: a retry whose first try committed.
func (s *Store) Advance(ctx context.Context, from *time.Time, to time.Time) (moved bool, err error) {
	var row pgx.Row
	if from == nil {
		row = s.Pool().QueryRow(ctx, catchUpSQL.StartCovering, to)
	} else {
		row = s.Pool().QueryRow(ctx, catchUpSQL.AdvanceCovered, *from, to)
	}
	var until time.Time
	err = row.Scan(&until)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, db.Classify(fmt.Errorf("advance the psp catch-up's covered window: %w", err))
	}
	return true, nil
}
