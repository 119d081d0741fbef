package catchup

import (
	"context"
	"time"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/saga/covered"
)

// CoveredName is the catch-up's covered window (covered_windows.name,
// saga/covered; migration 0045 brought its end there from psp_catchup).
const CoveredName = "psp-catchup"

// Store is the catch-up's store: the core's (its listing path into the
// inbox, db.Store.StoreListed, and the devoluções' notices,
// NoteRefundOutcomes), and its covered window, saga/covered's.
type Store struct {
	*db.Store
	covered *covered.Store
}

// NewStore returns the catch-up's store over s.
func NewStore(s *db.Store) *Store { return &Store{Store: s, covered: covered.NewStore(s, CoveredName)} }

// Now is the database's clock, by which every worker's catch-up window
// ends (covered.Store.Now): Advance refuses an end past it.
func (s *Store) Now(ctx context.Context) (time.Time, error) { return s.covered.Now(ctx) }

// CoveredUntil is the end of the last window the scheduled PSP catch-up
// covered: every PIX the PSP created before it was listed and stored. ok
// is false when no window was ever covered.
func (s *Store) CoveredUntil(ctx context.Context) (until time.Time, ok bool, err error) {
	return s.covered.CoveredUntil(ctx)
}

// Advance records that the PSP catch-up covered its window up to to, once
// every page of it was stored, from the covered end the run started from
// (nil: none was covered then): only from that value, only forwards, never
// past the database's clock (covered.Store.Advance; I7: a stale actor
// changes nothing). An end at to already is moved: a retry whose first try
// committed.
func (s *Store) Advance(ctx context.Context, from *time.Time, to time.Time) (moved bool, err error) {
	return s.covered.Advance(ctx, from, to)
}
