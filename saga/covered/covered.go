package covered

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/db"
)

//go:embed covered.sql
var queryFiles embed.FS

// coveredSQL holds the statements of covered.sql.
var coveredSQL struct {
	CoveredUntil, StartCovering, AdvanceCovered, Behind string
}

func init() { db.BindQueries(queryFiles, "covered.sql", &coveredSQL) }

// Store is one lister's covered window, by its name.
type Store struct {
	store *db.Store
	name  string
}

// NewStore returns the covered window of the lister name over s.
func NewStore(s *db.Store, name string) *Store { return &Store{store: s, name: name} }

// Now is the database's clock, by which every worker's window ends: the
// workers' own clocks may disagree, and a covered end taken from a clock
// that runs ahead would skip what the other side records meanwhile.
// Advance refuses an end past this clock.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	now, err := db.Now(ctx, s.store.Pool())
	return now, db.Classify(err)
}

// CoveredUntil is the end of the last window the lister covered: all it
// lists, recorded before it, was taken in. ok is false when no window was
// ever covered.
func (s *Store) CoveredUntil(ctx context.Context) (until time.Time, ok bool, err error) {
	err = s.store.Pool().QueryRow(ctx, coveredSQL.CoveredUntil, s.name).Scan(&until)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return time.Time{}, false, nil
	case err != nil:
		return time.Time{}, false, db.Classify(fmt.Errorf("read the covered window of %s: %w", s.name, err))
	}
	return until, true, nil
}

// Behind is how far the covered end is behind the database's clock now:
// the lister's lag, as a gauge reads it at each scrape. ok is false when no
// window was ever covered.
func (s *Store) Behind(ctx context.Context) (behind time.Duration, ok bool, err error) {
	var seconds float64
	err = s.store.Pool().QueryRow(ctx, coveredSQL.Behind, s.name).Scan(&seconds)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, db.Classify(fmt.Errorf("read how far %s is behind: %w", s.name, err))
	}
	return time.Duration(seconds * float64(time.Second)), true, nil
}

// Advance records that the lister covered its window up to to, once all of
// it was taken in. from is the covered end the run started from (or last
// recorded), as CoveredUntil read it (nil: none was covered then). The end
// moves only from that value, only forwards, and never past the database's
// clock (Now): a run that is late (another advanced the end meanwhile) or
// whose end is in the future changes nothing, and moved is false. An end
// at to already is moved: a retry whose first try committed.
func (s *Store) Advance(ctx context.Context, from *time.Time, to time.Time) (moved bool, err error) {
	var row pgx.Row
	if from == nil {
		row = s.store.Pool().QueryRow(ctx, coveredSQL.StartCovering, s.name, to)
	} else {
		row = s.store.Pool().QueryRow(ctx, coveredSQL.AdvanceCovered, s.name, *from, to)
	}
	var until time.Time
	err = row.Scan(&until)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, db.Classify(fmt.Errorf("advance the covered window of %s: %w", s.name, err))
	}
	return true, nil
}

// Clock is what Begin reads of a lister's store.
type Clock interface {
	Now(ctx context.Context) (time.Time, error)
	CoveredUntil(ctx context.Context) (until time.Time, ok bool, err error)
}

// Settings are a lister's window: Overlap, how far before the covered end
// each run starts listing (the other side may record an item late, and
// the clocks differ); Lookback, how far back the first run lists; Grace,
// how long before now a run's window ends (what is on its way is left to
// the next run), less than Overlap.
type Settings struct {
	Overlap, Lookback, Grace time.Duration
}

// Window is a window to list, from Start to End, both included.
// CoveredFrom is the covered end the run started from (or last recorded),
// which fences its advance: nil before any window was covered.
type Window struct {
	Start, End  time.Time
	CoveredFrom *time.Time `json:",omitempty"`
}

// Begin decides the window of a scheduled run: from the covered end less
// the overlap (or, before any window was covered, from the lookback) up to
// now less the grace, cut to unit (the precision the other side filters
// by). Now is the database's (Clock.Now), the one clock of every worker.
func Begin(ctx context.Context, c Clock, s Settings, unit time.Duration) (Window, error) {
	covered, ok, err := c.CoveredUntil(ctx)
	if err != nil {
		return Window{}, err
	}
	now, err := c.Now(ctx)
	if err != nil {
		return Window{}, err
	}
	w := Window{Start: now.Add(-s.Lookback), End: now.Add(-s.Grace)}
	if ok {
		w.Start, w.CoveredFrom = covered.Add(-s.Overlap), &covered
	}
	w.Start, w.End = w.Start.Truncate(unit), w.End.Truncate(unit)
	return w, nil
}

// ErrGap is an advance over what was never listed: a part that starts
// after the covered end it would move.
var ErrGap = errors.New("a part that starts after the covered end can't cover the gap")

// CheckPart refuses (ErrGap) the advance of a part listed from start over
// the covered end from: no run of a lister asks it, and it would cover
// what was never listed.
func CheckPart(start time.Time, from *time.Time) error {
	if from != nil && start.After(*from) {
		return fmt.Errorf("%w: listed from %s, covered until %s", ErrGap, start.Format(time.RFC3339Nano), from.Format(time.RFC3339Nano))
	}
	return nil
}
