package med

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/pix"
)

// DICT is what the saga needs of the DICT (internal/dict.HTTPClient has
// it): the reads it reads back with, and the writes it sends.
type DICT interface {
	GetInfractionReport(ctx context.Context, id string) (dict.InfractionReport, error)
	AcknowledgeInfractionReport(ctx context.Context, id string) (dict.InfractionReport, error)
	CloseInfractionReport(ctx context.Context, id string, result dict.AnalysisResult, details string) (dict.InfractionReport, error)
	GetRefund(ctx context.Context, id string) (dict.Refund, error)
	WalkRefunds(ctx context.Context, q dict.RefundQuery, fn func(dict.Refund) error) (time.Time, error)
	CloseRefund(ctx context.Context, id string, r dict.RefundClosing) (dict.Refund, error)
}

// Activities are the saga's activities, with their dependencies.
type Activities struct {
	Store *Store
	DICT  DICT
	Log   *slog.Logger
	// Doors takes in a refund request of another report the expiry's own
	// listing meets (anothersRequest), waking that report's run after a
	// change, as the lister's intake does (nil: Store, no run woken).
	Doors Intaker
	// BehindPSP: MED runs without the DICT (MED_DICT_DISABLED=true), its
	// reports and requests the PSP's notices: nothing can be read back
	// from the DICT, so the close of a report is the PSP's notice CLOSED
	// with our analysis, the 72 hours' expiry our own record, and the
	// close of a refund request our return's outcome (docs/med.md, "A
	// bank behind a PSP").
	BehindPSP bool
	// Covered is the DICT lister's covered window (covered.Store, name
	// ListerName; nil: none): every refund request modified until its end
	// was handed to the saga's doors, so the 72 hours' expiry need not
	// list the DICT for a report whose deadline it covers.
	Covered interface {
		CoveredUntil(ctx context.Context) (until time.Time, ok bool, err error)
	}
}

// StoppedType is the Temporal type of a DICT step the saga stopped at: the
// DICT refused it, or its answer could not be verified. The report says
// why (Report.DICTProblem); the run waits for a signal, or
// ProblemRetryAfter, before it reads back and tries again. Never retried
// by Temporal, never guessed past.
const StoppedType = "MEDDICTStopped"

// NotYetType is the Temporal type of a Finish the database's clock answers
// "not yet" (NotYetError: a run whose clock runs ahead of it), its details
// NotYet. Never retried by Temporal (activityOptions, which
// TestFinalErrorsAreNotRetriedByThePolicy holds to it): the run returns on,
// and waits for credits, until the time left by the database's clock has
// passed, then asks again (Workflow, finishNotYetChange).
const NotYetType = "MEDNotYet"

// NotYet is the details of a NotYetType error: Left, the time left until
// the report's return_until by the database's clock.
type NotYet struct {
	Left time.Duration
}

// RateLimitedType is the Temporal type of a DICT call answered 429: retried
// after the DICT's Retry-After (NextRetryDelay).
const RateLimitedType = "MEDDICTRateLimited"

// LoadReport reads the report.
func (a *Activities) LoadReport(ctx context.Context, id string) (Report, error) {
	key, err := parseID(id)
	if err != nil {
		return Report{}, err
	}
	r, err := a.Store.Get(ctx, key)
	return r, activities.KindError(err)
}

// HoldReport holds the PIX's amount for a report just received (Store.Hold).
func (a *Activities) HoldReport(ctx context.Context, at Report) (Report, error) {
	return a.change(ctx, at, "infraction report held", a.Store.Hold)
}

// CancelReport ends a report its reporter cancelled (Store.Cancel). One
// its store does not end for its request CLOSED not as ours
// (closedNotOurs: money may be owed to the payer) stops visibly, nothing
// released. But with the DICT, a request whose CLOSED copy came after our
// close was sent and before it was recorded (closedCopy: most likely our
// own close, its answer lost) is read back first, as its close does
// (CloseRefundRequest, with no send while the DICT holds it CLOSED): our
// close found there is recorded, and the run's next cancel ends the report;
// a request the DICT holds otherwise stops the run as that read-back does.
// Nothing is released but on the DICT's definitive word (review r6 LOW-1:
// it stopped with no read-back, every ProblemRetryAfter). Behind a PSP
// there is nothing to read back: it stops.
func (a *Activities) CancelReport(ctx context.Context, at Report) (Report, error) {
	r, err := a.change(ctx, at, "infraction report cancelled by its reporter", a.Store.Cancel)
	if err != nil || r.Gen != at.Gen || !r.Open() || !closedNotOurs(r) {
		return r, err
	}
	if !a.BehindPSP && r.Status == StatusAwaitingRequest && closedCopy(r) {
		return a.CloseRefundRequest(ctx, r)
	}
	return Report{}, a.stop(ctx, r, ProblemNotAsOurs, "cancelled by its reporter, but "+closedNotOursProblem(r))
}

// ExpireRequest releases an agreed report whose refund request did not come
// within 72 hours (Store.ExpireRequest), once the DICT says so, at a cost
// bounded per report. The specification has no read of a report's refund
// requests (listRefund filters by participant, role, status and time only,
// an InfractionReport names none), so: when the DICT's lister has covered
// the deadline (ExpiryCovered after it), every request made in time was
// handed to the saga's doors already, and our record is the DICT's word,
// with no call; otherwise (the lister behind, or off) the DICT's list of
// the OPEN refund requests modified from the DICT's close (RequestsFrom)
// is read (a lister that runs but is not past the deadline yet is waited
// for instead: ListerLive), from ListLag after the request's time (the lists lag the
// writes). One the list shows is taken in (Store.IntakeRefund) and the run
// returns it: a request made in time but not listed yet by the lister is
// never released on our table's word. Nor is one quarantined (the lister
// covered past it, malformed or refused): while a refund request
// quarantined and not cleared could be the report's
// (Store.RefundQuarantinedFrom), the covered window is not trusted and the
// DICT is listed. That listing of every OPEN request modified since the
// report's close is the DICT's word on the report, whatever the
// quarantine holds: one of the report's is taken in (refused by the doors:
// quarantined, stopped), one not the specification's may be the report's
// and stops the run visibly (malformedRefund), never released on a guess;
// a row the listing did not meet so (another report's request, or one
// no longer OPEN) holds back no release. A request taken, then CLOSED by a
// copy with no result, or accepted by a close that is not our recorded one
// (closedNotOurs), releases nothing either: the run stops visibly, the
// hold kept. A CLOSED REJECTED one goes its own way (Next: closed, then
// ended rejected_at_dict).
func (a *Activities) ExpireRequest(ctx context.Context, at Report) (Report, error) {
	cur, moved, err := a.current(ctx, at)
	if err != nil || moved || cur.Status != StatusAwaitingRequest || cur.RequestOpen() {
		return cur, err
	}
	if closedNotOurs(cur) {
		return a.closedAtExpiry(ctx, cur)
	}
	listedFrom, err := a.Store.clock(ctx)
	if err != nil {
		return Report{}, err
	}
	release := func(done string) (Report, error) {
		return a.change(ctx, cur, done, func(ctx context.Context, at Report) (Report, bool, error) {
			return a.Store.ExpireRequest(ctx, at, listedFrom)
		})
	}
	if a.BehindPSP {
		// No DICT to list: released on our own record of the PSP's
		// notices (a request noticed late reopens the report: IntakeRefund).
		return release("no refund request noticed within 72 hours: released")
	}
	// A refund request quarantined (malformed, or refused by the doors)
	// that could be this report's is not an absent one: the lister moved
	// its covered window past it, so the covered shortcut is not taken;
	// the DICT is listed, and its listing decides.
	// The cover is read before the quarantine: the lister commits a
	// part's quarantines (ListDICTPart) before it advances the cover past
	// them (AdvanceDICTList), so a cover read past the deadline means
	// every row it moved past is visible to the read after it; read the
	// other way round, a part committed between the two reads would be
	// released past.
	if a.Covered != nil {
		until, ok, err := a.Covered.CoveredUntil(ctx)
		var held bool
		if err == nil {
			_, _, held, err = a.Store.RefundQuarantinedFrom(ctx, RequestsFrom(cur))
		}
		switch {
		case err != nil:
			return Report{}, activities.KindError(err)
		case held:
			// Listed below: the listing decides (malformedRefund).
		case ok && !until.Before(cur.RequestDueAt.Add(ExpiryCovered)):
			return release("no refund request within 72 hours, the DICT's lister past its deadline: released")
		case ok && until.After(listedFrom.Add(-ListerLive)):
			// The lister runs and covers the deadline within minutes:
			// retried (Temporal's backoff) rather than listed.
			return Report{}, fmt.Errorf("report %s: the DICT's lister covered until %s, its refund request deadline needs %s: not yet",
				cur.ID, until.Format(time.RFC3339), cur.RequestDueAt.Add(ExpiryCovered).Format(time.RFC3339))
		}
	}
	// Listed by us, a listing finding none releases only from where the
	// lister's cover would (Store.ExpireRequest's fence: ExpiryCovered):
	// a request the DICT took in time on its own clock, behind ours by up
	// to its skew, may not be listed before; earlier, the release is a
	// "not yet" and the run lists again.
	l, err := a.listRequests(ctx, cur)
	if err != nil {
		return Report{}, err
	}
	if len(l.open) > 0 {
		a.Log.WarnContext(ctx, "refund request found at the DICT at its report's expiry, not taken in before: returned",
			append(attrsOf(cur), "refund_request_id", l.open[0].ID)...)
		return a.takeRefund(ctx, cur, l.open[0])
	}
	if len(l.malformed) > 0 {
		return Report{}, a.malformedRefund(ctx, cur, l.malformed[0])
	}
	for _, r := range l.onItsPIX {
		theirs, err := a.anothersRequest(ctx, cur, r)
		if err != nil {
			return Report{}, err
		}
		if !theirs {
			return Report{}, a.stop(ctx, cur, ProblemNotAsOurs, fmt.Sprintf("the refund request %s is OPEN at the DICT on this report's PIX and names report %q, not this one: "+
				"it may be this report's: not released; decide it at the DICT, then signal", r.ID, r.InfractionReportID))
		}
	}
	return release("no refund request within 72 hours: released")
}

// expiryListing is what the expiry's own listing of the OPEN refund
// requests modified since a report's close met: the report's own (open),
// the items not the specification's (malformed, quarantined), and the
// well-formed ones on the report's PIX (TransactionId its EndToEndId) that
// do not name it (onItsPIX): the InfractionReportId is optional in a
// refund request, and one naming no report, or another, on the report's
// PIX may be its request all the same.
type expiryListing struct {
	open      []dict.Refund
	malformed []Quarantined
	onItsPIX  []dict.Refund
}

// listRequests lists the DICT's OPEN refund requests modified from the
// report's close (RequestsFrom) for the expiry (expiryListing).
func (a *Activities) listRequests(ctx context.Context, cur Report) (expiryListing, error) {
	var l expiryListing
	_, err := a.DICT.WalkRefunds(ctx, dict.RefundQuery{Status: []dict.RefundStatus{dict.RefundOpen},
		ModifiedAfter: RequestsFrom(cur), Malformed: func(m dict.MalformedItem) error {
			q, err := a.quarantineMalformed(ctx, cur, m)
			l.malformed = append(l.malformed, q)
			return err
		}}, func(r dict.Refund) error {
		switch {
		case r.Status != dict.RefundOpen:
		case dict.SameID(r.InfractionReportID, cur.ID.String()):
			l.open = append(l.open, r)
		case r.TransactionID == cur.EndToEndID:
			l.onItsPIX = append(l.onItsPIX, r)
		}
		return nil
	})
	if err != nil {
		return expiryListing{}, a.dictFailed(ctx, cur, "list the refund requests", err)
	}
	return l, nil
}

// anothersRequest says whether r, an OPEN refund request on cur's PIX that
// does not name cur, is settled as another report's: it names another of
// our reports, and the doors put it there (requestReport: taken as its
// own, or kept under it, that report answering another request or ended),
// as the lister's cover finds it (attack review r6 LOW-1: the two paths
// decided differently). The listing puts it through the doors itself
// (intaker: the other report's run woken if it changed), never decides on
// a placement nobody made (attack review r7: no lister, the request was
// recorded nowhere, never answered, never closed by the other's end); one
// the doors refuse for good is quarantined and stops the run
// (refusedTake). Any other (no report named, or one we do not have) may
// be cur's, and holds back its release.
func (a *Activities) anothersRequest(ctx context.Context, cur Report, r dict.Refund) (bool, error) {
	if _, err := requestReport(r); err != nil {
		return false, nil
	}
	placed, _, err := a.intaker().IntakeRefund(ctx, r)
	switch {
	case errors.Is(err, ErrNotFound):
		return false, nil
	case pix.IsRefusal(err):
		return false, a.refusedTake(ctx, cur, r, err)
	case err != nil:
		return false, activities.KindError(err)
	}
	return placed.ID != cur.ID, nil
}

// intaker is the saga's doors (Doors: a report's run woken after its
// change), or the bare store when none is configured.
func (a *Activities) intaker() interface {
	IntakeRefund(ctx context.Context, in dict.Refund) (Report, bool, error)
} {
	if a.Doors != nil {
		return a.Doors
	}
	return a.Store
}

// malformedRefund stops the expiry visibly (dict_not_as_ours,
// PixMEDDICTStopped; the item's own PixMEDDICTItemQuarantined) on q, a
// refund request its own listing met OPEN and modified since the report's
// close that is not the specification's (quarantined: quarantineMalformed):
// it may be the report's request, and the hold is never released on a
// guess. It tries again after a signal or ProblemRetryAfter. An
// operator's clear of the item's quarantine says the copy is no request a
// report of ours must take, and wakes the run (NoteProblemOn), which tries
// its step again at once: with the lister's cover past the deadline and no
// other row held, it releases on the cover without listing the DICT (the
// clear settles it, docs/runbooks.md); otherwise it lists again and stops
// again while the DICT lists that item so (attack review r7 LOW-3).
func (a *Activities) malformedRefund(ctx context.Context, cur Report, q Quarantined) error {
	return a.stopOn(ctx, cur, ProblemNotAsOurs, fmt.Sprintf("the refund request %s is quarantined (%s): listed OPEN at the DICT since the report's close, "+
		"not the specification's, it may be this report's: not released; decide it at the DICT, then clear it once decided not this report's (pixctl med quarantine clear: the run tries again; on the lister's cover past the deadline it releases without listing the DICT)", q.ID, q.Reason), &q)
}

// quarantineMalformed records a refund request the expiry's own listing
// met that is not the specification's (dict.MalformedItem) as the lister
// does (malformedQuarantine), and lets the walk go on: once the walk is
// done, the item stops the expiry (malformedRefund), never a silent
// retry that waits for the lister to cover the deadline past it.
func (a *Activities) quarantineMalformed(ctx context.Context, cur Report, m dict.MalformedItem) (Quarantined, error) {
	q := malformedQuarantine(QuarantinedRefund, m)
	first, err := a.Store.Quarantine(ctx, q)
	if err != nil {
		return q, activities.TechnicalFailure(err)
	}
	if first {
		quarantinedTotal.WithLabelValues(q.Kind).Inc()
	}
	a.Log.ErrorContext(ctx, "MED saga: a refund request listed at the report's expiry is not the specification's; quarantined (pix_med_quarantine), a human must look",
		append(attrsOf(cur), "dict_id", q.ID, "last_modified", q.LastModified, "reason", q.Reason, "first", first, "error", m)...)
	return q, nil
}

// ExpiryCovered is how far past a report's refund request deadline (on
// our clock) the DICT's lister must have covered for the expiry to take
// our record as the DICT's: the lists' lag (ListLag) and the DICT's clock
// ahead of ours by up to what the client accepts of an answer's time
// (dict.DefaultResponseTimeSkew), so that a request the DICT stamped at its
// own deadline was listed.
const ExpiryCovered = ListLag + dict.DefaultResponseTimeSkew

// ListerLive: a covered end within this of now says the DICT's lister
// runs (every MED_DICT_LIST_INTERVAL, a minute by default): the expiry
// waits for it to cover the deadline; an older one (the lister off,
// behind, or failing) and the expiry lists the DICT itself.
const ListerLive = 10 * time.Minute

// RequestsFrom is where the expiry lists a report's refund requests from:
// the DICT takes a request only on a report CLOSED, which it was after we
// marked our close sent (CloseSentAt, before the call), so every request
// of the report was modified after that instant on the DICT's clock, which
// the client holds to within dict.DefaultResponseTimeSkew of ours (it
// refuses an answer whose time lies further). Not the DICT's LastModified
// of the report: the DICT may modify a closed report again, later than a
// request. A close recorded without the mark (none in this saga's DICT
// path; a row from before it) lists from an hour before our close.
func RequestsFrom(r Report) time.Time {
	if r.CloseSentAt != nil {
		return r.CloseSentAt.Add(-dict.DefaultResponseTimeSkew)
	}
	return r.ClosedAt.Add(-time.Hour)
}

// ReturnReport returns what the report holds through the devolução saga
// (Store.Return). A report whose request's copy is CLOSED with no result
// said (closedUnknown), which Return does not return on, stops the run
// visibly (dict_not_as_ours), its hold kept: it would otherwise wait for
// credits it never returns, nothing saying why.
func (a *Activities) ReturnReport(ctx context.Context, at Report) (Report, error) {
	r, err := a.change(ctx, at, "infraction report returning", a.Store.Return)
	if err != nil || r.Gen != at.Gen || !closedUnknown(r) {
		return r, err
	}
	return Report{}, a.stop(ctx, r, ProblemNotAsOurs, closedUnknownProblem)
}

// closedUnknownProblem is the stop of a report whose request's copy is
// CLOSED with no result said (closedUnknown).
const closedUnknownProblem = "the DICT's copy has the refund request CLOSED without a result (no AnalysisResult): " +
	"accepted or rejected is unknown, so nothing is returned on it and its hold is kept; find its result at the DICT " +
	"(or the PSP), then decide it: an operator's"

// closedAtExpiry is the 72 hours' expiry of a report whose request is
// CLOSED, with no result said or accepted by a close not ours
// (closedNotOurs): not an absent request, nor one we answered; nothing
// released (the store's expiry fences it too), the run stopped visibly, an
// operator's. With the DICT, a copy with no result is read back first
// (each try of the stopped step: a signal, ProblemRetryAfter): one that
// says its result is taken in through the door (takeRefund; the result
// then decides: REJECTED, closed and ended rejected_at_dict; accepted,
// stopped as such), one that still says none stops the run again.
func (a *Activities) closedAtExpiry(ctx context.Context, cur Report) (Report, error) {
	if closedUnknown(cur) && !a.BehindPSP {
		seen, err := a.DICT.GetRefund(ctx, cur.RefundRequestID.String())
		if err != nil {
			return Report{}, a.dictFailed(ctx, cur, "read back the refund request", err)
		}
		if seen.Status == dict.RefundClosed && seen.AnalysisResult != "" {
			return a.takeRefund(ctx, cur, seen)
		}
	}
	return Report{}, a.stop(ctx, cur, ProblemNotAsOurs, closedNotOursProblem(cur))
}

// closedNotOursProblem is the stop of a report whose request is CLOSED at
// the DICT, not REJECTED, and our close not recorded (closedNotOurs): its
// result unknown (closedUnknownProblem), or accepted by a close not ours.
func closedNotOursProblem(r Report) string {
	if closedUnknown(r) {
		return closedUnknownProblem
	}
	return "the DICT's copy has the refund request CLOSED " + deref(r.RefundRequestDICTResult) +
		" and no close of ours is recorded: money may be owed to the payer on it, so nothing is released and its hold " +
		"is kept; find who closed it and with which rtrId at the DICT (or the PSP), then decide it: an operator's"
}

// SettleReport records the end of the report's devolução (Store.Settle).
func (a *Activities) SettleReport(ctx context.Context, at Report) (Report, error) {
	return a.change(ctx, at, "devolução of infraction report ended", a.Store.Settle)
}

// FinishReport ends a report returned in parts (Store.Finish). Asked before
// its return_until by the database's clock, it is a NotYetType error.
func (a *Activities) FinishReport(ctx context.Context, at Report) (Report, error) {
	r, err := a.change(ctx, at, "infraction report ended", a.Store.Finish)
	if notYet := notYetError(err); notYet != nil {
		return Report{}, notYet
	}
	return r, err
}

// notYetError is the NotYetType error of a NotYetError in err (Finish's,
// MarkSent's), nil when there is none.
func notYetError(err error) error {
	var notYet *NotYetError
	if !errors.As(err, &notYet) {
		return nil
	}
	return temporal.NewApplicationErrorWithOptions(notYet.Error(), NotYetType,
		temporal.ApplicationErrorOptions{Details: []any{NotYet{Left: notYet.Left}}})
}

// AcknowledgeReport acknowledges the report at the DICT, then records it
// (Store.Acknowledged). A report the DICT has past OPEN already (the intake
// saw it) is recorded without a call; one whose acknowledgement was marked
// sent before (Store.MarkSent: an answer lost, whatever the attempt or the
// run that finds it) is read back first, and sent only while it is OPEN.
func (a *Activities) AcknowledgeReport(ctx context.Context, at Report) (Report, error) {
	cur, moved, err := a.current(ctx, at)
	if err != nil || moved {
		return cur, err
	}
	seen := dict.InfractionReport{}
	if a.BehindPSP && cur.DICTStatus == string(dict.ReportOpen) {
		// The PSP, the participant, acknowledges it at the DICT: no call
		// of ours (docs/med.md, "A bank behind a PSP").
		return a.awaitPSP(ctx, cur, WriteAcknowledge, "the PSP acknowledges the report at the DICT "+
			"(ask it through its channel if it does not): its notice ACKNOWLEDGED records it")
	}
	if cur.DICTStatus == string(dict.ReportOpen) {
		if cur.Sent(WriteAcknowledge) {
			if seen, err = a.DICT.GetInfractionReport(ctx, cur.ID.String()); err != nil {
				return Report{}, a.dictFailed(ctx, cur, "read back the infraction report", err)
			}
		}
		if seen.Status == "" || seen.Status == dict.ReportOpen {
			if cur, moved, err = a.markSent(ctx, cur, WriteAcknowledge); err != nil || moved {
				return cur, err
			}
			seen, err = a.DICT.AcknowledgeInfractionReport(ctx, cur.ID.String())
			if errors.Is(err, dict.ErrInfractionReportOperationInvalid) {
				// The report moved on (closed, cancelled): its status read back decides.
				seen, err = a.DICT.GetInfractionReport(ctx, cur.ID.String())
				if err == nil && seen.Status == dict.ReportOpen {
					return Report{}, a.stop(ctx, cur, ProblemInvalidStatus, "the DICT refused the acknowledgement of an OPEN report")
				}
			}
			if err != nil {
				return Report{}, a.dictFailed(ctx, cur, "acknowledge the infraction report", err)
			}
		}
	}
	return a.change(ctx, cur, "infraction report acknowledged at the DICT", func(ctx context.Context, at Report) (Report, bool, error) {
		return a.Store.Acknowledged(ctx, at, seen)
	})
}

// CloseReport closes the analysed report at the DICT with the operator's
// analysis, then records it (Store.Closed). A close marked sent before
// (Store.MarkSent: a lost answer, whatever the attempt or the run that
// finds it), or a close the DICT refused as invalid for the report's
// status, reads the report back: ACKNOWLEDGED, send it again; CLOSED with our analysis,
// done; CLOSED otherwise, or OPEN, stop visibly (an operator's); CANCELLED,
// record it (the run cancels).
func (a *Activities) CloseReport(ctx context.Context, at Report) (Report, error) {
	cur, moved, err := a.current(ctx, at)
	if err != nil || moved {
		return cur, err
	}
	result, details := dict.AnalysisResult(*cur.AnalysisResult), deref(cur.AnalysisDetails)
	switch {
	case a.BehindPSP && cur.DICTStatus == string(dict.ReportClosed):
		// The PSP closed it at the DICT and noticed it CLOSED: nothing to
		// read back (the DICT is the PSP's); ours when its result is.
		if deref(cur.DICTAnalysisResult) != string(result) {
			return Report{}, a.stop(ctx, cur, ProblemNotAsOurs, fmt.Sprintf("the PSP noticed the report CLOSED (%s), not as we analysed it (%s): an operator's",
				deref(cur.DICTAnalysisResult), result))
		}
		return a.closed(ctx, cur, dict.InfractionReport{})
	case a.BehindPSP && cur.DICTStatus != string(dict.ReportCancelled):
		// No standard call closes it: the operator does, through the
		// PSP's own channel, and the PSP's notice CLOSED is the close.
		return a.awaitPSP(ctx, cur, WriteClose, fmt.Sprintf("close the report %s through the PSP's channel, with the "+
			"analysis' details recorded, within its 7 days: its notice CLOSED records it", result))
	}
	var seen dict.InfractionReport
	readBack := cur.Sent(WriteClose) || cur.DICTStatus != string(dict.ReportAcknowledged)
	for range 2 {
		if readBack {
			if seen, err = a.DICT.GetInfractionReport(ctx, cur.ID.String()); err != nil {
				return Report{}, a.dictFailed(ctx, cur, "read back the infraction report", err)
			}
			switch {
			case seen.Status == dict.ReportCancelled:
				return a.seen(ctx, cur, seen)
			case seen.Status == dict.ReportClosed && seen.AnalysisResult == result && seen.AnalysisDetails == dict.NormalizeDetails(details):
				return a.closed(ctx, cur, seen)
			case seen.Status != dict.ReportAcknowledged:
				return Report{}, a.stop(ctx, cur, ProblemNotAsOurs, fmt.Sprintf("the DICT has the report %s (%s), not as we analysed it (%s): an operator's",
					seen.Status, seen.AnalysisResult, result))
			}
		}
		if cur, moved, err = a.markSent(ctx, cur, WriteClose); err != nil || moved {
			return cur, err
		}
		seen, err = a.DICT.CloseInfractionReport(ctx, cur.ID.String(), result, details)
		if errors.Is(err, dict.ErrInfractionReportOperationInvalid) && !readBack {
			readBack = true
			continue
		}
		if err != nil {
			return Report{}, a.dictFailed(ctx, cur, "close the infraction report", err)
		}
		return a.closed(ctx, cur, seen)
	}
	return Report{}, a.stop(ctx, cur, ProblemInvalidStatus, "the DICT refused the close as invalid for the report's status, read back ACKNOWLEDGED")
}

func (a *Activities) closed(ctx context.Context, cur Report, seen dict.InfractionReport) (Report, error) {
	return a.change(ctx, cur, "infraction report closed at the DICT", func(ctx context.Context, at Report) (Report, bool, error) {
		return a.Store.Closed(ctx, at, seen)
	})
}

// seen records the DICT's status of the report read back (a cancel).
func (a *Activities) seen(ctx context.Context, cur Report, seen dict.InfractionReport) (Report, error) {
	r, err := a.change(ctx, cur, "infraction report read back from the DICT", func(ctx context.Context, at Report) (Report, bool, error) {
		return a.Store.Seen(ctx, at, seen)
	})
	if err != nil {
		return Report{}, err
	}
	return r, a.untaken(ctx, cur, r, fmt.Sprintf("the infraction report %s (modified %s)", seen.Status, seen.LastModified.Format(time.RFC3339Nano)))
}

// takeRefund takes the DICT's copy of a refund request read back
// (IntakeRefund). One the door refuses for good (pix.IsRefusal: it names
// the report with another PIX, med_report_mismatch) is quarantined as the
// lister quarantines it (pix_med_quarantine, counted once,
// PixMEDDICTItemQuarantined) and stops the run visibly (dict_not_as_ours,
// PixMEDDICTStopped), the hold kept: a refusal returned as the activity's
// failure would fail the run, which the durable start starts again and
// again, each run failing the same way (issue 37).
func (a *Activities) takeRefund(ctx context.Context, cur Report, seen dict.Refund) (Report, error) {
	r, _, err := a.Store.IntakeRefund(ctx, seen)
	if pix.IsRefusal(err) {
		return Report{}, a.refusedTake(ctx, cur, seen, err)
	}
	if err != nil {
		return Report{}, activities.KindError(err)
	}
	return r, a.untaken(ctx, cur, r, fmt.Sprintf("the refund request %s %s (modified %s)", seen.ID, seen.Status,
		seen.LastModified.Format(time.RFC3339Nano)))
}

// refusedTake quarantines a refund request read back from the DICT that
// the door refused for good (why) and stops the run at its step: it tries
// again after a signal or ProblemRetryAfter, the item recorded and counted
// once (at its LastModified), never a failed run started again.
func (a *Activities) refusedTake(ctx context.Context, cur Report, seen dict.Refund, why error) error {
	q := Quarantined{Kind: QuarantinedRefund, ID: seen.ID, LastModified: seen.LastModified, Reason: refusalCode(why)}
	first, err := a.Store.Quarantine(ctx, q)
	if err != nil {
		return activities.KindError(err)
	}
	if first {
		quarantinedTotal.WithLabelValues(q.Kind).Inc()
	}
	a.Log.ErrorContext(ctx, "MED saga: a refund request read back from the DICT is refused by the doors for good; quarantined (pix_med_quarantine), the run stopped, a human must look",
		append(attrsOf(cur), "dict_id", q.ID, "last_modified", q.LastModified, "reason", q.Reason, "first", first, "error", why)...)
	return a.stopOn(ctx, cur, ProblemNotAsOurs, fmt.Sprintf("read back, the DICT has the refund request %s, which the doors refuse (%s): quarantined, an operator's",
		seen.ID, q.Reason), &q)
}

// untaken stops the run visibly when what the DICT answered on a read
// back left the report as it was (after, at cur's generation): the run
// would decide the same step again at once and read the DICT again, in a
// loop. Stopped, it tries again after a signal or ProblemRetryAfter
// (pix_med_dict_problems, pix_med_dict_stopped_total), never spinning.
func (a *Activities) untaken(ctx context.Context, cur, after Report, what string) error {
	if after.Gen != cur.Gen {
		return nil
	}
	return a.stop(ctx, cur, ProblemNotAsOurs, fmt.Sprintf("read back, the DICT has %s, which the report (DICT status %s, modified %s) does not take: an operator's",
		what, cur.DICTStatus, cur.DICTModifiedAt.Format(time.RFC3339Nano)))
}

// CloseRefundRequest closes the payer's participant's refund request at the
// DICT as Closing says, then records it (Store.RefundClosed). A close
// marked sent before (a lost answer, whatever the attempt or the run), or
// a close refused as invalid for the request's status, reads the request
// back: OPEN, send it again; CLOSED with our
// closing, done; CLOSED otherwise, stop visibly; CANCELLED, record it.
func (a *Activities) CloseRefundRequest(ctx context.Context, at Report) (Report, error) {
	cur, moved, err := a.current(ctx, at)
	if err != nil || moved {
		return cur, err
	}
	closing := Closing(cur)
	if rejectedAtTheDICT(cur) {
		return a.rejectedCopyClosed(ctx, cur, closing)
	}
	if a.BehindPSP {
		return a.refundClosedAtThePSP(ctx, cur, closing)
	}
	id := cur.RefundRequestID.String()
	var seen dict.Refund
	readBack := cur.Sent(WriteRefundClose)
	for range 2 {
		if readBack {
			if seen, err = a.DICT.GetRefund(ctx, id); err != nil {
				return Report{}, a.dictFailed(ctx, cur, "read back the refund request", err)
			}
			switch {
			case seen.Status == dict.RefundCancelled:
				return a.takeRefund(ctx, cur, seen)
			case seen.Status == dict.RefundClosed && seen.AnalysisResult == closing.Result &&
				seen.RefundTransactionID == closing.RefundTransactionID && seen.AnalysisDetails == dict.NormalizeDetails(closing.Details):
				return a.refundClosed(ctx, cur, closing)
			case seen.Status != dict.RefundOpen:
				return Report{}, a.stop(ctx, cur, ProblemNotAsOurs, fmt.Sprintf("the DICT has the refund request %s (%s), not as we close it (%s): an operator's",
					seen.Status, closingOf(seen), closingText(closing)))
			}
		}
		if cur, moved, err = a.markSent(ctx, cur, WriteRefundClose); err != nil || moved {
			return cur, err
		}
		_, err = a.DICT.CloseRefund(ctx, id, closing)
		if errors.Is(err, dict.ErrRefundOperationInvalid) && !readBack {
			readBack = true
			continue
		}
		if errors.Is(err, dict.ErrRefundOperationInvalid) {
			break // refused as invalid again, read back OPEN: dict_invalid_status below
		}
		if err != nil {
			return Report{}, a.dictFailed(ctx, cur, "close the refund request", err)
		}
		return a.refundClosed(ctx, cur, closing)
	}
	return Report{}, a.stop(ctx, cur, ProblemInvalidStatus, "the DICT refused the refund request's close as invalid for its status, read back OPEN")
}

// refundClosedAtThePSP records the close of the request of a bank behind
// a PSP. Accepted, the PSP answers the request at the DICT from our
// devolução (its rtrId, the MED natureza): recorded from our return's
// outcome. Rejected, there is no devolução for the PSP to answer from and
// no standard call to send it by: as the analysis' close (docs/med.md, "A
// bank behind a PSP"), the operator closes it through the PSP's own
// channel and the step stops visibly until the PSP's notice of the
// request CLOSED: REJECTED, it is the close (CloseRefundRequest records it
// before this: rejectedCopyClosed, whatever our close would be); accepted,
// an operator's. A notice CLOSED with no result (closedUnknown) answers
// neither: an operator's too, never recorded as our accepted close (review
// r22 F2).
func (a *Activities) refundClosedAtThePSP(ctx context.Context, cur Report, closing dict.RefundClosing) (Report, error) {
	rejected := closing.Result == dict.Rejected
	switch {
	case closedUnknown(cur):
		return Report{}, a.stop(ctx, cur, ProblemNotAsOurs, closedUnknownProblem)
	case deref(cur.RefundRequestState) == string(dict.RefundClosed) && rejected:
		// Noticed CLOSED accepted: not our REJECTED close.
		return Report{}, a.stop(ctx, cur, ProblemNotAsOurs, fmt.Sprintf("the PSP noticed the refund request CLOSED (%s), not as we close it (%s): an operator's",
			deref(cur.RefundRequestDICTResult), closing.Result))
	case !rejected:
		return a.refundClosed(ctx, cur, closing)
	}
	// The operator's cue is the close's send: marked, and a close as the
	// deadline closes it decided by the database's clock (MarkSent).
	return a.awaitPSP(ctx, cur, WriteRefundClose, fmt.Sprintf("close the refund request %s %s (%s) through the PSP's channel: "+
		"its notice CLOSED records it", deref(uuidString(cur.RefundRequestID)), closing.Result, closing.RejectionReason))
}

// awaitPSP stops the step w of a bank behind a PSP that only the PSP can
// take (ProblemPSPActionAwaited: the operator's through its channel, or
// the PSP's own), what to do said: marked sent first, as the DICT's write
// would be (MarkSent: the cue is the send), then stopped as a DICT step
// is (stop: the run waits for the PSP's notice, a signal, or
// ProblemRetryAfter). A report that moved since cur is answered as it is
// now, nothing noted: the run decides again on it.
func (a *Activities) awaitPSP(ctx context.Context, cur Report, w Write, todo string) (Report, error) {
	cur, moved, err := a.markSent(ctx, cur, w)
	if err != nil || moved {
		return cur, err
	}
	return Report{}, a.stop(ctx, cur, ProblemPSPActionAwaited, todo)
}

// rejectedCopyClosed records the close of a request whose copy taken in
// is CLOSED REJECTED (rejectedAtTheDICT: closed outside the run, or our
// close's answer lost): the DICT's close, final, with no DICT write (sent
// on a CLOSED request, read back with another reason or details than
// ours, it stopped for ever, the money held: review r19 HIGH-1) and no
// return_until check (MarkSent's: nothing is sent). Its result only is
// checked: our close would be REJECTED too (nothing returned); a part
// returned, the DICT's word is not ours, and the run stops visibly.
func (a *Activities) rejectedCopyClosed(ctx context.Context, cur Report, closing dict.RefundClosing) (Report, error) {
	if closing.Result != dict.Rejected {
		return Report{}, a.stop(ctx, cur, ProblemNotAsOurs, fmt.Sprintf("the DICT's copy has the refund request CLOSED (REJECTED), not as we close it (%s): an operator's",
			closingText(closing)))
	}
	return a.refundClosed(ctx, cur, closing)
}

// closingOf is how the DICT's copy seen closes its request, and
// closingText how we close it, in a stop's text: what differs said
// (review r19 LOW-2: "CLOSED (REJECTED), not as we close it (REJECTED)").
// The read-back's stop and a CLOSED copy's result noticed against our
// recorded close (closedResultNoticed) say it the same way.
func closingOf(seen dict.Refund) string {
	return closingText(dict.RefundClosing{Result: seen.AnalysisResult, RejectionReason: seen.RefundRejectionReason,
		RefundTransactionID: seen.RefundTransactionID, Details: seen.AnalysisDetails})
}

func closingText(c dict.RefundClosing) string {
	return fmt.Sprintf("%s, reason %q, rtrId %q, details %q", c.Result, c.RejectionReason, c.RefundTransactionID, dict.NormalizeDetails(c.Details))
}

func (a *Activities) refundClosed(ctx context.Context, cur Report, closing dict.RefundClosing) (Report, error) {
	return a.change(ctx, cur, "refund request closed at the DICT", func(ctx context.Context, at Report) (Report, bool, error) {
		return a.Store.RefundClosed(ctx, at, closing.RefundTransactionID)
	})
}

// current reads the report again before a call to the DICT: moved is true
// when it is no longer at at's generation (another actor decided since;
// nothing is sent, the run decides again on it).
func (a *Activities) current(ctx context.Context, at Report) (Report, bool, error) {
	cur, err := a.Store.Get(ctx, at.ID)
	if err != nil {
		return Report{}, false, activities.KindError(err)
	}
	return cur, cur.Gen != at.Gen, nil
}

// markSent marks the write w on cur before it is sent (Store.MarkSent),
// unless marked already: moved is true when the report moved since cur
// (nothing is sent, the run decides again on it).
func (a *Activities) markSent(ctx context.Context, cur Report, w Write) (Report, bool, error) {
	if cur.Sent(w) {
		return cur, false, nil
	}
	out, _, err := a.Store.MarkSent(ctx, cur, w)
	if notYet := notYetError(err); notYet != nil {
		return Report{}, false, notYet
	}
	if err != nil {
		return Report{}, false, activities.KindError(err)
	}
	return out, out.Gen != cur.Gen, nil
}

// dictFailed answers a failed DICT call as its class says (dict.Classify):
// rate limited, retried after the DICT's Retry-After; outcome unknown,
// retried (the write was marked sent: the next attempt, or run, reads
// back first); refused, not verified, or a report or request that is not
// the specification's (dict.Malformed: never decided on, never released or
// returned on), the report notes why and the run stops there (StoppedType).
func (a *Activities) dictFailed(ctx context.Context, cur Report, what string, err error) error {
	switch dict.Classify(err) {
	case dict.RateLimited:
		wait, _ := dict.RetryAfter(err)
		return temporal.NewApplicationErrorWithOptions(what+": rate limited", RateLimitedType,
			temporal.ApplicationErrorOptions{NextRetryDelay: wait, Cause: err})
	case dict.Refused:
		return a.stop(ctx, cur, ProblemRefused, fmt.Sprintf("%s: %v", what, err))
	case dict.Unverified:
		return a.stop(ctx, cur, ProblemUnverified, fmt.Sprintf("%s: %v", what, err))
	case dict.Malformed:
		return a.stop(ctx, cur, ProblemMalformed, fmt.Sprintf("%s: %v", what, err))
	}
	return fmt.Errorf("%s: %w", what, err)
}

// The codes of why the saga stopped at the DICT: what the operator view
// shows of Report.DICTProblem (its first word), whose text (the DICT's own
// words, in its problem's detail) it keeps for the log and the database.
const (
	ProblemRefused       = "dict_refused"        // the DICT refused the call (or it was not sent)
	ProblemUnverified    = "dict_unverified"     // the answer's signature was not verified
	ProblemNotAsOurs     = "dict_not_as_ours"    // read back, the DICT has it another way: an operator's
	ProblemInvalidStatus = "dict_invalid_status" // refused as invalid for a status that allows it
	ProblemMalformed     = "dict_malformed"      // its report or request answered not as the specification writes it
	// ProblemPSPActionAwaited is no DICT problem: behind a PSP
	// (BehindPSP), a step no standard call makes (the report's
	// acknowledge, its close, a refund request's REJECTED close) is the
	// PSP's, through its own channel (the operator's action there, the
	// PSP's own for the acknowledge), and its notice records it. The run
	// stops as at the DICT and waits for that notice; the text says what
	// to do. A routine step, so neither counted as a DICT stop
	// (pix_med_dict_problems, pix_med_dict_stopped_total: the page
	// PixMEDDICTStopped is for a DICT that refuses us) but in its own
	// gauges (pix_med_psp_actions_awaited, PixMEDPSPActionAwaited).
	ProblemPSPActionAwaited = "psp_action_awaited"
)

// stop notes problem on the report, after its code, and returns the run's
// StoppedType, its details the generation the report notes it at
// (StopNote): the run waits on the report at that generation only. A
// note fenced out (the report moved since cur: another actor decided, an
// intake of its refund request, say) stops nothing: the step was decided
// on a report that is no more, so a retryable error, neither counted nor
// logged as a stop, has the activity's retry read the report again
// (current: moved) and the run decide again on it; stopped, the run would
// wait ProblemRetryAfter on a change it already read, no dict_problem
// saying why (attack review r6 MED-1).
func (a *Activities) stop(ctx context.Context, cur Report, code, problem string) error {
	return a.stopOn(ctx, cur, code, problem, nil)
}

// stopOn is stop on the quarantined item q (nil: none), which the
// problem names: a clear of q's quarantine wakes the run (NoteProblemOn).
func (a *Activities) stopOn(ctx context.Context, cur Report, code, problem string, q *Quarantined) error {
	var noted Report
	var changed bool
	var err error
	if q != nil {
		noted, changed, err = a.Store.NoteProblemOn(ctx, cur, code+": "+problem, *q)
	} else {
		noted, changed, err = a.Store.NoteProblem(ctx, cur, code+": "+problem)
	}
	if errors.Is(err, ErrStopCleared) {
		a.Log.InfoContext(ctx, "MED saga: the quarantined copy its step stopped on was cleared meanwhile; decided again",
			append(attrsOf(cur), "problem_code", code, "dict_id", q.ID)...)
		return fmt.Errorf("report %s, its step stopped at the DICT (%s): %w", cur.ID, code, err)
	}
	if err != nil {
		return activities.KindError(err)
	}
	if !changed && noted.Gen != cur.Gen {
		a.Log.InfoContext(ctx, "MED saga: the report moved as its step stopped at the DICT; decided again on it",
			append(attrsOf(noted), "stopped_at_gen", cur.Gen, "problem_code", code, "problem", problem)...)
		return fmt.Errorf("report %s moved from generation %d to %d as its step stopped at the DICT (%s): decided again on it",
			cur.ID, cur.Gen, noted.Gen, code)
	}
	if code == ProblemPSPActionAwaited {
		a.Log.InfoContext(ctx, "MED saga awaits a step at the PSP: its notice resumes it", append(attrsOf(noted), "problem_code", code, "problem", problem)...)
	} else {
		dictStoppedTotal.Inc()
		a.Log.WarnContext(ctx, "MED saga stopped at the DICT", append(attrsOf(noted), "problem_code", code, "problem", problem)...)
	}
	return temporal.NewNonRetryableApplicationError(code+": "+problem, StoppedType, nil, StopNote{Gen: noted.Gen})
}

// StopNote is the details of a StoppedType error: Gen, the report's
// generation that notes the stop (dict_problem). The run waits
// ProblemRetryAfter on the report only at that generation; read at
// another (moved since the note), it decides again at once.
type StopNote struct {
	Gen int64
}

// change runs one of the store's transitions on at, logging what it changed.
func (a *Activities) change(ctx context.Context, at Report, done string, decide func(context.Context, Report) (Report, bool, error)) (Report, error) {
	r, changed, err := decide(ctx, at)
	if err != nil {
		return Report{}, activities.KindError(err)
	}
	if changed {
		if r.Status == StatusEnded {
			endedTotal.WithLabelValues(deref(r.EndCause)).Inc()
		}
		a.Log.InfoContext(ctx, done, attrsOf(r)...)
	}
	return r, nil
}

// attrsOf are a report's log attributes (no reporter's details).
func attrsOf(r Report) []any {
	attrs := []any{"report_id", r.ID, "workflow_id", WorkflowID(r.ID.String()), "end_to_end_id", r.EndToEndID,
		"status", r.Status, "gen", r.Gen, "held_cents", r.HeldCents, "returned_cents", r.ReturnedCents}
	if r.RefundID != nil {
		attrs = append(attrs, "refund_id", *r.RefundID)
	}
	if r.EndCause != nil {
		attrs = append(attrs, "end_cause", *r.EndCause)
	}
	return attrs
}
