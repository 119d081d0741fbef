package db

import (
	"context"
	"fmt"
	"time"
)

// maintenanceSQL holds the statements of queries/maintenance.sql: the
// retention's batched deletes and the reconciliation's check of the inbox's
// live edge.
var maintenanceSQL struct {
	DeleteDoneInboxRows, DeletePublishedEvents, DeleteExpiredKeys, CreditWithoutDone string
}

func init() { bindQueries("maintenance.sql", &maintenanceSQL) }

// deleteBatch runs one batched delete of the retention (a statement of
// maintenance.sql, which deletes up to a limit of rows it locks with SKIP
// LOCKED, in a transaction of its own) and returns how many rows it deleted.
// what names the rows in errors. The retention's activities call it until a
// batch comes back short.
func (s *Store) deleteBatch(ctx context.Context, statement, what string, args ...any) (int64, error) {
	tag, err := s.pool.Exec(ctx, statement, args...)
	if err != nil {
		return 0, Classify(fmt.Errorf("delete %s: %w", what, err))
	}
	return tag.RowsAffected(), nil
}

// DeleteDoneInboxRows deletes up to limit inbox rows that became done longer
// than olderThan ago, and returns how many. Their credits stay: a
// redelivery after that is still a duplicate (creditedBefore). Failed and
// pending rows are never deleted here.
func (s *Store) DeleteDoneInboxRows(ctx context.Context, olderThan time.Duration, limit int) (int64, error) {
	return s.deleteBatch(ctx, maintenanceSQL.DeleteDoneInboxRows, "done inbox rows", olderThan, limit)
}

// DeletePublishedEvents deletes up to limit events published before
// olderThan ago and returns how many.
func (s *Store) DeletePublishedEvents(ctx context.Context, olderThan time.Duration, limit int) (int64, error) {
	return s.deleteBatch(ctx, maintenanceSQL.DeletePublishedEvents, "published events", olderThan, limit)
}

// DeleteExpiredKeys deletes up to limit expired keys and returns how many.
func (s *Store) DeleteExpiredKeys(ctx context.Context, limit int) (int64, error) {
	return s.deleteBatch(ctx, maintenanceSQL.DeleteExpiredKeys, "expired idempotency keys", limit)
}
