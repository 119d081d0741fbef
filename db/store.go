package db

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Store is the repository of the incoming-PIX service.
type Store struct {
	pool  *pgxpool.Pool
	waker *waker
	// catchUpPSP is the PSP the catch-up lists (SetCatchUpPSP).
	catchUpPSP string
	// fillsHooks are told of the holds a committed transaction filled
	// (OnHoldsFilled, HoldsFilled).
	fillsHooks *fillsHooks
}

// NewStore returns a Store over pool.
func NewStore(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool, waker: newWaker(), fillsHooks: &fillsHooks{}}
}

// Pool exposes the pool for health checks and test helpers.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Ping checks that PostgreSQL answers.
func (s *Store) Ping(ctx context.Context) error {
	return Classify(s.pool.Ping(ctx))
}

// Querier is what the pool and a transaction have in common: a statement
// of one row.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}
