package db

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/internal/pix"
)

// FailedKey is the sort key of the list of failed PIX (FailedCredits):
// newest first by the time they failed, then end_to_end_id. A page's
// cursor holds its last row's.
type FailedKey struct {
	FailedAt   time.Time `json:"failed_at"`
	EndToEndID string    `json:"end_to_end_id"`
}

// Valid says whether k is a key of the list: a failed PIX's.
func (k FailedKey) Valid() bool { return !k.FailedAt.IsZero() && pix.ValidEndToEndID(k.EndToEndID) }

// FailedKeyOf is the sort key of a failed PIX of the list (its
// processed_at is when it failed).
func FailedKeyOf(c pix.Credit) FailedKey {
	k := FailedKey{EndToEndID: c.EndToEndID}
	if c.ProcessedAt != nil {
		k.FailedAt = c.ProcessedAt.UTC()
	}
	return k
}

// FailedCredits lists up to limit failed PIX, newest first, of one account
// ("" for all), those after the key after in that order (nil: from the
// newest): a page of the list, read from an index whatever its depth.
func (s *Store) FailedCredits(ctx context.Context, accountID string, after *FailedKey, limit int) ([]pix.Credit, error) {
	var at *time.Time
	var id *string
	if after != nil {
		at, id = &after.FailedAt, &after.EndToEndID
	}
	var rows pgx.Rows
	var err error
	if accountID == "" {
		rows, err = s.pool.Query(ctx, creditSQL.FailedCredits, at, id, limit)
	} else {
		rows, err = s.pool.Query(ctx, creditSQL.FailedCreditsOfAccount, accountID, at, id, limit)
	}
	if err != nil {
		return nil, Classify(fmt.Errorf("list failed credits: %w", err))
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (pix.Credit, error) {
		var c pix.Credit
		err := row.Scan(&c.EndToEndID, &c.Source, &c.AccountID, &c.PixKey, &c.TxID, &c.AmountCents, &c.Status, &c.Attempts,
			&c.LastError, &c.Deliveries, &c.ReceivedAt, &c.ProcessedAt, &c.CreditedAt)
		return c, err
	})
	if err != nil {
		return nil, Classify(fmt.Errorf("list failed credits: %w", err))
	}
	if out == nil {
		out = []pix.Credit{}
	}
	return out, nil
}

// Redriven is one PIX put back to pending, with the attempts it has had.
type Redriven struct {
	EndToEndID string
	Attempts   int
}

// RedriveFailed puts every failed PIX of one account back to pending in a
// new drive, due at once, and returns them in end_to_end_id byte order.
func (s *Store) RedriveFailed(ctx context.Context, accountID string) ([]Redriven, error) {
	rows, err := s.redrive(ctx, nil, accountID)
	if err != nil {
		return nil, err
	}
	out := []Redriven{} // as pgx.CollectRows answers: empty, not nil
	for _, r := range rows {
		if r.redriven {
			out = append(out, r.Redriven)
		}
	}
	return out, nil
}
