package retention

import (
	"context"
	"embed"
	"fmt"
	"time"

	"github.com/pixbank/pix/db"
)

//go:embed maintenance.sql
var queryFiles embed.FS

// retentionSQL holds the statements of maintenance.sql.
var retentionSQL struct {
	DeleteDoneInboxRows, DeletePublishedEvents, DeleteExpiredKeys string
}

func init() { db.BindQueries(queryFiles, "maintenance.sql", &retentionSQL) }

// Store is the retention's store: the core's tables it deletes from, by
// its own statements.
type Store struct{ *db.Store }

// NewStore returns the retention's store over s.
func NewStore(s *db.Store) *Store { return &Store{s} }

// deleteBatch runs one batched delete of the retention (a statement of
// maintenance.sql, which deletes up to a limit of rows it locks with SKIP
// LOCKED, in a transaction of its own) and returns how many rows it deleted.
// what names the rows in errors. The retention's activities call it until a
// batch comes back short.
func (s *Store) deleteBatch(ctx context.Context, statement, what string, args ...any) (int64, error) {
	tag, err := s.Pool().Exec(ctx, statement, args...)
	if err != nil {
		return 0, db.Classify(fmt.Errorf("delete %s: %w", what, err))
	}
	return tag.RowsAffected(), nil
}

// DeleteDoneInboxRows deletes up to limit inbox rows that became done longer
// than olderThan ago, and returns how many. Their credits stay: a
// redelivery after that is still a duplicate (db's creditedBefore). Failed
// and pending rows are never deleted here.
func (s *Store) DeleteDoneInboxRows(ctx context.Context, olderThan time.Duration, limit int) (int64, error) {
	return s.deleteBatch(ctx, retentionSQL.DeleteDoneInboxRows, "done inbox rows", olderThan, limit)
}

// DeletePublishedEvents deletes up to limit events published before
// olderThan ago and returns how many.
func (s *Store) DeletePublishedEvents(ctx context.Context, olderThan time.Duration, limit int) (int64, error) {
	return s.deleteBatch(ctx, retentionSQL.DeletePublishedEvents, "published events", olderThan, limit)
}

// DeleteExpiredKeys deletes up to limit expired keys and returns how many.
func (s *Store) DeleteExpiredKeys(ctx context.Context, limit int) (int64, error) {
	return s.deleteBatch(ctx, retentionSQL.DeleteExpiredKeys, "expired idempotency keys", limit)
}
