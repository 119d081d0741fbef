package med

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/covered"
)

// ListerName is the lister's covered window (covered_windows.name).
const ListerName = "dict-med"

// ListedType is the Temporal type of a list the DICT refused (our
// credentials, our signature, a query it does not take): the run fails,
// not retried; the next run of the Schedule lists from the covered end.
const ListedType = "MEDDICTListRefused"

// DICTLister is what the lister needs of the DICT (dict.HTTPClient has it):
// the two lists, walked page by page, and the read of a report a refund
// request names that the lister has not taken in.
type DICTLister interface {
	WalkInfractionReports(ctx context.Context, q dict.ReportQuery, fn func(dict.InfractionReport) error) (time.Time, error)
	WalkRefunds(ctx context.Context, q dict.RefundQuery, fn func(dict.Refund) error) (time.Time, error)
	GetInfractionReport(ctx context.Context, id string) (dict.InfractionReport, error)
}

// ListerStore is the lister's covered window (covered.Store).
type ListerStore interface {
	covered.Clock
	Advance(ctx context.Context, from *time.Time, to time.Time) (moved bool, err error)
}

// Intaker is the saga's doors (Doors): where each listed report and refund
// request goes.
type Intaker interface {
	Intake(ctx context.Context, in dict.InfractionReport) (Report, bool, error)
	IntakeRefund(ctx context.Context, in dict.Refund) (Report, bool, error)
}

// Lister is the activities of the DICT's lister (ListerWorkflow): the
// infraction reports where we are the credited participant and the refund
// requests we are contested in, modified within a window, handed to the
// saga's doors, the window covered only once all of it was.
type Lister struct {
	Covered ListerStore
	DICT    DICTLister
	Doors   Intaker
	// Window is the lister's window (MED_DICT_LIST_*).
	Window covered.Settings
	// PartItems bounds what one part takes of each list before it is cut
	// at an instant (0: MaxPartItems); RateLimitWait is the first wait after
	// a 429 without a Retry-After, doubling (0: a second).
	PartItems     int
	RateLimitWait time.Duration
	Log           *slog.Logger
}

// MaxPartItems is how many reports (and as many refund requests) one part
// takes at most before it is cut at the instant reached: a window of an
// outage, or a first run's lookback, is covered part by part.
const MaxPartItems = 2000

// rateLimitTries is how many 429s one attempt waits out (each after the
// DICT's Retry-After, or a doubling wait, at most maxRateLimitWait) before
// it hands the wait to Temporal's retry (NextRetryDelay).
const (
	rateLimitTries   = 8
	maxRateLimitWait = 30 * time.Second
)

// ListPart is what ListDICTPart took: the leading part of its window, from
// its Start to Through (both included), every report and refund request
// modified within it handed to the doors.
type ListPart struct {
	Through          time.Time
	Reports, Refunds int
}

// listProgress is a part's heartbeat: the list it is on (0 the reports, 1
// the refund requests), where that list goes on from (Cursor: the last
// LastModified handed; zero: the window's start), the part's end (cut
// earlier than the window's by a full part), and what it took.
type listProgress struct {
	Stage            int
	Cursor, PartEnd  time.Time
	Reports, Refunds int
}

// BeginDICTList decides the window of a run (covered.Begin): from the
// covered end less MED_DICT_LIST_OVERLAP (or MED_DICT_LIST_LOOKBACK before
// any) up to the database's now less MED_DICT_LIST_GRACE, in milliseconds,
// as the DICT's times are written.
func (l *Lister) BeginDICTList(ctx context.Context) (covered.Window, error) {
	w, err := covered.Begin(ctx, l.Covered, l.Window, time.Millisecond)
	if err != nil {
		return covered.Window{}, activities.TechnicalFailure(err)
	}
	return w, nil
}

// errPartFull stops a walk once its part took what it may.
var errPartFull = errors.New("med lister: the part is full")

// ListDICTPart hands the doors every infraction report of the window where
// we are the credited participant (listInfractionReport, IsCredited,
// IncludeDetails), then every refund request we are contested in
// (listRefund, ParticipantRole CONTESTED), modified from w.Start to the
// part's end, page after page (ModifiedAfter, ModifiedBefore, Limit 200,
// HasMoreElements: dict.HTTPClient's walks). A list that takes
// MaxPartItems is cut at the next instant it reaches (never within one
// instant, never at the window's start), and the part ends there: the
// workflow records it covered and lists on. What each hands is taken in
// once (the doors are idempotent on the id); a retry goes on from the last
// instant its heartbeat holds, handing that instant again. A 429 is waited
// out (the DICT's Retry-After), a lost or unverified answer retried by
// Temporal, a refusal fails the run (ListedType).
func (l *Lister) ListDICTPart(ctx context.Context, w covered.Window) (ListPart, error) {
	var p listProgress
	if activity.HasHeartbeatDetails(ctx) {
		if err := activity.GetHeartbeatDetails(ctx, &p); err != nil {
			p = listProgress{}
		}
	}
	if p.PartEnd.IsZero() || p.PartEnd.After(w.End) {
		p.PartEnd = w.End
	}
	for p.Stage < 2 {
		err := l.walk(ctx, w.Start, &p)
		if err != nil {
			return ListPart{}, err
		}
		p.Stage, p.Cursor = p.Stage+1, time.Time{}
		activity.RecordHeartbeat(ctx, p)
	}
	return ListPart{Through: p.PartEnd, Reports: p.Reports, Refunds: p.Refunds}, nil
}

// walk walks p's list from its cursor (or start) to p.PartEnd, waiting out
// the 429s, and cuts the part when it is full.
func (l *Lister) walk(ctx context.Context, start time.Time, p *listProgress) error {
	budget := cmp.Or(l.PartItems, MaxPartItems)
	wait := cmp.Or(l.RateLimitWait, time.Second)
	for tries := 1; ; tries++ {
		from := start
		if !p.Cursor.IsZero() {
			from = p.Cursor
		}
		taken := 0
		// take hands one item, unless the part is full and the item is
		// past the last instant taken (so that no instant is split), which
		// then ends the part there, in microseconds (as PostgreSQL keeps
		// the covered end), after the part's start (so that the next part
		// starts later).
		take := func(mod time.Time, hand func() error) error {
			if taken >= budget && mod.After(p.Cursor) && p.Cursor.Truncate(time.Microsecond).After(start) {
				return errPartFull
			}
			if err := hand(); err != nil {
				return err
			}
			taken++
			p.Cursor = mod
			activity.RecordHeartbeat(ctx, *p)
			return nil
		}
		var err error
		if p.Stage == 0 {
			_, err = l.DICT.WalkInfractionReports(ctx, dict.ReportQuery{Role: dict.Credited, ModifiedAfter: from, ModifiedBefore: p.PartEnd,
				IncludeDetails: true}, func(r dict.InfractionReport) error {
				return take(r.LastModified, func() error { return l.intake(ctx, r) })
			})
		} else {
			_, err = l.DICT.WalkRefunds(ctx, dict.RefundQuery{Role: dict.RoleContested, ModifiedAfter: from, ModifiedBefore: p.PartEnd,
				IncludeDetails: true}, func(r dict.Refund) error {
				return take(r.LastModified, func() error { return l.intakeRefund(ctx, r) })
			})
		}
		switch {
		case err == nil:
			return nil
		case errors.Is(err, errPartFull):
			// Every item up to the cursor's instant was handed: the part
			// ends there (cut down to microseconds: never past what was
			// handed).
			p.PartEnd = p.Cursor.Truncate(time.Microsecond)
			return nil
		case dict.Classify(err) == dict.RateLimited:
			d, ok := dict.RetryAfter(err)
			if !ok {
				d, wait = wait, 2*wait
			}
			if tries >= rateLimitTries || d > maxRateLimitWait {
				return temporal.NewApplicationErrorWithOptions(err.Error(), RateLimitedType,
					temporal.ApplicationErrorOptions{Cause: err, NextRetryDelay: d})
			}
			l.Log.InfoContext(ctx, "med lister: the DICT rate-limits the list; waiting", "retry_after", d.String(), "try", tries, "error", err)
			if err := sleep(ctx, d, func() { activity.RecordHeartbeat(ctx, *p) }); err != nil {
				return err
			}
		case dict.Classify(err) == dict.Refused:
			l.Log.ErrorContext(ctx, "med lister: the DICT refused a list; the covered window stays, the next run lists it again", "error", err)
			return temporal.NewNonRetryableApplicationError(err.Error(), ListedType, err)
		default:
			// No answer, one not verified, or the store's failure: Temporal
			// retries the attempt, which goes on from the heartbeat's cursor.
			return err
		}
	}
}

// sleep waits d, or until ctx ends, heartbeating before.
func sleep(ctx context.Context, d time.Duration, beat func()) error {
	beat()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// intake hands a listed report to the saga's door. A report that
// contradicts the one received (ErrReportMismatch) is logged and left: it
// holds back none of the others.
func (l *Lister) intake(ctx context.Context, r dict.InfractionReport) error {
	_, _, err := l.Doors.Intake(ctx, r)
	switch {
	case errors.Is(err, ErrReportMismatch):
		l.Log.ErrorContext(ctx, "med lister: the DICT's report contradicts the one received; left, a human must look", "report_id", r.ID, "error", err)
		return nil
	case err != nil:
		return activities.KindError(err)
	}
	return nil
}

// intakeRefund hands a listed refund request to the saga's door. Its report
// not received yet (modified before the first window, or listed later):
// the report is read and taken in first.
func (l *Lister) intakeRefund(ctx context.Context, r dict.Refund) error {
	_, _, err := l.Doors.IntakeRefund(ctx, r)
	if errors.Is(err, ErrNotFound) {
		rep, gerr := l.DICT.GetInfractionReport(ctx, r.InfractionReportID)
		if dict.Classify(gerr) == dict.Refused {
			l.Log.ErrorContext(ctx, "med lister: the DICT refuses the report a refund request names; the request is left, a human must look",
				"refund_id", r.ID, "report_id", r.InfractionReportID, "error", gerr)
			return nil
		}
		if gerr != nil {
			return fmt.Errorf("med lister: read the report %s of refund request %s: %w", r.InfractionReportID, r.ID, gerr)
		}
		if err := l.intake(ctx, rep); err != nil {
			return err
		}
		_, _, err = l.Doors.IntakeRefund(ctx, r)
	}
	switch {
	case errors.Is(err, ErrReportMismatch):
		l.Log.ErrorContext(ctx, "med lister: the DICT's refund request contradicts the one received; left, a human must look", "refund_id", r.ID, "error", err)
		return nil
	case err != nil:
		return activities.KindError(err)
	}
	return nil
}

// AdvanceDICTList records that a part is covered: the covered end moves to
// w.End, only from w.CoveredFrom (a late run changes nothing: moved is
// false), never over a gap (covered.CheckPart), never past the database's
// clock.
func (l *Lister) AdvanceDICTList(ctx context.Context, w covered.Window) (bool, error) {
	if err := covered.CheckPart(w.Start, w.CoveredFrom); err != nil {
		l.Log.ErrorContext(ctx, "med lister: an advance over a gap refused", "error", err)
		return false, temporal.NewNonRetryableApplicationError(err.Error(), activities.ErrTypeTechnicalFailure, err)
	}
	moved, err := l.Covered.Advance(ctx, w.CoveredFrom, w.End)
	if err != nil {
		return false, activities.TechnicalFailure(err)
	}
	if !moved {
		l.Log.WarnContext(ctx, "med lister: the covered window moved since this run began; this run's end is not recorded",
			"window_end", w.End.Format(time.RFC3339Nano))
	}
	return moved, nil
}
