package med

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/pix"
)

// The saga's transitions. Each is decided on the report as the run read it
// (at: its generation), under the report's row lock, then the core's
// locks in their one order (a PIX's credit or an inbox row, the account,
// the hold: db/holds.go); a stop on a quarantined copy takes that copy's
// row before the report's (NoteProblemOn, quarantine.sql): a report that moved since (another actor, an
// intake, the same activity's earlier attempt whose answer was lost) is
// returned as it is, nothing changed, and the run decides again on what
// it reads. Each returns the report after, and
// whether this call changed it.

// Hold holds the PIX's amount, or what the account has available if less
// (db.Hold, UpTo: the hold says how much), for a report just received.
// Nothing available holds nothing (the report is held at 0, visibly):
// MED's rule is to hold what the account has.
func (s *Store) Hold(ctx context.Context, at Report) (Report, bool, error) {
	return s.decide(ctx, at.ID, at.Gen, func(tx pgx.Tx, cur Report) (Report, bool, error) {
		if cur.Status != StatusReceived {
			return cur, false, nil
		}
		next := cur
		next.Status = StatusHeld
		if err := holdMore(ctx, tx, &next, *cur.AmountCents); err != nil {
			return Report{}, false, err
		}
		return save(ctx, tx, cur, next)
	})
}

// holdMore holds up to amount of the report's PIX for next, with the next
// ref (med:<id>:<n>): a hold that fills from the account's later inflows
// (db.NewHold.FillFromCredits: each credit, refund or reversal fills it in
// its own transaction, so none of it is spendable between two tries of
// the run), holding what is available now, possibly nothing. A PIX that
// something else takes part of (a cautionary block of it, a devolução of
// it pending) gets a hold filling to what it has left, possibly nothing,
// raised as that part is freed (db.RaiseFillTo: the block released, the
// devolução reversed), so the report always has its hold; the refusals
// below are not expected of such a hold and are taken as nothing held.
// It fills until the report's return_until (db.NewHold.FillUntil): nothing
// filled after it could be returned, so the core stops the fills then, in
// the inflow's own transaction, by the database's clock.
func holdMore(ctx context.Context, tx pgx.Tx, next *Report, amount int64) error {
	var until time.Time
	if next.ReturnUntil != nil {
		until = *next.ReturnUntil
	}
	hold, _, err := db.Hold(ctx, tx, db.NewHold{Ref: fmt.Sprintf("med:%s:%d", next.ID, next.Holds+1), AccountID: *next.AccountID,
		EndToEndID: next.EndToEndID, AmountCents: amount, UpTo: true, FillFromCredits: true, FillUntil: until, Kind: HoldKind,
		Reason: holdReason})
	switch {
	case errors.Is(err, pix.ErrInsufficientFunds), errors.Is(err, pix.ErrHoldExceedsCredit):
		return nil
	case err != nil:
		return fmt.Errorf("hold for infraction report %s: %w", next.ID, err)
	}
	id, err := uuid.Parse(hold.ID)
	if err != nil {
		return fmt.Errorf("hold %q of infraction report %s: %w", hold.ID, next.ID, err)
	}
	next.Holds++
	next.HoldID, next.HeldCents = &id, hold.AmountCents
	return nil
}

// holdReason is the reason of a report's holds, which goes out in
// pix.hold.created (the customer's notice): not the reporter's details.
const holdReason = "MED: notificação de infração"

// Acknowledged records the DICT's acknowledgement (or a DICT status past
// it, read back): a held report becomes acknowledged, or analysed when
// its analysis came first.
func (s *Store) Acknowledged(ctx context.Context, at Report, seen dict.InfractionReport) (Report, bool, error) {
	return s.decide(ctx, at.ID, at.Gen, func(tx pgx.Tx, cur Report) (Report, bool, error) {
		if cur.Status != StatusHeld {
			return cur, false, nil
		}
		now, err := s.now(ctx, tx)
		if err != nil {
			return Report{}, false, err
		}
		next := withDICT(cur, seen)
		next.Status, next.AcknowledgedAt, next.DICTProblem = StatusAcknowledged, &now, nil
		if cur.AnalysisResult != nil {
			next.Status = StatusAnalysed
		}
		return save(ctx, tx, cur, next)
	})
}

// Seen records the DICT's status of the report as read back by the run
// (a cancel its reporter made), when later than the one recorded: the run
// then decides on it. Fenced by at's generation, as every transition.
func (s *Store) Seen(ctx context.Context, at Report, seen dict.InfractionReport) (Report, bool, error) {
	return s.decide(ctx, at.ID, at.Gen, func(tx pgx.Tx, cur Report) (Report, bool, error) {
		next := withDICT(cur, seen)
		if next.DICTStatus == cur.DICTStatus && next.DICTModifiedAt.Equal(cur.DICTModifiedAt) {
			return cur, false, nil
		}
		return save(ctx, tx, cur, next)
	})
}

// withDICT is r with the DICT's status of the report as seen in an answer,
// when it is later than the one recorded (newerReport).
func withDICT(r Report, seen dict.InfractionReport) Report {
	if seen.Status != "" && newerReport(seen, r) {
		r.DICTStatus, r.DICTModifiedAt = string(seen.Status), seen.LastModified
	}
	return r
}

// Analyse records an operator's analysis (by): the result and its details,
// which the saga sends in its close to the DICT. Once: the same analysis
// again is returned as it is (a request repeated), another is ErrAnalysed;
// a report ended, not ours, or past its close is ErrNotAnalysable. Not
// fenced by a generation: the operator decides on the report's id.
func (s *Store) Analyse(ctx context.Context, id uuid.UUID, result dict.AnalysisResult, details, by string) (Report, bool, error) {
	return s.AnalyseKeyed(ctx, nil, id, result, details, by, nil)
}

// AnalyseKeyed is Analyse recording the Idempotency-Key's answer (r, 201,
// render's body of the report after) in the same transaction; r nil: none.
func (s *Store) AnalyseKeyed(ctx context.Context, r *db.Reservation, id uuid.UUID, result dict.AnalysisResult, details, by string,
	render func(Report) ([]byte, error)) (Report, bool, error) {
	if !result.Valid() {
		return Report{}, false, pix.Invalid("result", "must be AGREED or DISAGREED")
	}
	details = dict.NormalizeDetails(details)
	return s.decide(ctx, id, -1, func(tx pgx.Tx, cur Report) (Report, bool, error) {
		now, err := s.now(ctx, tx)
		if err != nil {
			return Report{}, false, err
		}
		out, changed, err := analyse(ctx, tx, cur, result, details, by, now)
		if err != nil || r == nil {
			return out, changed, err
		}
		return out, changed, db.RecordCreated(ctx, tx, *r, out, render)
	})
}

// analyse decides an analysis on the locked report cur.
func analyse(ctx context.Context, tx pgx.Tx, cur Report, result dict.AnalysisResult, details, by string, now time.Time) (Report, bool, error) {
	if cur.AnalysisResult != nil {
		if *cur.AnalysisResult == string(result) && deref(cur.AnalysisDetails) == details {
			return cur, false, nil
		}
		return Report{}, false, fmt.Errorf("%w: %s by %s", ErrAnalysed, *cur.AnalysisResult, deref(cur.AnalysedBy))
	}
	switch cur.Status {
	case StatusReceived, StatusHeld, StatusAcknowledged:
	default:
		return Report{}, false, fmt.Errorf("%w: it is %s", ErrNotAnalysable, cur.Status)
	}
	if cur.Cancelled() {
		return Report{}, false, fmt.Errorf("%w: its reporter cancelled it", ErrNotAnalysable)
	}
	next := cur
	next.AnalysisResult, next.AnalysisDetails, next.AnalysedBy, next.AnalysedAt = ptr(string(result)), &details, &by, &now
	if cur.Status == StatusAcknowledged {
		next.Status = StatusAnalysed
	}
	return save(ctx, tx, cur, next)
}

// Closed records the DICT's close of the analysed report (or a CLOSED read
// back with our result): DISAGREED releases its hold and ends it; AGREED
// waits RequestWindow for the payer's participant's refund request.
func (s *Store) Closed(ctx context.Context, at Report, seen dict.InfractionReport) (Report, bool, error) {
	return s.decide(ctx, at.ID, at.Gen, func(tx pgx.Tx, cur Report) (Report, bool, error) {
		if cur.Status != StatusAnalysed {
			return cur, false, nil
		}
		now, err := s.now(ctx, tx)
		if err != nil {
			return Report{}, false, err
		}
		next := withDICT(cur, seen)
		next.ClosedAt, next.DICTProblem = &now, nil
		if *cur.AnalysisResult == string(dict.Disagreed) {
			return end(ctx, tx, cur, next, EndReleased)
		}
		next.Status, next.RequestDueAt = StatusAwaitingRequest, ptr(now.Add(RequestWindow))
		noteClosedNotOurs(&next) // its request taken CLOSED before: seen now
		return save(ctx, tx, cur, next)
	})
}

// Cancel ends a report its reporter cancelled at the DICT, its hold
// released: before any return only (a devolução recorded goes on: the
// money left with it).
func (s *Store) Cancel(ctx context.Context, at Report) (Report, bool, error) {
	return s.decide(ctx, at.ID, at.Gen, func(tx pgx.Tx, cur Report) (Report, bool, error) {
		if !cur.Cancelled() || !cancellable(cur) || closedNotOurs(cur) {
			// closedNotOurs: its request CLOSED with no result or
			// accepted by a close not ours, money may be owed to the
			// payer on it: nothing released (the activity stops
			// visibly; review of issue 37 LOW-2).
			return cur, false, nil
		}
		return end(ctx, tx, cur, cur, EndCancelled)
	})
}

// cancellable says whether a cancel at the DICT is the report's next step:
// no return begun. The store's Cancel still refuses to end one whose
// request is closedNotOurs (its activity then stops visibly): the run
// steps to the cancel whatever the request, so that a report cancelled at
// any status stops, never waits on for a step its reporter ended (an
// analysis refused, review r6 HIGH-1).
func cancellable(r Report) bool {
	switch r.Status {
	case StatusReceived, StatusHeld, StatusAcknowledged, StatusAnalysed, StatusAwaitingRequest:
		return true
	}
	return false
}

// ExpireRequest releases an agreed report whose refund request did not
// come within its 72 hours, as the DICT's list of refund requests read from
// listedFrom (on our clock) showed none for it (Activities.ExpireRequest).
// A list read before the request's time plus ExpiryCovered (the DICT's
// lists lag its writes, and its clock may be behind ours) proves nothing:
// it changes nothing and is an error (the run reads again). Every path of
// the expiry (the lister's cover, its own listing, the PSP's notices) is
// fenced here.
func (s *Store) ExpireRequest(ctx context.Context, at Report, listedFrom time.Time) (Report, bool, error) {
	return s.decide(ctx, at.ID, at.Gen, func(tx pgx.Tx, cur Report) (Report, bool, error) {
		if cur.Status != StatusAwaitingRequest || cur.RequestOpen() || cur.RefundClosedAt != nil || closedCopy(cur) || closedNotOurs(cur) {
			return cur, false, nil // a request came: its own end (Next), never the 72 hours'
		}
		if from := cur.RequestDueAt.Add(ExpiryCovered); listedFrom.Before(from) {
			return Report{}, false, fmt.Errorf("report %s: its refund request is due until %s, listed from %s, decided from %s: not yet",
				cur.ID, cur.RequestDueAt.Format(time.RFC3339), listedFrom.Format(time.RFC3339), from.Format(time.RFC3339))
		}
		return end(ctx, tx, cur, cur, EndReleased)
	})
}

// ListLag is how long after a request's time the DICT's list must be read
// to show every request made within it: the lists lag the writes by up to
// 5 seconds (the specification's listRefund), and our clock may differ a
// little from the DICT's.
const ListLag = 15 * time.Second

// earlyTolerance is how far before a deadline, by the run's clock
// (Temporal's), the run asks for its transition (Next). It decides
// nothing: the transition checks the deadline by the database's clock
// (Store.now) under the row's lock, and asked before it changes nothing
// and is a "not yet" the activity retries (Finish's, NotYetError, the run
// answers by returning on). Kept in Next so that the runs
// recorded with it replay; the run no longer finishes a return in parts
// early by it (nextStep, returnToDeadlineChange).
const earlyTolerance = time.Minute

// Return hands what the report holds to the devolução saga: in one
// transaction under the report's lock, a devolução of the PIX recorded
// with its debit, capturing what the report's hold holds (db.RecordRefund,
// CaptureAll), of what is left to return (the request's amount less what
// was returned). The hold is kept (KeepHold): it fills on for the rest, and
// a devolução not made gives its money back to it (db.RestoreHold). A hold
// holding or filling to more than that is shrunk in place first
// (db.Shrink): the money to return is never released and held anew, which
// would make it available between the two, or for good when the new hold
// took less (a hold that fills takes nothing while an older one lacks).
// A hold made before holds filled is made one that fills first
// (db.MakeFilling), so that it is kept and restored the same way; it takes
// then what the account has available up to what is left (the money come
// in since it was made), as a hold that filled would have.
// Nothing held is held now, up to what is left (a part that arrived since).
// With nothing available the report waits for the account's next credits
// (awaiting_credit). Acts on an open refund request
// (awaiting_refund_request), or on one being returned in parts, before
// ReturnWindow ends (return_until, by the database's clock, checked again
// after the locks: beforeReturnUntil). A request taken or reopened just
// before return_until and returned after it (the run late, a lock wait, a
// retry) changes nothing and takes nothing, as the deadline does for a
// return in parts: no devolução met by the PIX's window's refusal
// (REJECTED CANNOT_REFUND), no hold made anew taking the customer's
// credits; the run closes the request as the deadline closes it and ends
// the report, what it holds released (Next, Finish; attack review r13
// LOW). A report whose request we closed REJECTED at the DICT
// (closedRejected) changes nothing either, whatever the clocks say: a
// devolução after it would answer a request the DICT holds rejected,
// with no rtrId; the report ends at return_until, what it holds released
// (Finish; attack review r14 MED: the run's clock ahead of the
// database's closed it NO_BALANCE, then its Finish was "not yet" and its
// Return captured a credit that filled the hold within the skew). Nor
// does a report whose request's copy is CLOSED with no result said
// (closedUnknown): nothing captured, its hold kept (review r22 F2).
func (s *Store) Return(ctx context.Context, at Report) (Report, bool, error) {
	out, changed, err := s.decide(ctx, at.ID, at.Gen, func(tx pgx.Tx, cur Report) (Report, bool, error) {
		now, err := s.now(ctx, tx)
		if err != nil {
			return Report{}, false, err
		}
		switch {
		case closedRejected(cur):
			// Its request closed REJECTED at the DICT: nothing more is
			// returned on it (attack review r14 MED).
			return cur, false, nil
		case closedUnknown(cur):
			// CLOSED with no result said: maybe rejected, so nothing is
			// returned on it (the run stops visibly: ReturnReport).
			return cur, false, nil
		case cur.Status == StatusAwaitingRequest && withinReturnUntil(cur, now) && cur.RequestOpen() && !cur.Cancelled():
		case cur.Status == StatusAwaitingCredit && withinReturnUntil(cur, now) && cur.ReturnedCents < cur.Target() &&
			!RequestCancelled(cur) && cur.ReturnRefused == nil:
		default:
			return cur, false, nil
		}
		next := cur
		next.Status = StatusAwaitingCredit
		left := cur.Target() - cur.ReturnedCents
		if next.HoldID != nil {
			// What it holds now, under its locks (the credit, the account,
			// the hold): no inflow fills it before the capture below.
			hold, err := db.LockHold(ctx, tx, *next.HoldID)
			if err != nil {
				return Report{}, false, fmt.Errorf("hold of infraction report %s: %w", cur.ID, err)
			}
			if !hold.Active() {
				// Its holds end under the report's lock only.
				return Report{}, false, fmt.Errorf("infraction report %s holds %s, which is %s", cur.ID, hold.ID, hold.Status)
			}
			if hold, _, err = db.Shrink(ctx, tx, *next.HoldID, left, "med: held for more than is returned"); err != nil {
				return Report{}, false, fmt.Errorf("shrink the hold of infraction report %s: %w", cur.ID, err)
			}
			if hold.FillToCents == nil {
				// Made before holds filled: made one that fills to what is
				// left, in place, so that it is kept after the capture and
				// a devolução not made gives its money back into it, held
				// (captured whole, it would end, and that money would come
				// back available: issue 37, attack review LOW5). It fills
				// until return_until: stopFilling sets it, in this
				// transaction, under these locks.
				if hold, _, err = db.MakeFilling(ctx, tx, *next.HoldID, left, "med: returned in parts"); err != nil {
					return Report{}, false, fmt.Errorf("make the hold of infraction report %s fill: %w", cur.ID, err)
				}
			}
			next.HeldCents = hold.AmountCents
		}
		if next.HoldID == nil {
			if err := holdMore(ctx, tx, &next, left); err != nil {
				return Report{}, false, s.refusedWithin(ctx, tx, cur, err)
			}
		}
		if next.HoldID == nil || next.HeldCents == 0 {
			// Nothing held yet: the hold fills as money comes in.
			if cur.Status == StatusAwaitingCredit && deref(uuidString(next.HoldID)) == deref(uuidString(cur.HoldID)) &&
				next.HeldCents == cur.HeldCents {
				return cur, false, nil // nothing arrived: nothing changes
			}
			if err := s.beforeReturnUntil(ctx, tx, cur); err != nil {
				return Report{}, false, err
			}
			return save(ctx, tx, cur, next)
		}
		// CaptureAll: what the hold holds under the capture's locks.
		refund, err := db.RecordRefund(ctx, tx, db.NewRefund{ID: pix.NewRefundID(), Hold: *next.HoldID, CaptureAll: true, KeepHold: true,
			RefundRequest: pix.RefundRequest{EndToEndID: cur.EndToEndID, AmountCents: next.HeldCents, Reason: returnReason}}, nil, "med:"+cur.ID.String())
		if err != nil {
			return Report{}, false, s.refusedWithin(ctx, tx, cur, fmt.Errorf("return infraction report %s: %w", cur.ID, err))
		}
		if err := s.beforeReturnUntil(ctx, tx, cur); err != nil {
			return Report{}, false, err
		}
		next.Status, next.RefundID, next.HeldCents = StatusReturning, &refund.ID, 0
		return save(ctx, tx, cur, next)
	})
	if errors.Is(err, errReturnWindowEnded) {
		// Rolled back: the report as it is, nothing changed, as when the
		// window was seen ended at the start.
		cur, err := s.Get(ctx, at.ID)
		return cur, false, err
	}
	if refusal := ReturnRefusal(err); refusal != "" {
		// Rolled back (nothing held nor released by it): recorded on its own.
		return s.refuseReturn(ctx, at, refusal)
	}
	if changed && out.Status == StatusReturning {
		s.store.Wake(db.RefundDueChannel)
	}
	return out, changed, err
}

// closedRejected says whether r's refund request was closed by us at the
// DICT in a way that admits no return: REJECTED, which Closing sends when
// nothing was returned (no devolução settled, Returns 0, or no rtrId to
// answer with) and RefundClosed records with no rtrId. Decided under the
// report's lock (the close is recorded under it too): it does not change
// under Return's later locks. A request closed PARTIALLY_ACCEPTED (after a
// first part, with its rtrId) is returned on, in parts, until the amount
// or return_until.
//
// So is a request whose CLOSED REJECTED copy was taken in (IntakeRefund:
// the DICT's list, the PSP's notice), our close recorded or not: closed
// outside the run (our operator through the PSP's channel), it is the
// DICT's word that nothing is returned on it (review r18 MED-2: a report
// with nothing returned yet returned the credit that filled its hold
// after its request was rejected). With no accepted close of ours
// recorded (rejectedOutside), the run closes it at once (CloseRefund
// records the copy's REJECTED, no DICT write) and Finish ends it, before
// return_until, what it holds released once (review r19 HIGH-1); after
// our accepted close recorded (its rtrId), the copy is the DICT's word
// against a devolução made: dict_not_as_ours, left to an operator, held
// until return_until (review r21 HIGH-1).
func closedRejected(r Report) bool {
	return (r.RefundClosedAt != nil && (r.Returns == 0 || r.FirstRtrID == nil || r.RefundClosedRtrID == nil)) ||
		rejectedAtTheDICT(r)
}

// closedUnknown says whether r's own refund request is CLOSED by the copy
// taken in (IntakeRefund: the DICT's list, the PSP's notice) with no
// result said, our close not recorded: the DICT's Refund leaves its
// AnalysisResult optional, and both doors take such a copy (refusing it
// would lose the CLOSED, and the returns would go on as if it were OPEN).
// A CLOSED request's result decides whether it is returned on (a
// PARTIALLY_ACCEPTED close of ours: yes; REJECTED: no, closedRejected),
// and an unknown one is no answer: nothing is returned on it (Return),
// its hold kept, and the run stops visibly (ReturnReport,
// refundClosedAtThePSP) until a copy with its result is taken
// (closedResultNoticed) or an operator decides (review r22 F2: the credit
// that filled the hold was returned, and behind a PSP our
// PARTIALLY_ACCEPTED close recorded, on a request maybe rejected).
func closedUnknown(r Report) bool {
	return closedNotOurs(r) && r.RefundRequestDICTResult == nil
}

// closedNotOurs says whether r's own refund request is CLOSED at the DICT
// by the copy taken in, our close not recorded (refund_closed_at), and not
// CLOSED REJECTED (rejectedAtTheDICT, whoever closed it: nothing owed, its
// own end): its result unknown (closedUnknown), or accepted by a close that
// is not our recorded one (behind a PSP, our operator through the PSP's
// channel with another rtrId; a first copy taken CLOSED accepted). The DICT
// may hold money owed to the payer on it: a request came, so the 72 hours'
// expiry releases nothing (Store.ExpireRequest; the activity stops
// visibly, dict_not_as_ours), nor does a cancel of the report end it
// (Store.Cancel; CancelReport stops visibly), as an operator's release is
// refused before return_until
// (releasable; review of issue 37, MED-1 and LOW-2).
func closedNotOurs(r Report) bool {
	return r.RefundClosedAt == nil && r.RefundRequestID != nil && deref(r.RefundRequestState) == string(dict.RefundClosed) &&
		!rejectedAtTheDICT(r)
}

// beforeReturnUntil checks again, after the last lock Return takes (the
// PIX's credit, the account, the hold: db.LockHold, db.Hold,
// db.RecordRefund), that a report returned (its request open,
// awaiting_refund_request, or in parts, awaiting_credit) is still within
// its ReturnUntil, by the database's clock read now: one that ended while
// the transaction waited for those locks is errReturnWindowEnded, rolled
// back, the same "nothing changes" as one seen ended before them. Checked
// too before a final refusal of the devolução is recorded (refusedWithin),
// which such a wait may meet first.
func (s *Store) beforeReturnUntil(ctx context.Context, tx pgx.Tx, cur Report) error {
	if cur.Status != StatusAwaitingCredit && cur.Status != StatusAwaitingRequest {
		return nil
	}
	now, err := s.now(ctx, tx)
	if err != nil {
		return err
	}
	if !withinReturnUntil(cur, now) {
		return fmt.Errorf("%w: report %s, at %s", errReturnWindowEnded, cur.ID, now.Format(time.RFC3339Nano))
	}
	return nil
}

// refusedWithin is err, met by Return after its locks, unless it is a
// final refusal of the devolução (ReturnRefusal: the PIX's window closed,
// its account closed) and the report's return_until ended while Return
// waited for those locks: then errReturnWindowEnded, nothing changed, as
// when the deadline is seen ended before them (its end at return_until
// closes the request, NO_BALANCE when nothing was returned), not a refusal
// recorded (REJECTED CANNOT_REFUND or ACCOUNT_CLOSURE): the PIX's window
// (received_at + 90 days) closes no later than return_until, so such a
// wait meets its refusal first, and an account closed after the 90 days
// changes nothing either (attack reviews r10 LOW-1, r11 LOW-1; saga/block's
// Return does the same for its 72 hours). A refusal is no SQL error: the
// transaction reads on.
//
// The PIX's window closed is the deadline itself for a report returned in
// parts, whatever its return_until says: a report taken in before
// return_until became the window's close (attack review r11 LOW-2) keeps
// credited_at + 90 days, later than the window by the inbox's backlog
// then, and a part met in that gap is no refusal either (attack review r12
// MED-1): nothing changes, and its end at return_until closes the request
// as the deadline does.
func (s *Store) refusedWithin(ctx context.Context, tx pgx.Tx, cur Report, err error) error {
	if ReturnRefusal(err) == "" {
		return err
	}
	if cur.Status == StatusAwaitingCredit && errors.Is(err, pix.ErrRefundWindowClosed) {
		return fmt.Errorf("%w: report %s, the PIX's devolução window closed: %w", errReturnWindowEnded, cur.ID, err)
	}
	if ended := s.beforeReturnUntil(ctx, tx, cur); ended != nil {
		return ended
	}
	return err
}

// withinReturnUntil says whether r may still be returned at now (the
// database's clock): before its ReturnUntil (none: never).
func withinReturnUntil(r Report, now time.Time) bool {
	return r.ReturnUntil != nil && now.Before(*r.ReturnUntil)
}

// errReturnWindowEnded: a report's ReturnUntil ended during its Return's
// lock waits (beforeReturnUntil); Return answers it as nothing changed.
var errReturnWindowEnded = errors.New("the report's return window ended")

// ReturnRefusal is the refusal of a devolução that no later try changes
// ("": none, or not final): the PIX's 90-day devolução window closed, or its
// account closed. A business outcome of the report (Report.ReturnRefused),
// never a failure of its run, which the durable start would start again
// into the same refusal.
func ReturnRefusal(err error) string {
	for _, r := range returnRefusals {
		if errors.Is(err, r.err) {
			return r.name
		}
	}
	return ""
}

// returnRefusals are the final refusals of a devolução, by their name in
// Report.ReturnRefused and pix_med_returns_refused_total's refusal label
// (each series exported from the start, at 0, so that the alert and the
// dashboard watch a metric that exists before the first refusal).
var returnRefusals = []struct {
	name string
	err  error
}{
	{"refund_window_closed", pix.ErrRefundWindowClosed},
	{"account_closed", pix.ErrAccountClosed},
}

// refuseReturn records that the report's return was refused for good
// (refusal): it waits, as awaiting_credit, for its refund request's close
// at the DICT with what was returned (REJECTED when nothing), then ends,
// what it still holds released. Visible: the report's return_refused,
// pix_med_returns_refused_total, PixMEDReturnRefused.
func (s *Store) refuseReturn(ctx context.Context, at Report, refusal string) (Report, bool, error) {
	out, changed, err := s.decide(ctx, at.ID, at.Gen, func(tx pgx.Tx, cur Report) (Report, bool, error) {
		if cur.ReturnRefused != nil {
			return cur, false, nil
		}
		next := cur
		next.Status, next.ReturnRefused = StatusAwaitingCredit, &refusal
		return save(ctx, tx, cur, next)
	})
	if changed {
		returnsRefusedTotal.WithLabelValues(refusal).Inc()
	}
	return out, changed, err
}

// returnReason is the reason of a report's devoluções (their descricao at
// the PSP).
const returnReason = "MED: devolução"

// Settle records the end of the report's devolução: returned, its amount
// counts (the first's rtrId kept for the DICT's close), the report waits
// for its close at the DICT and what is left (awaiting_credit); not made
// (reversed: the money credited back, available), the report waits as
// awaiting_credit to hold and return it again. A devolução still open
// changes nothing. The devolução is read before the report's transaction
// (its ended status is final), as saga/block's Settle does.
func (s *Store) Settle(ctx context.Context, at Report) (Report, bool, error) {
	if at.Status != StatusReturning || at.RefundID == nil {
		return at, false, nil
	}
	refund, err := s.store.GetRefund(ctx, *at.RefundID)
	if err != nil {
		return Report{}, false, db.Classify(fmt.Errorf("read the devolução of infraction report %s: %w", at.ID, err))
	}
	if refund.Status != pix.RefundReturned && refund.Status != pix.RefundReversed {
		return at, false, nil
	}
	return s.decide(ctx, at.ID, at.Gen, func(tx pgx.Tx, cur Report) (Report, bool, error) {
		if cur.Status != StatusReturning || deref(cur.RefundID) != refund.ID {
			return cur, false, nil
		}
		next := cur
		next.Status, next.RefundID = StatusAwaitingCredit, nil
		if next.HoldID != nil {
			// The next hold, taken with the capture, has filled since (a
			// reversed devolução fills it too, before the hold's
			// fill-until: its money came back). Read
			// through the transaction, never the pool: a second connection
			// asked for under the report's lock waits on the pool, which
			// as many Settles at once as it has connections exhaust.
			hold, err := db.ReadHold(ctx, tx, *next.HoldID)
			if err != nil {
				return Report{}, false, fmt.Errorf("hold of infraction report %s: %w", cur.ID, err)
			}
			next.HeldCents = hold.AmountCents
		}
		if refund.Status == pix.RefundReturned {
			next.ReturnedCents += refund.AmountCents
			next.Returns++
			if next.FirstRtrID == nil {
				next.FirstRtrID = refund.RtrID
			}
		}
		return save(ctx, tx, cur, next)
	})
}

// RefundClosed records our close of the refund request at the DICT (or a
// CLOSED read back with our closing).
func (s *Store) RefundClosed(ctx context.Context, at Report, rtrID string) (Report, bool, error) {
	return s.decide(ctx, at.ID, at.Gen, func(tx pgx.Tx, cur Report) (Report, bool, error) {
		if cur.RefundClosedAt != nil || cur.RefundRequestID == nil {
			return cur, false, nil
		}
		now, err := s.now(ctx, tx)
		if err != nil {
			return Report{}, false, err
		}
		next := cur
		next.RefundClosedAt, next.RefundRequestState, next.DICTProblem = &now, ptr(string(dict.RefundClosed)), nil
		if rtrID != "" {
			next.RefundClosedRtrID = &rtrID
		}
		return save(ctx, tx, cur, next)
	})
}

// Finish ends a report being returned in parts once its request is closed
// at the DICT and the amount is returned, or ReturnWindow has ended, or
// its return was refused for good (ReturnRefusal), or at once when the
// payer's participant cancelled its request: what
// is still held released, the report returned, returned_in_part, or
// released (nothing returned). So too a report whose request came too late
// to be returned by ReturnWindow's end (awaiting_refund_request, its
// request closed at the DICT as the deadline closes it: Next). One whose
// request another than our close rejected at the DICT, nothing returned,
// ends rejected_at_dict (closedByTheDICT).
func (s *Store) Finish(ctx context.Context, at Report) (Report, bool, error) {
	return s.decide(ctx, at.ID, at.Gen, func(tx pgx.Tx, cur Report) (Report, bool, error) {
		cancelled := RequestCancelled(cur)
		inParts := cur.Status == StatusAwaitingCredit && (cur.RefundClosedAt != nil || cancelled)
		late := cur.Status == StatusAwaitingRequest && cur.RefundClosedAt != nil
		if !inParts && !late {
			return cur, false, nil
		}
		cause := EndReturned
		if cur.ReturnedCents < cur.Target() {
			// A request CLOSED REJECTED at the DICT admits no return
			// (closedRejected): nothing is kept for return_until (review
			// r19 HIGH-1), as for a cancelled or refused one, unless our
			// recorded close accepted it (rejectedOutside).
			if !cancelled && cur.ReturnRefused == nil && !rejectedOutside(cur) {
				now, err := s.now(ctx, tx)
				if err != nil {
					return Report{}, false, err
				}
				if now.Before(*cur.ReturnUntil) {
					// Never before return_until by the database's clock,
					// not by a second (the held money released on a
					// deadline not passed): changes nothing, and the run
					// returns on until then (NotYetError).
					return Report{}, false, &NotYetError{Report: cur.ID, Until: *cur.ReturnUntil, Left: cur.ReturnUntil.Sub(now)}
				}
			}
			switch {
			case cur.ReturnedCents > 0:
				cause = EndReturnedInPart
			case closedByTheDICT(cur):
				// Not our close's end, nor the deadline's: its own cause,
				// counted and shown as such (review r21 MED-3, LOW-6).
				cause = EndRejectedAtDICT
			default:
				cause = EndReleased
			}
		}
		return end(ctx, tx, cur, cur, cause)
	})
}

// NotYetError is Finish's answer for a report returned in parts asked
// before its return_until (Until) by the database's clock, Left from it: a
// run whose clock runs ahead of the database's; and MarkSent's for the
// close of its request as the deadline closes it (DeadlineClosing). Nothing changed; the run
// returns on what fills the report's hold, and waits for credits, until
// Left has passed (NotYetType), then asks again: a part filled within that
// time is returned, never released by the Finish that passes after it
// (attack review r12 LOW-1).
type NotYetError struct {
	Report uuid.UUID
	Until  time.Time
	Left   time.Duration
}

func (e *NotYetError) Error() string {
	return fmt.Sprintf("report %s returns until %s, %s from now: not yet", e.Report, e.Until.Format(time.RFC3339Nano), e.Left)
}

// The DICT writes the saga marks before it sends them (Store.MarkSent).
type Write string

const (
	WriteAcknowledge Write = "acknowledge"
	WriteClose       Write = "close"
	WriteRefundClose Write = "refund_close"
)

// MarkSent records, before the write w is sent to the DICT, that it may be
// done from now on: whoever finds the mark (a retry, a run after a worker
// stopped, a new run) reads the DICT back before it sends w again, whatever
// its attempt. Fenced by at's generation, which it keeps (not a decision:
// nothing the run decides on changes); a mark set already changes nothing.
//
// The close of a refund request as the deadline closes it (REJECTED
// NO_BALANCE: nothing returned by return_until, DeadlineClosing) is decided
// here by the database's clock: asked before return_until by it (a run
// whose clock runs ahead), nothing is marked and it is a NotYetError, and
// the run returns on until then (the review of 4409c89, MED-2: a request
// taken in that gap, its money held, was closed REJECTED and released).
func (s *Store) MarkSent(ctx context.Context, at Report, w Write) (Report, bool, error) {
	return s.decide(ctx, at.ID, at.Gen, func(tx pgx.Tx, cur Report) (Report, bool, error) {
		if w == WriteRefundClose && DeadlineClosing(Closing(cur)) && cur.ReturnUntil != nil {
			now, err := s.now(ctx, tx)
			if err != nil {
				return Report{}, false, err
			}
			if now.Before(*cur.ReturnUntil) {
				return Report{}, false, &NotYetError{Report: cur.ID, Until: *cur.ReturnUntil, Left: cur.ReturnUntil.Sub(now)}
			}
		}
		out, err := one(tx.Query(ctx, medSQL.MarkSent, cur.ID, cur.Gen, string(w)))
		if errors.Is(err, ErrNotFound) {
			return cur, false, nil // marked already
		}
		if err != nil {
			return Report{}, false, fmt.Errorf("mark the DICT's %s of infraction report %s: %w", w, cur.ID, err)
		}
		return out, true, nil
	})
}

// Sent says whether r shows the write w as possibly done (marked before it
// was sent).
func (r Report) Sent(w Write) bool {
	switch w {
	case WriteAcknowledge:
		return r.AcknowledgeSentAt != nil
	case WriteClose:
		return r.CloseSentAt != nil
	}
	return r.RefundCloseSentAt != nil
}

// NoteProblem records, visibly, why the saga stopped at the DICT (a
// refusal, an answer not verified): the run waits for an operator, or a
// new intake, before it asks again.
func (s *Store) NoteProblem(ctx context.Context, at Report, problem string) (Report, bool, error) {
	return s.noteProblem(ctx, at, problem, nil)
}

// NoteProblemOn is NoteProblem of a stop on the quarantined item q (its
// problem names it): recorded with the report's generation
// (pix_med_quarantine_stops), so that a clear of that copy's quarantine
// wakes the run (QuarantineCleared), and a clear of another copy does not.
// Recorded even when the problem's text is as it was: a stop on a newer
// copy of the same item says the same. A copy cleared since the step met
// it (its row gone: a clear committed between the quarantine and this
// stop, which found no stop to wake) records nothing: ErrStopCleared, the
// step decided again at once rather than stopped with no clear left to
// wake it (attack review r7 LOW-1). The copy's row is kept (Held) until
// the stop commits, so a clear after it finds the stop (Wake).
//
// Lock order (quarantine.sql): the copy's row (Held) is taken before the
// report's, as a clear takes it (its delete) before the reports it wakes.
// Taken after the report's, a stop and a clear at once deadlocked (the
// stop holding the report, waiting for the row the clear deleted; the
// clear waiting for the report): attack review issue 37 LOW-1.
func (s *Store) NoteProblemOn(ctx context.Context, at Report, problem string, q Quarantined) (Report, bool, error) {
	return s.noteProblem(ctx, at, problem, &q)
}

// ErrStopCleared: the quarantined copy a step stopped on was cleared
// before the stop was recorded (NoteProblemOn); the step is decided again.
var ErrStopCleared = errors.New("the quarantined copy the step stopped on was cleared before the stop was recorded")

func (s *Store) noteProblem(ctx context.Context, at Report, problem string, on *Quarantined) (Report, bool, error) {
	var first func(pgx.Tx) error
	held := false
	if on != nil {
		// The copy's row, before the report's lock (the lock order).
		first = func(tx pgx.Tx) error {
			var row int
			err := tx.QueryRow(ctx, quarantineSQL.Held, on.Kind, quarantinedID(on.ID), on.LastModified).Scan(&row)
			if held = err == nil; err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("read the quarantine of %s %s: %w", on.Kind, on.ID, err)
			}
			return nil
		}
	}
	return s.decideAfter(ctx, at.ID, at.Gen, first, func(tx pgx.Tx, cur Report) (Report, bool, error) {
		if on != nil && !held {
			return Report{}, false, fmt.Errorf("infraction report %s, %s %s (modified %s): %w", cur.ID, on.Kind, on.ID,
				on.LastModified.Format(time.RFC3339Nano), ErrStopCleared)
		}
		problem = boundedProblem(problem)
		out, changed := cur, false
		if deref(cur.DICTProblem) != problem {
			next := cur
			next.DICTProblem = &problem
			var err error
			if out, changed, err = save(ctx, tx, cur, next); err != nil {
				return Report{}, false, err
			}
		}
		if on != nil {
			if _, err := tx.Exec(ctx, quarantineSQL.Stop, out.ID, on.Kind, quarantinedID(on.ID), on.LastModified, out.Gen); err != nil {
				return Report{}, false, fmt.Errorf("record infraction report %s stopped on %s %s: %w", out.ID, on.Kind, on.ID, err)
			}
		}
		return out, changed, nil
	})
}

// boundedProblem is problem as dict_problem holds it: at most 500
// characters (its CHECK), cut at 500 bytes on a character's boundary; the
// DICT's details a stop's text quotes may be up to 2,000.
func boundedProblem(problem string) string {
	if len(problem) > 500 {
		problem = strings.ToValidUTF8(problem[:500], "")
	}
	return problem
}

// end ends the locked report cur as next with cause, releasing what it
// still holds.
func end(ctx context.Context, tx pgx.Tx, cur, next Report, cause string) (Report, bool, error) {
	if next.RequestOpen() && next.RefundClosedAt == nil {
		if err := keepUnanswered(ctx, tx, &next, cause); err != nil {
			return Report{}, false, err
		}
	}
	if next.HoldID != nil {
		if err := releaseHold(ctx, tx, &next, "med "+cause); err != nil {
			return Report{}, false, err
		}
	}
	next.Status, next.EndCause = StatusEnded, &cause
	return save(ctx, tx, cur, next)
}

// keepUnanswered moves the refund request next took before its close, OPEN
// at the DICT and unanswered, to pix_med_refund_requests as the report
// ends with cause without returning it (DISAGREED: report_disagreed; its
// reporter cancelled it: report_cancelled): kept by its own id, visible,
// counted by pix_med_refund_requests_not_taken while OPEN at the DICT
// (PixMEDRefundRequestNotTaken), its later moves followed there
// (IntakeRefund: the report ended, it keeps it). The report's run closes
// it REJECTED at the DICT as it ends (CloseKeptRequests, keptclose.go);
// the page stays only when that close can't be made. Never left on the ended report, whose run
// answers nothing more.
func keepUnanswered(ctx context.Context, tx pgx.Tx, next *Report, cause string) error {
	why := "report_ended"
	switch {
	case cause == EndCancelled:
		why = "report_cancelled"
	case deref(next.AnalysisResult) == string(dict.Disagreed):
		why = "report_disagreed"
	}
	if _, err := tx.Exec(ctx, medSQL.Unanswered, *next.RefundRequestID, next.ID, *next.RefundRequestCents,
		deref(next.RefundRequestState), why, next.RefundRequestModifiedAt, false, false, "", ""); err != nil {
		return fmt.Errorf("keep refund request %s of infraction report %s, ended %s: %w", *next.RefundRequestID, next.ID, cause, err)
	}
	next.RefundRequestID, next.RefundRequestCents, next.RefundRequestState, next.RefundRequestModifiedAt = nil, nil, nil, nil
	next.RefundRequestDICTResult, next.RefundRequestDICTReason = nil, nil
	return nil
}

// releaseHold releases next's hold. Its holds end under the report's lock
// only (a release here, a capture by its devolução, recorded with the
// report's returning), so it is active: a hold found ended is a fault, not
// a decision.
func releaseHold(ctx context.Context, tx pgx.Tx, next *Report, reason string) error {
	hold, released, err := db.Release(ctx, tx, *next.HoldID, reason)
	if err != nil {
		return fmt.Errorf("release the hold of infraction report %s: %w", next.ID, err)
	}
	if !released {
		return fmt.Errorf("infraction report %s holds %s, which is %s: not released", next.ID, hold.ID, hold.Status)
	}
	next.HoldID, next.HeldCents = nil, 0
	return nil
}

// uuidString is id as a string, nil for none.
func uuidString(id *uuid.UUID) *string {
	if id == nil {
		return nil
	}
	return ptr(id.String())
}
