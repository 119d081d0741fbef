package med

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/rowscan"
	"github.com/pixbank/pix/internal/tracing"
	"github.com/pixbank/pix/saga/sagakit"
)

// The statuses of OUR saga of a report (Report.Status), in the order it
// goes through them; not_ours and ended are final.
const (
	StatusReceived        = "received"
	StatusHeld            = "held"
	StatusAcknowledged    = "acknowledged"
	StatusAnalysed        = "analysed"
	StatusAwaitingRequest = "awaiting_refund_request"
	StatusReturning       = "returning"
	// StatusAwaitingCredit: a part was returned, or nothing was held when
	// the request came: what is left is returned as the account's credits
	// arrive, until the amount or ReturnWindow.
	StatusAwaitingCredit = "awaiting_credit"
	StatusEnded          = "ended"
	StatusNotOurs        = "not_ours"
)

// How a report ended (Report.EndCause).
const (
	EndReleased       = "released"
	EndReturned       = "returned"
	EndReturnedInPart = "returned_in_part"
	EndCancelled      = "cancelled"
	// EndRejectedAtDICT: its refund request CLOSED REJECTED at the DICT
	// by another than our close (rejectedOutside, closedByTheDICT), nothing
	// returned: ended before return_until, what it held released; told
	// apart from released (no request within 72 hours, nothing returned by
	// return_until), which it was before (review r21 MED-3).
	EndRejectedAtDICT = "rejected_at_dict"
	// EndOperatorReleased: an operator released the report, stopped at the
	// DICT with its request closed there already (Store.ReleaseKeyed).
	EndOperatorReleased = "operator_released"
)

// EndCauses are the causes a report ends with (Report.EndCause), every one
// the table's check must take (pix_med_reports_end_cause_check).
var EndCauses = []string{EndReleased, EndReturned, EndReturnedInPart, EndCancelled, EndRejectedAtDICT, EndOperatorReleased}

// The deadlines of MED (docs/med.md, "The saga"), each from the DICT
// operating manual: the analysis within 7 calendar days of the report, the
// payer's participant's refund request within 72 hours of our close, the
// returns in parts until 90 days after the PIX.
const (
	AnalysisWindow = 7 * 24 * time.Hour
	RequestWindow  = 72 * time.Hour
	// ReturnWindow is the PIX's own devolução window (pix.RefundWindow):
	// return_until is the instant that window closes (CreditOf), so that
	// no part is refused by it while the report still returns. Never
	// shorter: a hold past its fill-until (return_until) still counts what
	// it fills to against its PIX's room (db's TakenCents, RaiseFillTo),
	// harmless only because no devolução of the PIX is made from then on
	// (TestAReportsReturnUntilIsNotBeforeItsPIXsRefundWindowCloses).
	ReturnWindow = pix.RefundWindow
)

// HoldKind is the kind of a report's holds (db.NewHold.Kind).
const HoldKind = "med"

// DueChannel is the notification channel that says reports are due for
// dispatch (their saga's run to start).
const DueChannel = "pix_med_due"

// The saga's refusals.
var (
	// ErrNotFound: no report with the id.
	ErrNotFound = errors.New("infraction report not found")
	// ErrAnalysed: the report was analysed already, with another result or
	// details: an analysis is made once.
	ErrAnalysed = errors.New("infraction report analysed already")
	// ErrNotAnalysable: the report is past its analysis (ended, not ours,
	// or closed at the DICT).
	ErrNotAnalysable = errors.New("infraction report can't be analysed")
	// ErrWrongPSP: a PSP's notice about a PIX another PSP delivered to us:
	// a PSP may not hold the funds of a PIX received through another.
	ErrWrongPSP = errors.New("MED notice from a PSP that did not deliver the PIX")
	// ErrPSPUnknown: a PSP's notice about a PIX of ours whose delivering
	// PSP is not on record (CreditPSP): not a refusal of the PSP, a gap of
	// ours; the notice is answered 503 and delivered again.
	ErrPSPUnknown = errors.New("the PSP that delivered the PIX is not on record")
	// ErrReportMismatch: an intake names a known report with another PIX.
	ErrReportMismatch = errors.New("infraction report does not match the one received")
	// ErrNotAtDICT: with the DICT, a PSP's notice of a report or refund
	// request the DICT does not have: nothing is taken on a notice's word.
	ErrNotAtDICT = errors.New("MED notice of what the DICT does not have")
)

//go:embed med.sql
var queryFiles embed.FS

// medSQL holds the statements of med.sql.
var medSQL struct {
	CreditOf, CreditPSP, Insert, Get, Lock, Save, MarkSent, Unanswered, Kept, KeptList, KeptGet, Taken, Ours, OfPIX, List, Open, Event, Quarantine string
	KeptToClose, KeptMarkSent, KeptClosed, KeptSeen, KeptProblem                                                                                   string
}

func init() { db.BindQueries(queryFiles, "med.sql", &medSQL) }

// queue is the reports whose run must be going: the open ones.
var queue = db.DeclareQueue(db.QueueSpec{
	Name: "med", Table: "pix_med_reports", Key: "id", KeyType: "uuid", Channel: DueChannel,
	Open:     "m.dispatch_due_at IS NOT NULL",
	Attempts: "0",
	Drive:    "1",
	Listing: db.Listing{
		EndToEndID: "m.end_to_end_id", AccountID: "m.account_id", AmountCents: "m.amount_cents",
		Status: "m.status", PSP: "NULL::text",
		Memo: "jsonb_strip_nulls(jsonb_build_object('analysis_due_at', m.analysis_due_at, " +
			"'refund_request_due_at', m.refund_request_due_at, 'refund_id', m.refund_id))",
		Since: "m.created_at", Traceparent: "m.traceparent",
	},
})

// Report is an infraction report and our saga's state of it, a
// pix_med_reports row read by column name.
type Report struct {
	ID             uuid.UUID  `db:"id" json:"id"`
	EndToEndID     string     `db:"end_to_end_id" json:"end_to_end_id"`
	AccountID      *string    `db:"account_id" json:"account_id"`
	AmountCents    *int64     `db:"amount_cents" json:"amount_cents"`
	CreditedAt     *time.Time `db:"credited_at" json:"credited_at"`
	Reporter       string     `db:"reporter" json:"reporter"`
	InfractionType string     `db:"infraction_type" json:"infraction_type"`
	ReportedBy     string     `db:"reported_by" json:"reported_by"`
	// ReportDetails is the reporter's free text: never answered in clear
	// (the operator view says how long it is).
	ReportDetails  string    `db:"report_details" json:"report_details"`
	DICTStatus     string    `db:"dict_status" json:"dict_status"`
	DICTModifiedAt time.Time `db:"dict_modified_at" json:"dict_modified_at"`
	// DICTAnalysisResult is the AnalysisResult of the DICT's latest notice
	// of the report (nil: none said): a bank behind a PSP records its
	// close from it (Activities.CloseReport).
	DICTAnalysisResult *string    `db:"dict_analysis_result" json:"-"`
	ReportedAt         time.Time  `db:"reported_at" json:"reported_at"`
	Status             string     `db:"status" json:"status"`
	EndCause           *string    `db:"end_cause" json:"end_cause"`
	AnalysisResult     *string    `db:"analysis_result" json:"analysis_result"`
	AnalysisDetails    *string    `db:"analysis_details" json:"analysis_details"`
	AnalysedBy         *string    `db:"analysed_by" json:"analysed_by"`
	AnalysedAt         *time.Time `db:"analysed_at" json:"analysed_at"`
	AcknowledgedAt     *time.Time `db:"acknowledged_at" json:"acknowledged_at"`
	ClosedAt           *time.Time `db:"closed_at" json:"closed_at"`
	HoldID             *uuid.UUID `db:"hold_id" json:"hold_id"`
	Holds              int        `db:"holds" json:"holds"`
	HeldCents          int64      `db:"held_cents" json:"held_cents"`
	RefundRequestID    *uuid.UUID `db:"refund_request_id" json:"refund_request_id"`
	RefundRequestCents *int64     `db:"refund_request_cents" json:"refund_request_cents"`
	RefundRequestState *string    `db:"refund_request_status" json:"refund_request_status"`
	// RefundRequestModifiedAt is the DICT's LastModified of the request as
	// recorded: its status moves only on a copy modified later.
	RefundRequestModifiedAt *time.Time `db:"refund_request_modified_at" json:"-"`
	// RefundRequestDICTResult is the AnalysisResult of the DICT's latest
	// copy of the request as taken (nil: none said): a bank behind a PSP
	// records its REJECTED close from the PSP's notice
	// (Activities.CloseRefundRequest). Carried to the workflow (JSON, nil
	// written as null, as RefundCloseSentAt): a request CLOSED REJECTED
	// outside the run, no accepted close of ours recorded, is closed and
	// its report ended at once (rejectedOutside, rejectedCopyChange); the
	// operator view hides it.
	RefundRequestDICTResult *string `db:"refund_request_dict_result" json:"refund_request_dict_result"`
	// RefundRequestDICTReason is the RefundRejectionReason of the copy
	// whose result RefundRequestDICTResult records (nil: none said, or not
	// REJECTED): a close recorded from that copy keeps the DICT's reason,
	// and one that is not ours ends its report rejected_at_dict
	// (closedByTheDICT; review r21 LOW-6). Read by the store on its own
	// row, never by workflow code.
	RefundRequestDICTReason *string    `db:"refund_request_dict_reason" json:"-"`
	RefundClosedAt          *time.Time `db:"refund_closed_at" json:"refund_closed_at"`
	RefundClosedRtrID       *string    `db:"refund_closed_rtr_id" json:"refund_closed_rtr_id"`
	RefundID                *string    `db:"refund_id" json:"refund_id"`
	ReturnedCents           int64      `db:"returned_cents" json:"returned_cents"`
	Returns                 int        `db:"returns" json:"returns"`
	FirstRtrID              *string    `db:"first_rtr_id" json:"first_rtr_id"`
	AnalysisDueAt           time.Time  `db:"analysis_due_at" json:"analysis_due_at"`
	RequestDueAt            *time.Time `db:"refund_request_due_at" json:"refund_request_due_at"`
	ReturnUntil             *time.Time `db:"return_until" json:"return_until"`
	DICTProblem             *string    `db:"dict_problem" json:"dict_problem"`
	// AcknowledgeSentAt, CloseSentAt, RefundCloseSentAt: when the write
	// was first about to be sent to the DICT (Store.MarkSent); set, it may
	// have been done, and is read back before it is sent again.
	AcknowledgeSentAt *time.Time `db:"acknowledge_sent_at" json:"-"`
	CloseSentAt       *time.Time `db:"close_sent_at" json:"-"`
	// RefundCloseSentAt is carried to the run (closedCopy reads it), nil
	// written as null, never omitted: the run decodes every report into
	// the same variable, where an omitted field keeps the value it read
	// before (TestTheRunsReportKeepsNothingStale). It is the mark of the
	// request the report answers: Save clears it when another is taken
	// (med.sql; review r23 LOW-5).
	RefundCloseSentAt *time.Time `db:"refund_close_sent_at" json:"refund_close_sent_at"`
	// ReturnRefused: the devolução was refused for good (ReturnRefusal):
	// the request is closed as it stands and the report ended.
	ReturnRefused *string `db:"return_refused" json:"return_refused"`
	// ReleasedBy, ReleaseDetails: the operator who released the report
	// (EndOperatorReleased, Store.ReleaseKeyed) and why, as they wrote it.
	ReleasedBy     *string `db:"released_by" json:"released_by"`
	ReleaseDetails *string `db:"release_details" json:"release_details"`
	// Gen is the row's generation: every change bumps it, and a change
	// decided on another generation changes nothing (the fence).
	Gen           int64      `db:"gen" json:"gen"`
	Traceparent   *string    `db:"traceparent" json:"-"`
	CreatedAt     time.Time  `db:"created_at" json:"created_at"`
	UpdatedAt     time.Time  `db:"updated_at" json:"updated_at"`
	EndedAt       *time.Time `db:"ended_at" json:"ended_at"`
	DispatchDueAt *time.Time `db:"dispatch_due_at" json:"-"`
	DispatchedAt  *time.Time `db:"dispatched_at" json:"-"`
}

// Open reports whether the report's saga still has something to do.
func (r Report) Open() bool { return r.Status != StatusEnded && r.Status != StatusNotOurs }

// Target is what the report returns at most: the refund request's amount,
// never more than the PIX's (0 before a request).
func (r Report) Target() int64 {
	if r.RefundRequestCents == nil || r.AmountCents == nil {
		return 0
	}
	return min(*r.RefundRequestCents, *r.AmountCents)
}

// RequestOpen reports whether the payer's participant's refund request is
// open at the DICT (to be answered by a return).
func (r Report) RequestOpen() bool {
	return r.RefundRequestID != nil && deref(r.RefundRequestState) == string(dict.RefundOpen)
}

// Cancelled reports whether the reporter cancelled the report at the DICT.
func (r Report) Cancelled() bool { return r.DICTStatus == string(dict.ReportCancelled) }

func one(rs pgx.Rows, err error) (Report, error) { return sagakit.One[Report](rs, err, ErrNotFound) }

// Store is the saga's store, over the service's (db's exported core).
type Store struct {
	store *db.Store
	// now is the clock the deadlines are checked by, read in the deciding
	// transaction after the report's lock: the database's (db.Now), the
	// one they were written by (closed_at, and so refund_request_due_at,
	// is db.Now's), never the worker's, which may run ahead.
	now db.Clock
	// participant is our ISPB as the DICT's reports name the credited
	// participant ("": not checked; a bank behind a PSP, whose reports
	// name the PSP's).
	participant string
}

// NewStore returns the saga's store over s.
func NewStore(s *db.Store) *Store { return &Store{store: s, now: db.Now} }

// WithClock is the store with another clock for the deadlines' checks (a
// test's), in place of the database's.
func (s *Store) WithClock(now func() time.Time) *Store {
	return &Store{store: s.store, now: db.ClockOf(now), participant: s.participant}
}

// clock is the store's clock read outside a transaction: through the pool.
func (s *Store) clock(ctx context.Context) (time.Time, error) {
	now, err := s.now(ctx, s.store.Pool())
	return now, db.Classify(err)
}

// WithParticipant is the store that analyses only the reports whose
// credited participant is ispb (toAnalyse).
func (s *Store) WithParticipant(ispb string) *Store {
	return &Store{store: s.store, now: s.now, participant: ispb}
}

// toAnalyse says whether a report is ours to hold and analyse: made by the
// payer's participant (ReportedBy DEBITED_PARTICIPANT) against us as the
// credited participant (when the store knows our ISPB), of a fraud
// (FRAUD) or an operational flaw whose refund it asks (REFUND_REQUEST). A
// report our own side made (CREDITED_PARTICIPANT), or a REFUND_CANCELLED
// (the cancel of a refund, nothing to hold), is recorded not_ours: visible,
// counted, holding nothing.
func (s *Store) toAnalyse(in dict.InfractionReport) bool {
	switch {
	case in.ReportedBy != dict.ReportedByDebited:
		return false
	case in.InfractionType != dict.InfractionFraud && in.InfractionType != dict.InfractionRefundRequest:
		return false
	case s.participant != "" && in.CreditedParticipant != s.participant:
		return false
	}
	return true
}

// Queue is the reports whose run must be going, for the saga's dispatcher.
func (s *Store) Queue() db.DueQueue { return s.store.DueQueue(queue) }

// Get returns one report, what its hold holds now (heldNow); ErrNotFound
// when there is none.
func (s *Store) Get(ctx context.Context, id uuid.UUID) (Report, error) {
	out, err := one(s.store.Pool().Query(ctx, medSQL.Get, id))
	if err != nil && !errors.Is(err, ErrNotFound) {
		return Report{}, db.Classify(fmt.Errorf("get infraction report: %w", err))
	}
	if err != nil {
		return out, err
	}
	held := []Report{out}
	if err := s.heldNow(ctx, held); err != nil {
		return Report{}, err
	}
	return held[0], nil
}

// heldNow sets each report's HeldCents to what its hold holds now: the
// hold fills from the account's inflows in their transactions, and the row
// says what it held when the saga last decided on it. Every hold is read
// at once (db.Store.GetHolds): a page of reports costs one read of holds,
// not one per report.
func (s *Store) heldNow(ctx context.Context, rs []Report) error {
	ids := make([]uuid.UUID, 0, len(rs))
	for _, r := range rs {
		if r.HoldID != nil {
			ids = append(ids, *r.HoldID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	holds, err := s.store.GetHolds(ctx, ids)
	if err != nil {
		return fmt.Errorf("holds of %d infraction reports: %w", len(rs), err)
	}
	for i, r := range rs {
		if r.HoldID == nil {
			continue
		}
		hold, ok := holds[r.HoldID.String()]
		if !ok {
			return db.Classify(fmt.Errorf("hold of infraction report %s: %w", r.ID, pix.ErrHoldNotFound))
		}
		if hold.Active() {
			rs[i].HeldCents = hold.AmountCents
		}
	}
	return nil
}

// CreditPSP returns the PSP that delivered the PIX endToEndID to us: the
// one its credit recorded (pix_credits.psp, which outlives the inbox row),
// else, for a PIX not credited yet, its inbox row's; "": delivered
// unsigned (signatures not required), or no such PIX. ErrPSPUnknown: the
// PIX is ours with no PSP on record: credited with none (a credit from
// before 0050, a catch-up credit made while PSP_NAME was unset), or stored
// by the catch-up and not credited yet (the PSP it lists is the worker's
// setting, which its credit records; attack review r2, MED-2). Its PSP is never inferred from the configuration of the process
// the notice reaches (attack review B, LOW-2: API processes split by PSP
// each see a sole PSP, and after a move from one PSP to another the old
// PIX would become the new one's, which could then hold funds of a PIX it
// did not deliver): it is recorded, once, by the backfill of docs/med.md.
func (s *Store) CreditPSP(ctx context.Context, endToEndID string) (string, error) {
	var credited, inInbox bool
	var recorded *string
	var inbox string
	err := s.store.Pool().QueryRow(ctx, medSQL.CreditPSP, endToEndID).Scan(&credited, &recorded, &inInbox, &inbox)
	if err != nil {
		return "", db.Classify(fmt.Errorf("the PSP of PIX %s: %w", endToEndID, err))
	}
	switch {
	case recorded != nil:
		return *recorded, nil
	case inInbox && inbox != pix.CatchUpPSP:
		return inbox, nil
	case inInbox || credited:
		// A PIX the catch-up stored ('catchup'), not credited yet (or
		// its credit failed), has no PSP on record: the one the worker's
		// catch-up lists is a setting of that process, not this one's
		// (an API process split by PSP sees its own sole PSP). Once
		// credited, pix_credits.psp decides.
		return "", fmt.Errorf("%w: PIX %s", ErrPSPUnknown, endToEndID)
	}
	return "", nil
}

// OfPIX returns a PIX's reports, oldest first, at most limit, each with what
// its hold holds now.
func (s *Store) OfPIX(ctx context.Context, endToEndID string, limit int) ([]Report, error) {
	rs, err := s.store.Pool().Query(ctx, medSQL.OfPIX, endToEndID, limit)
	if err != nil {
		return nil, db.Classify(fmt.Errorf("list infraction reports: %w", err))
	}
	out, err := pgx.CollectRows(rs, rowscan.ByName[Report])
	if err != nil {
		return nil, db.Classify(err)
	}
	if err := s.heldNow(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// ListKey is the sort key of the list of every report: by creation,
// then id. A page's cursor holds its last row's.
type ListKey struct {
	CreatedAt time.Time `json:"created_at"`
	ID        uuid.UUID `json:"id"`
}

// Valid says whether k is a key of the list.
func (k ListKey) Valid() bool { return !k.CreatedAt.IsZero() && k.ID != uuid.Nil }

// ListKeyOf is the sort key of r in the list.
func ListKeyOf(r Report) ListKey { return ListKey{CreatedAt: r.CreatedAt, ID: r.ID} }

// List returns every report, oldest first, at most limit, those after the
// key after (nil: from the first), each with what its hold holds now.
func (s *Store) List(ctx context.Context, after *ListKey, limit int) ([]Report, error) {
	var at *time.Time
	var id *uuid.UUID
	if after != nil {
		at, id = &after.CreatedAt, &after.ID
	}
	rs, err := s.store.Pool().Query(ctx, medSQL.List, at, id, limit)
	if err != nil {
		return nil, db.Classify(fmt.Errorf("list infraction reports: %w", err))
	}
	out, err := pgx.CollectRows(rs, rowscan.ByName[Report])
	if err != nil {
		return nil, db.Classify(fmt.Errorf("list infraction reports: %w", err))
	}
	if err := s.heldNow(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// intake is THE one door of an infraction report into the saga, behind
// Doors.Intake (which wakes the run): the DICT's lister and the PSP's
// webhook both hand what they received there.
// Idempotent on the report's id: a report received again as it was is
// absorbed (changed false); one the DICT modified since (its status, its
// LastModified: cancelled by its reporter, closed) is updated and its run
// woken. A report about a PIX we did not credit is recorded as not_ours
// (visible, counted) and starts nothing; one about a PIX we credited is
// due for its saga's durable start at once (its run holds the money).
// Two intakes of one report at once end as one row: the second finds the
// first's (the insert's conflict) and updates it under its lock.
func (s *Store) intake(ctx context.Context, in dict.InfractionReport) (Report, bool, error) {
	id, err := uuid.Parse(in.ID)
	if err != nil {
		return Report{}, false, pix.Invalid("id", "must be the DICT's uuid")
	}
	if err := validReport(in); err != nil {
		return Report{}, false, err
	}
	var out Report
	var changed, created bool
	err = db.InTx(ctx, s.store.Pool(), func(tx pgx.Tx) error {
		out, created, err = s.insert(ctx, tx, id, in)
		if err != nil || created {
			changed = created
			return err
		}
		out, changed, err = intakeAgain(ctx, tx, id, in, s.toAnalyse(in))
		return err
	})
	if err != nil {
		return Report{}, false, db.Classify(err)
	}
	if created {
		intakeTotal.WithLabelValues(out.Status).Inc()
	}
	if changed {
		s.store.Wake(DueChannel)
	}
	return out, changed, nil
}

// validReport refuses a report the table can't hold, before anything is
// read: the DICT sends every field the table requires.
func validReport(in dict.InfractionReport) error {
	switch {
	case !pix.ValidEndToEndID(in.TransactionID):
		return pix.Invalid("transaction_id", "must be the PIX's end-to-end id")
	case len(in.DebitedParticipant) < 1 || len(in.DebitedParticipant) > 8:
		return pix.Invalid("debited_participant", "must be the reporter's ISPB")
	case len(in.InfractionType) < 1 || len(in.InfractionType) > 40:
		return pix.Invalid("infraction_type", "is required")
	case len(in.ReportedBy) < 1 || len(in.ReportedBy) > 40:
		return pix.Invalid("reported_by", "is required")
	case utf8.RuneCountInString(in.ReportDetails) > 2000:
		return pix.Invalid("report_details", "must be at most 2000 characters")
	case in.Status != dict.ReportOpen && in.Status != dict.ReportAcknowledged && in.Status != dict.ReportClosed &&
		in.Status != dict.ReportCancelled:
		return pix.Invalid("status", "must be one of the DICT's")
	case in.CreationTime.IsZero() || in.LastModified.IsZero():
		return pix.Invalid("creation_time", "and last_modified are required")
	}
	return nil
}

// insert records a report received the first time; created false (and no
// row) when it was received before.
func (s *Store) insert(ctx context.Context, tx pgx.Tx, id uuid.UUID, in dict.InfractionReport) (Report, bool, error) {
	var account *string
	var amount *int64
	var credited, until *time.Time
	err := tx.QueryRow(ctx, medSQL.CreditOf, in.TransactionID, ReturnWindow).Scan(&account, &amount, &credited, &until)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return Report{}, false, fmt.Errorf("read credit: %w", err)
	}
	if !s.toAnalyse(in) {
		// Not ours to analyse: recorded as a report of a PIX not ours.
		account, amount, credited, until = nil, nil, nil, nil
	}
	status, cause := StatusReceived, (*string)(nil)
	switch {
	case account == nil:
		status = StatusNotOurs
	case in.Status == dict.ReportCancelled:
		// Cancelled before we saw it: nothing to hold.
		status, cause = StatusEnded, ptr(EndCancelled)
	}
	rs, err := tx.Query(ctx, medSQL.Insert, id, in.TransactionID, account, amount, credited, in.DebitedParticipant,
		string(in.InfractionType), string(in.ReportedBy), in.ReportDetails, string(in.Status), in.LastModified,
		in.CreationTime, status, cause, in.CreationTime.Add(AnalysisWindow), until, tracing.Traceparent(ctx), analysisOf(in))
	out, err := one(rs, err)
	switch {
	case errors.Is(err, ErrNotFound):
		return Report{}, false, nil
	case err != nil:
		return Report{}, false, fmt.Errorf("record infraction report %s: %w", id, err)
	}
	if out.Status != StatusNotOurs {
		if err := writeEvent(ctx, tx, out); err != nil {
			return Report{}, false, err
		}
	}
	return out, true, nil
}

// Event types of the saga: one, of the aggregate pix_med_report (the
// report's id), written at its intake (ours) and at each change of its
// status (internal/broker/schemas/pix.med.changed.json).
const (
	EventChanged = "pix.med.changed"
	Aggregate    = "pix_med_report"
)

// Events are the saga's event types, added to db.EventTypes.
var Events = db.DeclareEvents(map[string]string{EventChanged: Aggregate})

// event is the payload of pix.med.changed: what the customer's notice
// and a consumer need, never the reporter's words nor the analysis.
type event struct {
	SchemaVersion int       `json:"schema_version"`
	ReportID      uuid.UUID `json:"report_id"`
	EndToEndID    string    `json:"end_to_end_id"`
	AccountID     string    `json:"account_id"`
	Status        string    `json:"status"`
	EndCause      *string   `json:"end_cause"`
	HeldCents     int64     `json:"held_cents"`
	ReturnedCents int64     `json:"returned_cents"`
	RefundID      *string   `json:"refund_id"`
	At            time.Time `json:"at"`
}

// writeEvent writes r's pix.med.changed in tx.
func writeEvent(ctx context.Context, tx pgx.Tx, r Report) error {
	payload, err := json.Marshal(event{SchemaVersion: 1, ReportID: r.ID, EndToEndID: r.EndToEndID, AccountID: deref(r.AccountID),
		Status: r.Status, EndCause: r.EndCause, HeldCents: r.HeldCents, ReturnedCents: r.ReturnedCents, RefundID: r.RefundID,
		At: r.UpdatedAt})
	if err != nil {
		return fmt.Errorf("event of infraction report %s: %w", r.ID, err)
	}
	if _, err := tx.Exec(ctx, medSQL.Event, r.ID, payload, tracing.Traceparent(ctx)); err != nil {
		return fmt.Errorf("event of infraction report %s: %w", r.ID, err)
	}
	return nil
}

// intakeAgain updates a report received before with what the DICT says
// now, when the DICT modified it since (a later LastModified); otherwise
// it is absorbed.
func intakeAgain(ctx context.Context, tx pgx.Tx, id uuid.UUID, in dict.InfractionReport, analyse bool) (Report, bool, error) {
	cur, err := one(tx.Query(ctx, medSQL.Lock, id))
	if err != nil {
		return Report{}, false, fmt.Errorf("lock infraction report %s: %w", id, err)
	}
	if cur.EndToEndID != in.TransactionID {
		return Report{}, false, fmt.Errorf("%w: report %s is of PIX %s, not %s", ErrReportMismatch, id, cur.EndToEndID, in.TransactionID)
	}
	ours := cur
	if analyse {
		ours, err = recheckOurs(ctx, tx, cur)
	}
	if err != nil {
		return Report{}, false, err
	}
	if !newerReport(in, cur) {
		return ours, ours.Gen != cur.Gen, nil
	}
	cur = ours
	next := cur
	next.DICTStatus, next.DICTModifiedAt, next.ReportDetails = string(in.Status), in.LastModified, in.ReportDetails
	next.DICTAnalysisResult = analysisOf(in)
	return save(ctx, tx, cur, next)
}

// newerReport says whether the DICT's copy in of a report is later than
// what r records of it. A report only moves forwards through the DICT's
// statuses (reportOrder), so a copy at a later status is later whatever
// its LastModified says: a LastModified ahead of the real one (the DICT's
// clock up to MaxClockAhead ahead of ours when a notice was checked, a
// forged or mistaken notice) must never fence out the DICT's next change,
// a cancel or a close, which would then read back as "not newer" forever.
// At the same status, a copy modified later (its details) is later.
func newerReport(in dict.InfractionReport, r Report) bool {
	got, recorded := reportOrder(in.Status), reportOrder(dict.InfractionReportStatus(r.DICTStatus))
	return got > recorded || (got == recorded && laterThan(in.LastModified, r.DICTModifiedAt))
}

// reportOrder is the place of a report's status in the order the DICT
// moves it: OPEN, ACKNOWLEDGED, CLOSED, and CANCELLED, which its reporter
// may do at any time and which nothing follows (0: none known).
func reportOrder(s dict.InfractionReportStatus) int {
	switch s {
	case dict.ReportOpen:
		return 1
	case dict.ReportAcknowledged:
		return 2
	case dict.ReportClosed:
		return 3
	case dict.ReportCancelled:
		return 4
	}
	return 0
}

// analysisOf is the report's AnalysisResult as the DICT's notice says it
// (nil: none).
func analysisOf(in dict.InfractionReport) *string {
	if in.AnalysisResult == "" {
		return nil
	}
	return ptr(string(in.AnalysisResult))
}

// recheckOurs looks again, at each intake of a report recorded not_ours,
// for the PIX's credit (the report can come before the credit: a PIX
// received at the PSP and credited after the payer's participant reported
// it): credited now, the report becomes ours, received, due for its run
// (which holds the money), with its event; not credited, it stays as it is.
// A report not ours to analyse (Store.toAnalyse) is not looked at again.
func recheckOurs(ctx context.Context, tx pgx.Tx, cur Report) (Report, error) {
	if cur.Status != StatusNotOurs {
		return cur, nil
	}
	var account *string
	var amount *int64
	var credited, until *time.Time
	err := tx.QueryRow(ctx, medSQL.CreditOf, cur.EndToEndID, ReturnWindow).Scan(&account, &amount, &credited, &until)
	switch {
	case errors.Is(err, pgx.ErrNoRows) || (err == nil && account == nil):
		return cur, nil
	case err != nil:
		return Report{}, fmt.Errorf("read credit: %w", err)
	}
	out, err := one(tx.Query(ctx, medSQL.Ours, cur.ID, cur.Gen, account, amount, credited, until))
	if err != nil {
		return Report{}, fmt.Errorf("infraction report %s, its PIX credited since: %w", cur.ID, err)
	}
	return out, writeEvent(ctx, tx, out)
}

// IntakeRefund is the door of the payer's participant's refund request
// (the DICT's Refund) into the saga of the report it names: recorded (its
// id, amount and status), the run woken. Idempotent: the same request
// again, as it was, is absorbed; its status moved (cancelled by its
// requester, closed) is updated, never its amount. ErrNotFound: the report
// is not received yet (the lister hands it again).
//
// A report answers one request, keyed by its id: another never writes over
// it (the returns of the first would count against the second's amount).
// A request the report can't answer is recorded by its own id in
// pix_med_refund_requests, visibly, for on-call (RequestUnanswered): one
// that came after the report ended, unless the report can take it again
// (RequestReopened: agreed, released at its 72 hours with nothing
// returned, its PIX still within its 90 days; the report waits for its
// return again and its run is started anew), or another request of a
// report that answers one (open or answered: kept, never refused, so that
// nothing the DICT sent is lost). A request kept before its report could
// take it (not ours yet) follows the DICT there (requestMoves) and is
// taken only while OPEN: one cancelled meanwhile is never taken.
func (s *Store) IntakeRefund(ctx context.Context, in dict.Refund) (Report, bool, error) {
	r, changed, _, err := s.intakeRefund(ctx, in)
	return r, changed, err
}

// What an intake of a refund request did besides recording it on its
// report ("").
const (
	RequestReopened   = "reopened"
	RequestUnanswered = "unanswered"
	// RequestContradicted: the CLOSED result of the report's own request
	// taken in contradicts the result recorded or our recorded close
	// (closedResultNoticed), noted dict_not_as_ours on the report, open or
	// ended; or, the report awaiting its request, the copy taken has it
	// CLOSED with no result or accepted by a close not ours
	// (noteClosedNotOurs).
	RequestContradicted = "contradicted"
)

// intakeRefund is IntakeRefund, saying what it did besides (outcome).
func (s *Store) intakeRefund(ctx context.Context, in dict.Refund) (out Report, changed bool, outcome string, err error) {
	id, requestID, err := requestIDs(in)
	if err != nil {
		return Report{}, false, "", err
	}
	// keep records the request in by its own id, for on-call, its report
	// cur unchanged (keepRequest); a first record or a move is the outcome
	// RequestUnanswered, our close recorded from it counted after the
	// commit (closedOurs).
	var closedOurs bool
	keep := func(tx pgx.Tx, cur Report, why string) (Report, bool, error) {
		moved, ours, err := keepRequest(ctx, tx, in, requestID, cur.ID, why)
		if err != nil {
			return Report{}, false, err
		}
		if moved {
			outcome, closedOurs = RequestUnanswered, ours
		}
		return cur, false, nil
	}
	out, changed, err = s.decide(ctx, id, -1, func(tx pgx.Tx, cur Report) (Report, bool, error) {
		outcome, closedOurs = "", false
		now, err := s.now(ctx, tx)
		if err != nil {
			return Report{}, false, err
		}
		if err := requestFits(cur, in); err != nil {
			return Report{}, false, err
		}
		next := cur
		switch {
		case cur.RefundRequestID != nil && *cur.RefundRequestID == requestID:
			// The report's own request: its status, never its amount, and
			// only forwards (notices come again and in any order: an old
			// OPEN copy never opens it again).
			if !requestMoves(deref(cur.RefundRequestState), in) {
				out, changed, contradicted, err := closedResultNoticed(ctx, tx, cur, in)
				if contradicted {
					outcome = RequestContradicted
				}
				return out, changed, err
			}
			next.RefundRequestState, next.RefundRequestModifiedAt = ptr(string(in.Status)), ptr(in.LastModified)
			next.RefundRequestDICTResult, next.RefundRequestDICTReason = refundResultOf(in), refundReasonOf(in)
			if noteClosedNotOurs(&next) {
				outcome = RequestContradicted
			}
			return save(ctx, tx, cur, next)
		case takesRequest(cur, in, now) || (in.Status == dict.RefundOpen && reopenable(cur, now)):
			state, modified, kept, err := keptCopy(ctx, tx, requestID, cur.ID, in)
			if err != nil {
				return Report{}, false, err
			}
			if kept && state != string(dict.RefundOpen) {
				// Kept on its own before its report could take it (not
				// ours yet), and cancelled or closed at the DICT since: it
				// follows the DICT's word where it is kept, never taken,
				// nothing returned on it.
				return keep(tx, cur, "report_ended")
			}
			switch {
			case !takesRequest(cur, in, now):
				next.Status, next.EndCause, outcome = StatusAwaitingRequest, nil, RequestReopened
			case cur.Status == StatusAwaitingCredit:
				// Its cancelled request had nothing returned: the next one
				// is returned from the start, as a first one is.
				next.Status = StatusAwaitingRequest
			}
			if err := keepReplaced(ctx, tx, cur); err != nil {
				return Report{}, false, err
			}
			next.RefundRequestState, next.RefundRequestModifiedAt = &state, &modified
		case cur.Status == StatusEnded || cur.Status == StatusNotOurs:
			return keep(tx, cur, "report_ended")
		default:
			// Another request of a report that answers one (open, or
			// answered already): never written over the first, whose
			// returns would count against its amount; kept by its own id,
			// on-call's, nothing the DICT sent lost.
			return keep(tx, cur, "another_request")
		}
		return take(ctx, tx, cur, next, in, requestID, &outcome)
	})
	switch {
	case err != nil:
	case outcome == RequestContradicted:
		contradictionsTotal.WithLabelValues(reportState(out)).Inc()
	case outcome != "":
		lateRequestsTotal.WithLabelValues(outcome).Inc()
	}
	if err == nil && closedOurs {
		keptClosedTotal.WithLabelValues(keptRejected).Inc()
	}
	return out, changed, outcome, err
}

// take records the request in (its id requestID) as the one the locked
// report cur answers, as next. Its result and reason are this copy's, and
// the close marked sent for the request before is not its own: Save clears
// that mark (med.sql), which the run reads as null (closedCopy,
// closedByTheDICT). Taken CLOSED not as ours, it is noted so
// (noteClosedNotOurs; outcome RequestContradicted).
func take(ctx context.Context, tx pgx.Tx, cur, next Report, in dict.Refund, requestID uuid.UUID, outcome *string) (Report, bool, error) {
	next.RefundRequestID, next.RefundRequestCents = &requestID, ptr(int64(in.RefundAmount))
	next.RefundRequestDICTResult, next.RefundRequestDICTReason = refundResultOf(in), refundReasonOf(in)
	sent := next.RefundCloseSentAt
	next.RefundCloseSentAt = nil // as Save clears it
	if noteClosedNotOurs(&next) {
		*outcome = RequestContradicted
	}
	next.RefundCloseSentAt = sent
	// Kept on its own before (before this report could take it): the
	// report answers it now, it is on-call's no longer.
	if _, err := tx.Exec(ctx, medSQL.Taken, requestID, cur.ID); err != nil {
		return Report{}, false, fmt.Errorf("refund request %s taken by report %s: %w", requestID, cur.ID, err)
	}
	return save(ctx, tx, cur, next)
}

// noteClosedNotOurs notes dict_not_as_ours on next, a report awaiting its
// request, when the copy just taken has its own request CLOSED with no
// result or accepted by a close not ours (closedNotOurs; none of ours
// marked sent, which CloseRefund reads back): the run only waits for its
// 72 hours there, then stops (ExpireRequest), so it is seen at once, not up
// to 72 hours later (review of issue 37, LOW-1). It changes no step: the
// note is the alert's (pix_med_dict_problems). noted says it noted it.
func noteClosedNotOurs(next *Report) (noted bool) {
	if next.Status != StatusAwaitingRequest || next.DICTProblem != nil || next.RefundCloseSentAt != nil || !closedNotOurs(*next) {
		return false
	}
	next.DICTProblem = ptr(ProblemNotAsOurs + ": " + closedNotOursProblem(*next))
	return true
}

// keepReplaced keeps the request cur answered, cancelled by its requester
// with nothing returned, by its own id as a new one replaces it.
func keepReplaced(ctx context.Context, tx pgx.Tx, cur Report) error {
	if cur.RefundRequestID == nil {
		return nil
	}
	if _, err := tx.Exec(ctx, medSQL.Unanswered, *cur.RefundRequestID, cur.ID, *cur.RefundRequestCents,
		deref(cur.RefundRequestState), "replaced", cur.RefundRequestModifiedAt, false, false, "", ""); err != nil {
		return fmt.Errorf("keep refund request %s of report %s: %w", *cur.RefundRequestID, cur.ID, err)
	}
	return nil
}

// requestIDs are the report the refund request in is placed under
// (requestReport) and its own id; a request without them, or of no
// amount, is refused.
func requestIDs(in dict.Refund) (report, request uuid.UUID, err error) {
	if report, err = requestReport(in); err != nil {
		return uuid.Nil, uuid.Nil, err
	}
	if request, err = uuid.Parse(in.ID); err != nil {
		return uuid.Nil, uuid.Nil, pix.Invalid("id", "must be the DICT's uuid")
	}
	if in.RefundAmount <= 0 {
		return uuid.Nil, uuid.Nil, pix.Invalid("refund_amount", "must be positive")
	}
	return report, request, nil
}

// requestReport is the report the refund request in is placed under: the
// one its InfractionReportId names (it identifies the report of a fraud
// refund), which takes it as its own or keeps it (intakeRefund), never
// another report, whatever its PIX's other reports. The expiry's own
// listing decides a request of the report's PIX by the same placement
// (Activities.anothersRequest), as the lister's cover does.
func requestReport(in dict.Refund) (uuid.UUID, error) {
	id, err := uuid.Parse(in.InfractionReportID)
	if err != nil {
		return uuid.Nil, pix.Invalid("infraction_report_id", "must be the DICT's uuid")
	}
	return id, nil
}

// requestFits refuses for good (ErrReportMismatch) the refund request in
// under the report cur it names when they are of different PIX.
func requestFits(cur Report, in dict.Refund) error {
	if cur.EndToEndID != in.TransactionID {
		return fmt.Errorf("%w: report %s is of PIX %s, the refund request's %s", ErrReportMismatch, cur.ID, cur.EndToEndID, in.TransactionID)
	}
	return nil
}

// keepRequest records the refund request in (requestID) by its own id, for
// on-call, kept under the report reportID (why: why the report does not
// answer it); again, its status moves as requestMoves says (Unanswered):
// moved says it was recorded or moved. A move that records our close of a
// kept request (its answer lost, listed CLOSED before the run's retry)
// says so (ours): counted as the run's close would be, once, the run's
// KeptClosed then finding it recorded and counting nothing.
func keepRequest(ctx context.Context, tx pgx.Tx, in dict.Refund, requestID, reportID uuid.UUID, why string) (moved, ours bool, err error) {
	disagreed, cancelled := ourKeptClose(in, "report_disagreed"), ourKeptClose(in, "report_cancelled")
	err = tx.QueryRow(ctx, medSQL.Unanswered, requestID, reportID, int64(in.RefundAmount), string(in.Status), why, in.LastModified,
		disagreed, cancelled, string(dict.Rejected), string(dict.RejectionOther)).Scan(&ours)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, false, nil // nothing moved
	case err != nil:
		return false, false, fmt.Errorf("record refund request %s of report %s: %w", requestID, reportID, err)
	}
	return true, ours, nil
}

// keptCopy is the refund request requestID as the report reportID takes
// it (state, modified at the DICT): the copy in, or, when the request was
// kept on its own before (kept: its report could not take it then, e.g.
// not ours yet), the kept row's status moved by in as requestMoves says,
// the row locked (after the report's, the one order). A kept request
// cancelled at the DICT since stays CANCELLED whatever OPEN copy comes
// later: never taken, nothing returned on it.
func keptCopy(ctx context.Context, tx pgx.Tx, requestID, reportID uuid.UUID, in dict.Refund) (state string, modified time.Time, kept bool, err error) {
	var keptModified *time.Time
	err = tx.QueryRow(ctx, medSQL.Kept, requestID, reportID).Scan(&state, &keptModified)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return string(in.Status), in.LastModified, false, nil
	case err != nil:
		return "", time.Time{}, false, fmt.Errorf("refund request %s kept on its own: %w", requestID, err)
	case requestMoves(state, in):
		return string(in.Status), in.LastModified, true, nil
	case keptModified != nil && keptModified.After(in.LastModified):
		return state, *keptModified, true, nil
	}
	return state, in.LastModified, true, nil
}

// closedResultNoticed takes the result of a CLOSED copy in of the report
// cur's own request, CLOSED already (requestMoves: never out of CLOSED):
// our accepted close recorded at once behind a PSP (from our devolução)
// and the request CLOSED REJECTED at the DICT since (our operator through
// the PSP's channel). Dropped, nothing said it, and later credits were
// returned on a request the DICT holds rejected (review r19 MED-1).
// Taken, closedRejected stops the returns. contradicted says it noted
// dict_not_as_ours (notAsRecorded) on the report, as a read back does.
//
// A CLOSED request has one result, so two copies with different results
// are an anomaly, and LastModified does not order them safely (a notice
// delivered late, a PSP's clock: the webhook takes one up to
// MaxClockAhead ahead). Returning is irreversible and holding is not, so
// REJECTED sticks (review r23 MED-1): a REJECTED copy is taken whatever
// its time (after our accepted close's echo recorded first, an older
// REJECTED was dropped and the next credit returned), and an accepted copy
// never replaces a recorded REJECTED. Between two accepted results the
// later copy wins (laterThan, as newerReport orders two copies of a report
// at one status); a first result (none recorded: our close recorded from
// our devolução) is taken whatever its time. A result that differs from
// the one recorded, taken or not, and a first one against our recorded
// close (againstOurClose), are noted dict_not_as_ours, counted and logged
// (Doors.IntakeRefund): an operator's. A later copy, whatever its result,
// moves refund_request_modified_at forwards only, and one with the
// recorded result fills in the DICT's reason when none was recorded
// (review r23 MED-2: a REJECTED without reason, then REJECTED OTHER, was
// ended as our close: closedByTheDICT).
func closedResultNoticed(ctx context.Context, tx pgx.Tx, cur Report, in dict.Refund) (out Report, changed, contradicted bool, err error) {
	if deref(cur.RefundRequestState) != string(dict.RefundClosed) || in.Status != dict.RefundClosed || in.AnalysisResult == "" {
		return cur, false, false, nil
	}
	next := cur
	later := cur.RefundRequestModifiedAt == nil || laterThan(in.LastModified, *cur.RefundRequestModifiedAt)
	if later {
		next.RefundRequestModifiedAt = ptr(in.LastModified)
	}
	recorded := deref(cur.RefundRequestDICTResult)
	switch {
	case recorded == string(in.AnalysisResult):
		if cur.RefundRequestDICTReason == nil {
			next.RefundRequestDICTReason = refundReasonOf(in)
		}
	case recorded == "" || in.AnalysisResult == dict.Rejected || (recorded != string(dict.Rejected) && later):
		next.RefundRequestDICTResult, next.RefundRequestDICTReason = refundResultOf(in), refundReasonOf(in)
	}
	noted := false
	switch {
	case recorded != string(in.AnalysisResult) && (recorded != "" || againstOurClose(cur, in)):
		next.DICTProblem, noted = ptr(notAsRecorded(cur, in)), true
	case recorded == "":
		next.DICTProblem, noted = resultTaken(next)
	}
	if !later && deref(next.RefundRequestDICTResult) == recorded && deref(next.RefundRequestDICTReason) == deref(cur.RefundRequestDICTReason) &&
		deref(next.DICTProblem) == deref(cur.DICTProblem) {
		return cur, false, false, nil
	}
	out, changed, err = save(ctx, tx, cur, next)
	return out, changed, noted && deref(next.DICTProblem) != deref(cur.DICTProblem), err
}

// resultTaken is the dict_problem of next, whose request's first result
// was just taken, and whether it notes one anew: a note or stop that says
// the request is CLOSED without a result (closedUnknownProblem, whatever
// its prefix: a cancel's) is stale once it has one, not left until the
// run's next stop rewrites it (review r6 LOW-3). Accepted by a close not
// ours (closedNotOurs), it says so in its place, as a copy taken accepted
// is noted (noteClosedNotOurs); otherwise (REJECTED: the run closes and
// ends the report; our close recorded) it is cleared. The intake wakes the
// run, which decides again on the result (a stop noted at an older
// generation is not waited on). Any other problem is kept.
func resultTaken(next Report) (*string, bool) {
	problem := deref(next.DICTProblem)
	if !strings.Contains(problem, closedUnknownProblem) {
		return next.DICTProblem, false
	}
	if closedNotOurs(next) {
		return ptr(strings.Replace(problem, closedUnknownProblem, closedNotOursProblem(next), 1)), true
	}
	return nil, false
}

// notAsRecorded is the dict_not_as_ours stop of the CLOSED copy in of
// cur's own request: its result, the one recorded and our close's rtrId
// first, the copy as closingOf says it last, so that the DICT's details (up
// to 2,000 characters) are all boundedProblem cuts (review r23 LOW-8: our
// rtrId was cut).
func notAsRecorded(cur Report, in dict.Refund) string {
	ours := "none recorded"
	if cur.RefundClosedAt != nil {
		ours = fmt.Sprintf("rtrId %q", deref(cur.RefundClosedRtrID))
	}
	return boundedProblem(fmt.Sprintf("%s: the DICT has the refund request CLOSED %s, not as recorded (result %q, our close: %s): "+
		"an operator's; its copy: CLOSED (%s)", ProblemNotAsOurs, in.AnalysisResult, deref(cur.RefundRequestDICTResult), ours, closingOf(in)))
}

// againstOurClose says whether the result of the CLOSED copy in of cur's
// own request is not our recorded close's: REJECTED after we answered it
// with our rtrId, or accepted after our REJECTED (no rtrId).
func againstOurClose(cur Report, in dict.Refund) bool {
	ours := cur.RefundClosedRtrID == nil
	return cur.RefundClosedAt != nil && ours != (in.AnalysisResult == dict.Rejected)
}

// refundResultOf is the request's AnalysisResult as the DICT's copy says
// it (nil: none).
func refundResultOf(in dict.Refund) *string {
	if in.AnalysisResult == "" {
		return nil
	}
	return ptr(string(in.AnalysisResult))
}

// refundReasonOf is the request's RefundRejectionReason as the DICT's copy
// of it REJECTED says it (nil: none, another result, or one the
// specification does not have).
func refundReasonOf(in dict.Refund) *string {
	if in.AnalysisResult != dict.Rejected || !in.RefundRejectionReason.Valid() {
		return nil
	}
	return ptr(string(in.RefundRejectionReason))
}

// requestMoves says whether the copy in of a refund request moves the
// status recorded (state): from OPEN to another status only, never out of
// CLOSED or CANCELLED (final at the DICT). By the DICT's order of the
// statuses, not by LastModified: a request is OPEN, then closed or
// cancelled once, so a copy of another status than an OPEN recorded is
// later, and an OPEN copy is never later than a final one, whatever their
// times say (a LastModified recorded ahead of the real one, the DICT's
// clock or a forged notice, would fence the requester's cancel out). The
// same rule as Unanswered's (med.sql) for the requests a report does not
// answer.
func requestMoves(state string, in dict.Refund) bool {
	return state != string(in.Status) && state != string(dict.RefundClosed) && state != string(dict.RefundCancelled)
}

// takesRequest says whether the report cur takes a refund request as the
// one it answers: open and not past waiting for it (a request can reach us
// before our close is recorded: the close's answer lost and retried, the
// DICT's notice first; Return acts only once the report awaits it), none
// taken yet but one its requester cancelled before anything was returned;
// or awaiting credit for a request cancelled since with nothing returned
// on it, when in is OPEN (docs/med.md: the next request replaces it; a
// copy cancelled already leaves the report to end on the cancel), the 90
// days not over and its return not refused for good (now: the store's
// clock).
func takesRequest(cur Report, in dict.Refund, now time.Time) bool {
	switch cur.Status {
	case StatusReceived, StatusHeld, StatusAcknowledged, StatusAnalysed, StatusAwaitingRequest:
	case StatusAwaitingCredit:
		if in.Status != dict.RefundOpen || !RequestCancelled(cur) || cur.ReturnRefused != nil ||
			cur.ReturnUntil == nil || !now.Before(*cur.ReturnUntil) {
			return false
		}
	default:
		return false
	}
	return nothingReturned(cur) && (cur.RefundRequestID == nil || RequestCancelled(cur))
}

// reopenable says whether an ended report takes again a refund request
// that came after it ended: agreed and closed, released with nothing
// returned and no request taken (its 72 hours passed) or only one its
// requester cancelled, its PIX still within the 90 days of its returns.
func reopenable(cur Report, now time.Time) bool {
	return cur.Status == StatusEnded && deref(cur.EndCause) == EndReleased && deref(cur.AnalysisResult) == string(dict.Agreed) &&
		cur.ClosedAt != nil && (cur.RefundRequestID == nil || RequestCancelled(cur)) && nothingReturned(cur) &&
		cur.ReturnUntil != nil && now.Before(*cur.ReturnUntil)
}

// nothingReturned says whether no devolução was ever made for cur.
func nothingReturned(cur Report) bool {
	return cur.ReturnedCents == 0 && cur.Returns == 0 && cur.RefundID == nil
}

// decide runs fn on the report id locked, in one transaction, when it is
// still at generation gen (-1: whatever its generation); at another, it
// returns the report as it is, unchanged (a late or retried actor: the
// fence). After a change it wakes the report's dispatcher and the outbox.
func (s *Store) decide(ctx context.Context, id uuid.UUID, gen int64, fn func(tx pgx.Tx, cur Report) (Report, bool, error)) (out Report, changed bool, err error) {
	return s.decideAfter(ctx, id, gen, nil, fn)
}

// decideAfter is decide with first (when not nil) run in its transaction
// before the report's lock: the locks that come before the report's in
// the one order (a quarantined copy's row, NoteProblemOn: quarantine.sql).
func (s *Store) decideAfter(ctx context.Context, id uuid.UUID, gen int64, first func(tx pgx.Tx) error,
	fn func(tx pgx.Tx, cur Report) (Report, bool, error)) (out Report, changed bool, err error) {
	// A hold of the report released or shrunk fills the account's other
	// holds that lack (another report's): told after the commit
	// (db.Store.InTx), after the wakes.
	err = s.store.InTx(ctx, func(tx pgx.Tx) error {
		if first != nil {
			if err := first(tx); err != nil {
				return err
			}
		}
		cur, err := one(tx.Query(ctx, medSQL.Lock, id))
		if err != nil {
			return err
		}
		if gen >= 0 && cur.Gen != gen {
			out, changed = cur, false
			return nil
		}
		out, changed, err = fn(tx, cur)
		if err == nil {
			// By the row as decided, in its transaction: its request
			// CLOSED REJECTED, its hold fills no more; a hold made without
			// a fill-until gets one (stopFilling).
			err = s.stopFilling(ctx, tx, out)
		}
		if err == nil && changed {
			db.WakeOnCommit(tx, DueChannel, db.OutboxChannel)
		}
		return err
	})
	if err != nil {
		return Report{}, false, db.Classify(err)
	}
	return out, changed, nil
}

// save writes next, decided on cur (locked), fenced by cur's generation.
func save(ctx context.Context, tx pgx.Tx, cur, next Report) (Report, bool, error) {
	n := next
	out, err := one(tx.Query(ctx, medSQL.Save, cur.ID, cur.Gen, n.ReportDetails, n.DICTStatus, n.DICTModifiedAt, n.Status,
		n.EndCause, n.AnalysisResult, n.AnalysisDetails, n.AnalysedBy, n.AnalysedAt, n.AcknowledgedAt, n.ClosedAt, n.HoldID,
		n.Holds, n.HeldCents, n.RefundRequestID, n.RefundRequestCents, n.RefundRequestState, n.RefundClosedAt,
		n.RefundClosedRtrID, n.RefundID, n.ReturnedCents, n.Returns, n.FirstRtrID, n.RequestDueAt, n.DICTProblem, n.ReturnRefused,
		n.RefundRequestModifiedAt, n.DICTAnalysisResult, n.RefundRequestDICTResult, n.RefundRequestDICTReason, n.ReleasedBy, n.ReleaseDetails))
	if err != nil {
		// Under the row's lock the generation can't have moved: no row is
		// a fault, not a decision.
		return Report{}, false, fmt.Errorf("save infraction report %s (gen %d, %s -> %s): %w", cur.ID, cur.Gen, cur.Status, n.Status, err)
	}
	if out.Status != cur.Status {
		if err := writeEvent(ctx, tx, out); err != nil {
			return Report{}, false, err
		}
	}
	return out, true, nil
}

// laterThan says whether the DICT's modification time t is later than
// the one recorded, as PostgreSQL keeps it (microseconds).
func laterThan(t, recorded time.Time) bool { return t.Truncate(time.Microsecond).After(recorded) }

// OpenCounts are the gauges' counts (Store.Open).
type OpenCounts struct {
	Open, AnalysisDueSoon, HeldCents, DICTProblems, Unanswered int64
	// PSPActionsAwaited are the open reports that await a step at the PSP
	// (ProblemPSPActionAwaited), not in DICTProblems; PSPActionAwaitedFor
	// the time since the oldest of them last changed (0: none).
	PSPActionsAwaited   int64
	PSPActionAwaitedFor time.Duration
}

// Open reads the gauges: the open reports, those not closed at the DICT
// (awaiting their analysis, or analysed and their close not done) within
// before of its 7 days (or past them), the centavos held, those
// stopped at the DICT, the refund requests unanswered and OPEN at the DICT,
// and those that await a step at the PSP.
func (s *Store) Open(ctx context.Context, before time.Duration) (OpenCounts, error) {
	var c OpenCounts
	var awaitedFor float64
	err := s.store.Pool().QueryRow(ctx, medSQL.Open, before, ProblemPSPActionAwaited+":").Scan(&c.Open, &c.AnalysisDueSoon, &c.HeldCents,
		&c.DICTProblems, &c.Unanswered, &c.PSPActionsAwaited, &awaitedFor)
	c.PSPActionAwaitedFor = time.Duration(awaitedFor * float64(time.Second))
	return c, db.Classify(err)
}

func ptr[T any](v T) *T { return &v }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Quarantined is an item of the DICT's lists the doors refused for good
// (the lister's): its kind (QuarantinedReport, QuarantinedRefund), its DICT
// id, its LastModified and the refusal's code, never the DICT's texts.
type Quarantined struct {
	Kind, ID     string
	LastModified time.Time
	Reason       string
}

// The kinds of Quarantined.
const (
	QuarantinedReport = "report"
	QuarantinedRefund = "refund"
)

// maxQuarantinedID bounds the id a quarantined item is recorded with (an
// item refused may carry anything as its id): the DICT's are uuids.
const maxQuarantinedID = 64

// Quarantine records q (pix_med_quarantine); first is true the first time
// this item, at this LastModified, is recorded.
func (s *Store) Quarantine(ctx context.Context, q Quarantined) (first bool, err error) {
	id := quarantinedID(q.ID)
	err = s.store.Pool().QueryRow(ctx, medSQL.Quarantine, q.Kind, id, q.LastModified, q.Reason).Scan(&first)
	if err != nil {
		return false, db.Classify(fmt.Errorf("quarantine %s %s: %w", q.Kind, id, err))
	}
	return first, nil
}

// ourKeptClose says whether the DICT's copy in is CLOSED as the run closes
// a request kept with why (KeptClosing): the lister's copy of our close,
// whose answer was lost, records it as ours (medSQL.Unanswered).
func ourKeptClose(in dict.Refund, why string) bool {
	c := KeptClosing(KeptRequest{Why: why})
	return in.Status == dict.RefundClosed && in.AnalysisResult == c.Result && in.RefundRejectionReason == c.RejectionReason &&
		in.AnalysisDetails == dict.NormalizeDetails(c.Details)
}
