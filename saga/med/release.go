package med

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/dict"
)

// ErrNotReleasable: an operator's release of a report on which something
// may still be returned or decided by the run: not open, not stopped at
// the DICT, a devolução of it in flight, or its refund request not CLOSED
// at the DICT by our copy with nothing more returnable on it (CLOSED
// REJECTED, or its return_until passed); a CANCELLED one is never
// released (a later request may come). Never released on a guess
// (ReleaseKeyed).
var ErrNotReleasable = errors.New("infraction report can't be released by an operator")

// MaxReleaseDetailsLength bounds an operator's release details.
const MaxReleaseDetailsLength = MaxDetailsLength

// MaxReleasedByLength bounds who released a report (released_by, the
// caller's subject: pix_med_reports' check, migration 0062). A JWT's
// subject is not bounded by the verifier: a longer one is refused, a
// declared 422, never the check's 500.
const MaxReleasedByLength = 200

// ReleaseKeyed ends, by an operator's decision (by, details: why, kept on
// the row), a report whose run stopped at the DICT (DICTProblem) on which
// nothing more can be returned (releasable): the run can't decide it
// (dict_not_as_ours: a part returned, the request CLOSED REJECTED outside
// the run), and what it still holds is released once (end), the cause
// EndOperatorReleased. In one transaction under the report's lock, decided
// on the row as it is then and the database's clock (the run's step
// fenced by its generation loses to it, or it to the step: one winner),
// the Idempotency-Key's answer (r, 201, render's body) recorded in it; r
// nil: none. Refused (ErrNotReleasable) otherwise, nothing changed; a
// report ended already (by this release or otherwise: a second release
// with another key is refused, the report's GET says how it ended).
func (s *Store) ReleaseKeyed(ctx context.Context, r *db.Reservation, id uuid.UUID, details, by string,
	render func(Report) ([]byte, error)) (Report, bool, error) {
	details = strings.TrimSpace(details)
	if err := validDetails("details", details, 1, MaxReleaseDetailsLength); err != nil {
		return Report{}, false, err
	}
	if err := validDetails("caller", by, 1, MaxReleasedByLength); err != nil {
		return Report{}, false, fmt.Errorf("the caller's subject can't be recorded as who released the report: %w", err)
	}
	return s.decide(ctx, id, -1, func(tx pgx.Tx, cur Report) (Report, bool, error) {
		if err := s.releasable(ctx, tx, cur); err != nil {
			return Report{}, false, err
		}
		next := cur
		next.ReleasedBy, next.ReleaseDetails = &by, &details
		out, changed, err := end(ctx, tx, cur, next, EndOperatorReleased)
		if err != nil || r == nil {
			return out, changed, err
		}
		return out, changed, db.RecordCreated(ctx, tx, *r, out, render)
	})
}

// releasable refuses an operator's release of the report cur, locked in tx
// (ErrNotReleasable), unless it is open, stopped (DICTProblem: a DICT
// problem, or behind a PSP an action awaited at the PSP), no devolução of
// it in flight (returning, a RefundID: its Settle must run on the open
// report, and a reversed part's Restore find its hold), and nothing more
// can be returned on it: its refund request CLOSED at the DICT by our copy
// and either REJECTED there (rejectedAtTheDICT: the copy's result, which
// no accepted copy replaces; not closedRejected, whose recorded close of
// ours may be contradicted by the DICT's accepted copy) or its return_until
// passed by the database's clock in tx. A CLOSED request accepted in part
// goes on being returned on until return_until; one CLOSED with no result
// said may be accepted; a CANCELLED one leaves the report to take the next
// request its requester may make (the run's own end keeps and closes it),
// and one OPEN is the run's to close at the DICT.
func (s *Store) releasable(ctx context.Context, tx pgx.Tx, cur Report) error {
	state := deref(cur.RefundRequestState)
	switch {
	case !cur.Open():
		return fmt.Errorf("%w: it is %s", ErrNotReleasable, cur.Status)
	case cur.DICTProblem == nil:
		return fmt.Errorf("%w: its run is not stopped at the DICT", ErrNotReleasable)
	case cur.Status == StatusReturning || cur.RefundID != nil:
		return fmt.Errorf("%w: a devolução of it is in flight (%s): its run settles it", ErrNotReleasable, deref(cur.RefundID))
	case cur.RefundRequestID != nil && state == string(dict.RefundCancelled):
		return fmt.Errorf("%w: its refund request is CANCELLED at the DICT: the report takes the requester's next one, its run ends it", ErrNotReleasable)
	case cur.RefundRequestID == nil || state != string(dict.RefundClosed):
		return fmt.Errorf("%w: its refund request is not closed at the DICT (%q): money may still be owed there", ErrNotReleasable, state)
	case rejectedAtTheDICT(cur):
		return nil
	}
	now, err := s.now(ctx, tx)
	if err != nil {
		return err
	}
	if cur.ReturnUntil == nil || now.Before(*cur.ReturnUntil) {
		return fmt.Errorf("%w: its refund request is not CLOSED REJECTED at the DICT (its result %q) and its return_until has not passed: "+
			"it may still be returned on", ErrNotReleasable, deref(cur.RefundRequestDICTResult))
	}
	return nil
}

// stopFilling stops the hold of the report r, as decided in tx, filling
// from the account's later inflows once nothing more can be returned on
// r. Past its return_until the core does it: the hold fills until then
// (db.NewHold.FillUntil, set when the hold is made: holdMore), and each
// inflow's own statement decides by the database's clock, so a credit a
// moment past it is the customer's (no clock read here). A hold made
// without it (before migration 0063, by an older build while the release
// rolled out, or made filling by the return: db.MakeFilling, in the same
// transaction, under the same locks) is given it in any transaction of the
// report's, running or stopped, by db.SetFillUntil: one read of the hold
// by its key, its locks only when it lacks one (a running report's end at
// return_until may come later than a credit: that credit is the
// customer's).
// Its request CLOSED REJECTED at the DICT (closedRejected: our close, or
// the copy taken in, whoever closed it) is not a time: the hold is shrunk
// in place to what it holds (db.Shrink: it fills to no more, and is raised
// no more; nothing held is freed), by the row's state in every
// transaction of the report's (decideAfter), so from the commit of the one
// that takes the CLOSED REJECTED copy in. Return changes nothing then: a
// credit that filled the hold would only be held, from the customer, until
// the report ends (a run stopped at the DICT, dict_not_as_ours, ends only
// by an operator's release).
func (s *Store) stopFilling(ctx context.Context, tx pgx.Tx, r Report) error {
	if !r.Open() || r.HoldID == nil {
		return nil
	}
	if !closedRejected(r) {
		if r.ReturnUntil == nil {
			return nil
		}
		if _, _, err := db.SetFillUntil(ctx, tx, *r.HoldID, *r.ReturnUntil); err != nil {
			return fmt.Errorf("the hold of infraction report %s fills until its return_until: %w", r.ID, err)
		}
		return nil
	}
	// Locked (its PIX's credit, its account, then the hold, after the
	// report's: the lock order): what it holds read under the locks is
	// what it is shrunk to, no credit filling it between (a fill between
	// a read without them and the shrink's lock would be freed again).
	hold, err := db.LockHold(ctx, tx, *r.HoldID)
	if err != nil {
		return fmt.Errorf("hold of infraction report %s: %w", r.ID, err)
	}
	if !hold.Active() || hold.FillToCents == nil {
		return nil
	}
	// Shrunk also when it fills to what it holds already but may be raised
	// (its fill_short_cents, which the hold's view does not say): a shrink
	// within it all changes nothing and writes no event.
	_, shrunk, err := db.Shrink(ctx, tx, *r.HoldID, hold.AmountCents, "med: nothing more is returned")
	if err != nil {
		return fmt.Errorf("stop the hold of infraction report %s filling: %w", r.ID, err)
	}
	if shrunk {
		db.WakeOnCommit(tx, db.OutboxChannel)
	}
	return nil
}
