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
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/covered"
)

// ListerName is the lister's covered window (covered_windows.name).
const ListerName = "dict-med"

// ListedType is the Temporal type of a list the DICT refused (our
// credentials, our signature, a query it does not take): the run fails,
// not retried, counted (pix_med_dict_list_failed_total{reason="refused"},
// PixMEDDICTListFailed); the next run of the Schedule lists from the
// covered end.
const ListedType = "MEDDICTListRefused"

// ListStuckType is the Temporal type of a list that can't get past an
// instant (dict.ErrInstantTooFull: more items of one status modified at
// one instant than a page holds): the run fails, not retried, counted
// (pix_med_dict_list_failed_total{reason="instant_too_full"},
// PixMEDDICTListFailed).
const ListStuckType = "MEDDICTListStuck"

// DICTLister is what the lister needs of the DICT (dict.HTTPClient has it):
// the two lists, walked page by page, the read of a report a refund
// request names that the lister has not taken in, and the read of a
// list's rate-limit bucket (getPolicy) it throttles itself by.
type DICTLister interface {
	WalkInfractionReports(ctx context.Context, q dict.ReportQuery, fn func(dict.InfractionReport) error) (time.Time, error)
	WalkRefunds(ctx context.Context, q dict.RefundQuery, fn func(dict.Refund) error) (time.Time, error)
	GetInfractionReport(ctx context.Context, id string) (dict.InfractionReport, error)
	Bucket(ctx context.Context, policy string) (dict.Bucket, error)
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

// Quarantine records the listed items the doors refuse for good, or that
// are not the specification's (Store.Quarantine), and clears an item's
// once a later listing takes it in, waking the runs stopped on it
// (Doors.ClearQuarantined).
type Quarantine interface {
	Quarantine(ctx context.Context, q Quarantined) (first bool, err error)
	ClearQuarantined(ctx context.Context, kind, id string, through time.Time) (cleared int64, err error)
}

// Lister is the activities of the DICT's lister (ListerWorkflow): the
// infraction reports where we are the credited participant and the refund
// requests we are contested in, modified within a window, handed to the
// saga's doors, the window covered only once all of it was.
type Lister struct {
	Covered ListerStore
	DICT    DICTLister
	Doors   Intaker
	// Quarantine records an item the doors refuse for good, or one of a
	// verified page that is not the specification's, which the window
	// then moves past; and clears it once a later listing takes it in.
	Quarantine Quarantine
	// Window is the lister's window (MED_DICT_LIST_*).
	Window covered.Settings
	// PartItems bounds what one part takes of each list before it is cut
	// at an instant (0: MaxPartItems); RateLimitWait is the first wait after
	// a 429 without a Retry-After, doubling (0: a second); BucketWait bounds
	// the wait of one page for its list's bucket (0: maxBucketWait).
	PartItems     int
	RateLimitWait time.Duration
	BucketWait    time.Duration
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

// listPolicies are the rate-limit policies the lister's two lists draw
// from, by stage: both filter by our role (IsCredited, ParticipantRole
// CONTESTED), the WITH_ROLE buckets of the specification's table.
var listPolicies = [2]string{dict.PolicyInfractionReportsListWithRole, dict.PolicyRefundListWithRole}

// listReserveShare: the lister leaves a list's bucket a reserve of its
// capacity divided by this (40 tokens of the 200 of a list by role: a
// minute of its refill) for whoever else draws from it: the 72 hours'
// expiry of a report lists its refund requests from the same
// REFUND_LIST_WITH_ROLE bucket before it releases a hold, and so do the
// bank's other systems under the same ISPB. The reserve throttles the
// lister (throttle), never stops it.
const listReserveShare = 5

// maxBucketWait bounds the wait of one page for its bucket (throttle):
// below the reserve a page waits the refill of the tokens it is short of,
// at most this (from an empty bucket of a list by role, 1.5 s a token: a
// page every 5 s, the bucket climbing back to its reserve in about 90 s).
const maxBucketWait = 5 * time.Second

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
// Temporal, a refusal fails the run (ListedType), and so does an instant
// no query reaches the end of (ListStuckType). An item the doors refuse
// for good, or one of a verified page that is not the specification's
// (dict.MalformedItem), is quarantined in its place and the walk goes on;
// any other failure of the doors fails the attempt, retried. A list's
// pages after its first are throttled by its bucket (throttle): slowed
// below its refill while it is at or below its reserve, so that the
// reserve comes back, never stopped.
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
// the 429s, its pages throttled by its bucket, and cuts the part when it
// is full.
func (l *Lister) walk(ctx context.Context, start time.Time, p *listProgress) error {
	budget, th := cmp.Or(l.PartItems, MaxPartItems), l.throttle(ctx, p)
	paging := th.page
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
		// malformed quarantines an item that is not the specification's
		// in its place: its LastModified, or where the walk met it.
		malformed := func(kind string) func(dict.MalformedItem) error {
			return func(m dict.MalformedItem) error {
				return take(cmp.Or(m.LastModified, m.At), func() error { return l.malformed(ctx, kind, m) })
			}
		}
		var err error
		if p.Stage == 0 {
			_, err = l.DICT.WalkInfractionReports(ctx, dict.ReportQuery{Role: dict.Credited, ModifiedAfter: from, ModifiedBefore: p.PartEnd,
				IncludeDetails: true, Malformed: malformed(QuarantinedReport), Paging: paging}, func(r dict.InfractionReport) error {
				return take(r.LastModified, func() error { return l.intake(ctx, r) })
			})
		} else {
			_, err = l.DICT.WalkRefunds(ctx, dict.RefundQuery{Role: dict.RoleContested, ModifiedAfter: from, ModifiedBefore: p.PartEnd,
				IncludeDetails: true, Malformed: malformed(QuarantinedRefund), Paging: paging}, func(r dict.Refund) error {
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
			th.rateLimited()
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
			listFailedTotal.WithLabelValues(listRefused).Inc()
			l.Log.ErrorContext(ctx, "med lister: the DICT refused a list; the covered window stays, the next run lists it again", "error", err)
			return temporal.NewNonRetryableApplicationError(err.Error(), ListedType, err)
		case errors.Is(err, dict.ErrInstantTooFull):
			listFailedTotal.WithLabelValues(listInstantTooFull).Inc()
			l.Log.ErrorContext(ctx, "med lister: the list can't get past an instant of more items of one status than a page holds; "+
				"the covered window stays before it, a human must look", "error", err)
			return temporal.NewNonRetryableApplicationError(err.Error(), ListStuckType, err)
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

// intake hands a listed report to the saga's door. A report the door
// refuses for good (pix.IsRefusal: it contradicts the one received, the
// table can't hold it) is quarantined: it holds back none of the others.
// One taken in clears its quarantine of this copy or an earlier one.
func (l *Lister) intake(ctx context.Context, r dict.InfractionReport) error {
	_, _, err := l.Doors.Intake(ctx, r)
	if pix.IsRefusal(err) {
		return l.quarantine(ctx, Quarantined{Kind: QuarantinedReport, ID: r.ID, LastModified: r.LastModified, Reason: refusalCode(err)}, err)
	}
	if err != nil {
		return activities.KindError(err)
	}
	return l.taken(ctx, QuarantinedReport, r.ID, r.LastModified)
}

// intakeRefund hands a listed refund request to the saga's door. Its report
// not received yet (modified before the first window, or listed later):
// the report is read and taken in first. A request the door refuses for
// good, or whose report the DICT refuses to read or answers not as the
// specification writes it, is quarantined.
func (l *Lister) intakeRefund(ctx context.Context, r dict.Refund) error {
	held := Quarantined{Kind: QuarantinedRefund, ID: r.ID, LastModified: r.LastModified}
	_, _, err := l.Doors.IntakeRefund(ctx, r)
	if errors.Is(err, ErrNotFound) {
		rep, gerr := l.DICT.GetInfractionReport(ctx, r.InfractionReportID)
		switch dict.Classify(gerr) {
		case dict.Refused:
			held.Reason = "dict_refused"
			return l.quarantine(ctx, held, fmt.Errorf("read the report %s the refund request names: %w", r.InfractionReportID, gerr))
		case dict.Malformed:
			// The report read is not the specification's: the request is
			// held visibly, never taken in on a report that can't be read.
			held.Reason = "dict_malformed:InfractionReport"
			return l.quarantine(ctx, held, fmt.Errorf("read the report %s the refund request names: %w", r.InfractionReportID, gerr))
		}
		if gerr != nil {
			return fmt.Errorf("med lister: read the report %s of refund request %s: %w", r.InfractionReportID, r.ID, gerr)
		}
		if err := l.intake(ctx, rep); err != nil {
			return err
		}
		_, _, err = l.Doors.IntakeRefund(ctx, r)
	}
	if pix.IsRefusal(err) {
		held.Reason = refusalCode(err)
		return l.quarantine(ctx, held, err)
	}
	if err != nil {
		return activities.KindError(err)
	}
	return l.taken(ctx, QuarantinedRefund, r.ID, r.LastModified)
}

// taken clears the quarantine of an item the doors just took in (the DICT
// fixed it, or our code was): its rows of this copy or an earlier one
// only (Store.ClearQuarantined), so that a lister late with an older copy
// never clears a newer one's. Once no row is left, the gauge behind
// PixMEDDICTItemQuarantined reads none and the alert stops. A clear that
// fails fails the attempt (retried): the intake is idempotent.
func (l *Lister) taken(ctx context.Context, kind, id string, mod time.Time) error {
	cleared, err := l.Quarantine.ClearQuarantined(ctx, kind, id, mod)
	if err != nil {
		return activities.TechnicalFailure(err)
	}
	if cleared > 0 {
		l.Log.WarnContext(ctx, "med lister: a quarantined item of the DICT's lists is taken in now; its quarantine is cleared",
			"kind", kind, "dict_id", id, "last_modified", mod.Format(time.RFC3339Nano), "cleared", cleared)
	}
	return nil
}

// malformed quarantines an item of a verified page that is not the
// specification's (dict.MalformedItem): its id and LastModified as far as
// they can be read (where the walk met it when its LastModified can't),
// the element at fault as its code (dict_malformed:Status), never the
// DICT's text (the log line has it).
func (l *Lister) malformed(ctx context.Context, kind string, m dict.MalformedItem) error {
	return l.quarantine(ctx, malformedQuarantine(kind, m), m)
}

// malformedQuarantine is the quarantine row of a malformed item: one
// whose LastModified can't be read has a reason ending in LastModified
// (dict_malformed:Status+LastModified), which the lister's take-in of
// another copy never clears (quarantine.sql Clear) and the expiry takes
// as possibly any report's (RefundsFrom).
func malformedQuarantine(kind string, m dict.MalformedItem) Quarantined {
	reason := "dict_malformed"
	if m.Field != "" {
		reason += ":" + m.Field
	}
	if m.LastModified.IsZero() && m.Field != "LastModified" {
		reason += "+LastModified"
	}
	return Quarantined{Kind: kind, ID: m.ID, LastModified: cmp.Or(m.LastModified, m.At), Reason: reason}
}

// refusalCode is the code a refusal of the doors is recorded with: its
// kind's (med_report_mismatch, ...), or invalid_request and the member
// refused; never its text.
func refusalCode(err error) string {
	var invalid *pix.ValidationError
	switch k := pix.KindOf(err); {
	case k != nil:
		return k.Code
	case errors.As(err, &invalid):
		return "invalid_request:" + invalid.Field
	}
	return "refused"
}

// quarantine records an item the doors refused for good, or one not the
// specification's (why), counts it
// the first time (pix_med_dict_items_quarantined_total,
// PixMEDDICTItemQuarantined), and lets the walk go on past it. Its record
// failing fails the attempt (retried): never an item dropped unrecorded.
func (l *Lister) quarantine(ctx context.Context, q Quarantined, why error) error {
	first, err := l.Quarantine.Quarantine(ctx, q)
	if err != nil {
		return activities.TechnicalFailure(err)
	}
	if first {
		quarantinedTotal.WithLabelValues(q.Kind).Inc()
	}
	l.Log.ErrorContext(ctx, "med lister: a listed item can't be taken in; quarantined (pix_med_quarantine), the window moves past it, a human must look",
		"kind", q.Kind, "dict_id", q.ID, "last_modified", q.LastModified.Format(time.RFC3339Nano), "reason", q.Reason, "first", first, "error", why)
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
