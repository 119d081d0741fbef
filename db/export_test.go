package db

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// InTxForTest runs fn as the store's transactions run, with attempts tries
// on a deadlock or serialization failure.
func InTxForTest(ctx context.Context, s *Store, attempts int, fn func(tx pgx.Tx) error) error {
	return inTxAttempts(ctx, s.pool, attempts, fn)
}

// PendingWakes empties and returns the channels the store's commits asked
// to wake since the last call (its waker not running).
func PendingWakes(s *Store) []string { return s.waker.take() }
