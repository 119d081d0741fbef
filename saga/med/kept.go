package med

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/rowscan"
)

// ErrRequestNotFound: no refund request kept on its own with the id.
var ErrRequestNotFound = errors.New("refund request not kept")

// KeptRequest is a refund request the saga keeps on its own, by its id
// (pix_med_refund_requests; IntakeRefund, keepUnanswered): one no report
// answers, on-call's while OPEN at the DICT. It holds no free text of the
// DICT's: what an operator sees of it is all it has.
type KeptRequest struct {
	ID          uuid.UUID `db:"id" json:"id"`
	ReportID    uuid.UUID `db:"report_id" json:"report_id"`
	AmountCents int64     `db:"amount_cents" json:"amount_cents"`
	DICTStatus  string    `db:"dict_status" json:"dict_status"`
	// Why its report does not answer it: report_ended, another_request,
	// replaced, report_disagreed, report_cancelled.
	Why            string     `db:"why" json:"why"`
	DICTModifiedAt *time.Time `db:"dict_modified_at" json:"dict_modified_at"`
	CreatedAt      time.Time  `db:"created_at" json:"created_at"`
	UpdatedAt      time.Time  `db:"updated_at" json:"updated_at"`
	// Our close of it at the DICT (keptclose.go: its report ended
	// DISAGREED or cancelled, its run closes it REJECTED): marked before it
	// is sent (CloseSentAt, read back before it is sent again), recorded
	// once answered (ClosedAt, CloseResult, RejectionReason), or why it
	// could not be made (CloseProblem: a code, dict_refused, ...; never
	// the DICT's text), the request then still OPEN and paging.
	CloseSentAt     *time.Time `db:"close_sent_at" json:"-"`
	ClosedAt        *time.Time `db:"closed_at" json:"closed_at"`
	CloseResult     *string    `db:"close_result" json:"close_result"`
	RejectionReason *string    `db:"rejection_reason" json:"rejection_reason"`
	CloseProblem    *string    `db:"close_problem" json:"close_problem"`
}

// KeptKey is the sort key of the list of kept requests: by creation, then
// id. A page's cursor holds its last row's.
type KeptKey struct {
	CreatedAt time.Time `json:"created_at"`
	ID        uuid.UUID `json:"id"`
}

// Valid says whether k is a key of the list.
func (k KeptKey) Valid() bool { return !k.CreatedAt.IsZero() && k.ID != uuid.Nil }

// KeptKeyOf is the sort key of q in the list.
func KeptKeyOf(q KeptRequest) KeptKey { return KeptKey{CreatedAt: q.CreatedAt, ID: q.ID} }

// KeptRequests returns the requests kept on their own, oldest first, at
// most limit, those after the key after (nil: from the first).
func (s *Store) KeptRequests(ctx context.Context, after *KeptKey, limit int) ([]KeptRequest, error) {
	var at *time.Time
	var id *uuid.UUID
	if after != nil {
		at, id = &after.CreatedAt, &after.ID
	}
	rs, err := s.store.Pool().Query(ctx, medSQL.KeptList, at, id, limit)
	if err != nil {
		return nil, db.Classify(fmt.Errorf("list kept refund requests: %w", err))
	}
	out, err := pgx.CollectRows(rs, rowscan.ByName[KeptRequest])
	if err != nil {
		return nil, db.Classify(fmt.Errorf("list kept refund requests: %w", err))
	}
	return out, nil
}

// KeptRequest returns one request kept on its own; ErrRequestNotFound
// when none has the id (a request its report answers is the report's:
// GET /pix/med/reports/{id}).
func (s *Store) KeptRequest(ctx context.Context, id uuid.UUID) (KeptRequest, error) {
	rs, err := s.store.Pool().Query(ctx, medSQL.KeptGet, id)
	if err != nil {
		return KeptRequest{}, db.Classify(fmt.Errorf("get kept refund request: %w", err))
	}
	out, err := pgx.CollectExactlyOneRow(rs, rowscan.ByName[KeptRequest])
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return KeptRequest{}, ErrRequestNotFound
	case err != nil:
		return KeptRequest{}, db.Classify(fmt.Errorf("get kept refund request: %w", err))
	}
	return out, nil
}

// keptRow runs one statement of the kept requests' that returns the row:
// ok is false when none did (it moved: the fence).
func (s *Store) keptRow(ctx context.Context, what, query string, args ...any) (KeptRequest, bool, error) {
	rs, err := s.store.Pool().Query(ctx, query, args...)
	if err != nil {
		return KeptRequest{}, false, db.Classify(fmt.Errorf("%s: %w", what, err))
	}
	out, err := pgx.CollectExactlyOneRow(rs, rowscan.ByName[KeptRequest])
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return KeptRequest{}, false, nil
	case err != nil:
		return KeptRequest{}, false, db.Classify(fmt.Errorf("%s: %w", what, err))
	}
	return out, true, nil
}

// KeptToClose returns the refund requests of the report id kept on their
// own because it ended without returning them (report_disagreed,
// report_cancelled) and OPEN at the DICT: what its run closes REJECTED as
// it ends (Activities.CloseKeptRequests).
func (s *Store) KeptToClose(ctx context.Context, id uuid.UUID) ([]KeptRequest, error) {
	rs, err := s.store.Pool().Query(ctx, medSQL.KeptToClose, id)
	if err != nil {
		return nil, db.Classify(fmt.Errorf("kept refund requests of report %s to close: %w", id, err))
	}
	out, err := pgx.CollectRows(rs, rowscan.ByName[KeptRequest])
	if err != nil {
		return nil, db.Classify(fmt.Errorf("kept refund requests of report %s to close: %w", id, err))
	}
	return out, nil
}

// MarkKeptSent marks the close of the kept request q as about to be sent
// (read back before it is sent again, whatever the attempt or the run
// that finds it). ok is false when q moved since it was read (CANCELLED or
// CLOSED at the DICT, closed by us): nothing is sent.
func (s *Store) MarkKeptSent(ctx context.Context, q KeptRequest) (KeptRequest, bool, error) {
	return s.keptRow(ctx, "mark the close of kept refund request "+q.ID.String(), medSQL.KeptMarkSent, q.ID)
}

// KeptClosed records our close of the kept request q as closing says,
// answered by the DICT (or read back so), modified at the DICT at
// modified (zero: not said). Once: ok is false when closed by us already,
// or cancelled at the DICT (a late actor changes nothing).
func (s *Store) KeptClosed(ctx context.Context, q KeptRequest, closing dict.RefundClosing, modified time.Time) (KeptRequest, bool, error) {
	var at *time.Time
	if !modified.IsZero() {
		at = &modified
	}
	return s.keptRow(ctx, "record the close of kept refund request "+q.ID.String(), medSQL.KeptClosed, q.ID,
		string(closing.Result), string(closing.RejectionReason), at)
}

// KeptSeen records the kept request q as the DICT's copy read back says it
// moved otherwise than by our close (CANCELLED by its requester, or
// CLOSED another way: problem ProblemNotAsOurs), out of OPEN only.
func (s *Store) KeptSeen(ctx context.Context, q KeptRequest, seen dict.Refund, problem *string) (KeptRequest, bool, error) {
	return s.keptRow(ctx, "record kept refund request "+q.ID.String()+" as read back", medSQL.KeptSeen, q.ID,
		string(seen.Status), seen.LastModified, problem)
}

// KeptProblem records why the close of the kept request q could not be
// made (code: ProblemRefused, ...), while it is OPEN and not closed by us.
func (s *Store) KeptProblem(ctx context.Context, q KeptRequest, code string) (KeptRequest, bool, error) {
	return s.keptRow(ctx, "record the close problem of kept refund request "+q.ID.String(), medSQL.KeptProblem, q.ID, code)
}
