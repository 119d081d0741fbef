package med

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/db"
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
	out, err := pgx.CollectRows(rs, pgx.RowToStructByName[KeptRequest])
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
	out, err := pgx.CollectExactlyOneRow(rs, pgx.RowToStructByName[KeptRequest])
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return KeptRequest{}, ErrRequestNotFound
	case err != nil:
		return KeptRequest{}, db.Classify(fmt.Errorf("get kept refund request: %w", err))
	}
	return out, nil
}
